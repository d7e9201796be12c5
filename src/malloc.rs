//! How glibc's allocator is set up for the work of each command: the
//! process's policy, so it lives with `main`, not in the library.

/// glibc gives threads their own heaps ("arenas"), up to eight per core,
/// and keeps what a thread frees in its own arena for that arena's next
/// allocations. Work that holds large buffers in turn on each thread
/// (`repack --bases=simm` keeps one path's versions per worker) then
/// leaves freed memory stranded in many arenas: jq's repack peaked at 279
/// MB of RSS for 119 MB of live heap; with one arena per core, 184 MB, at
/// the same speed. `MALLOC_ARENA_MAX` in the environment still decides.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn limit_arenas() {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return;
    }
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
    let arenas = i32::try_from(cores).unwrap_or(i32::MAX);
    // SAFETY: mallopt only sets an allocator parameter, and this runs
    // before the program starts any thread.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, arenas);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn limit_arenas() {}

/// A warm `renames` after a 10,000-file move lasts about 50 ms, and a
/// fifth of it went to page faults: glibc takes its heap from the kernel
/// 128 KiB at a time, hands large blocks back on free, and each page of
/// the tens of megabytes the run touches faults in on its own. So for such
/// runs the main heap grows 64 MiB at a time, keeps what is freed, serves
/// blocks up to 256 MiB itself, and its first 96 MiB are marked for
/// transparent huge pages (2 MiB a fault where the kernel allows them:
/// `madvise` mode, the usual default, needs the mark). glibc has no call
/// for that mark (its `glibc.malloc.hugetlb` tunable is read from the
/// environment at start), so the heap is grown once by a block, the
/// range marked, and the block freed for malloc to hand out again.
///
/// Measured (docs/performance.md): warm renames of a 10,000-file move
/// 57.6 ms before, 45.4 ms after; cold 227 ms, 215 ms. Not for `repack`,
/// whose buffers come and go per worker: there it cost time and up to 40%
/// more peak RSS. glibc's own settings in the environment
/// (`GLIBC_TUNABLES` with `glibc.malloc.` ones, or the older
/// `MALLOC_*_` variables) decide instead, and a glibc that refuses a
/// threshold this high (older ones cap it at 32 MiB) is left as it is:
/// the other two settings alone would freeze its threshold at 128 KiB.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn prepare_for_short_run() {
    const PAD: i32 = 64 << 20;
    const GROW: usize = 32 << 20;
    const HUGE_PAGE: usize = 2 << 20;
    let tuned = std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("glibc.malloc."))
        || [
            "MALLOC_TOP_PAD_",
            "MALLOC_MMAP_THRESHOLD_",
            "MALLOC_TRIM_THRESHOLD_",
        ]
        .iter()
        .any(|v| std::env::var_os(v).is_some());
    if tuned {
        return;
    }
    // SAFETY: mallopt only sets allocator parameters, under the arena
    // lock (the interrupt watcher's thread may be running; it has an
    // arena of its own); sbrk(0) only reads the program break; the block
    // is malloc's own, freed once; madvise(MADV_HUGEPAGE) changes no
    // content and only flags whole pages of a range the heap maps
    // (checked against the break first).
    unsafe {
        if libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 20) == 0 {
            return;
        }
        libc::mallopt(libc::M_TOP_PAD, PAD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
        let before = libc::sbrk(0) as usize;
        let block = libc::malloc(GROW);
        if block.is_null() {
            return;
        }
        let end = libc::sbrk(0) as usize;
        let at = block as usize;
        let start = at.next_multiple_of(HUGE_PAGE);
        // Marked only when the block came from the heap, which grew for
        // it (not from an mmap of its own, nor where sbrk fails). It
        // starts in what was free at the heap's top, less than GROW below
        // the old break, or the heap would not have grown.
        let grew = before != usize::MAX && end != usize::MAX && end > before;
        if grew
            && at >= before.saturating_sub(GROW)
            && at.checked_add(GROW).is_some_and(|e| e <= end)
            && start < end
        {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
        libc::free(block);
    }
    // The worker threads' heaps too (see `grow_worker_heap`).
    rayon::broadcast(|pool| grow_worker_heap((WORKERS_GROW / pool.num_threads()).min(WORKER_GROW)));
}

/// How much of each worker thread's heap is made usable at once.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const WORKER_GROW: usize = 32 << 20;

/// At most this much for all worker threads together: many threads get
/// less each, so that memory made usable but never touched stays bounded
/// (where the kernel's overcommit is strict, it counts as committed).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const WORKERS_GROW: usize = 256 << 20;

/// A thread other than the main one allocates from a heap of its own
/// (an arena's: up to 64 MiB reserved, made usable as it is needed), and
/// glibc grows such a heap by the few pages each allocation lacks: one
/// `mprotect` a time, about 600 in a warm `renames` after a 10,000-file
/// move, each holding the process's memory map against the other
/// thread's page faults. One allocation of `bytes` ([`WORKER_GROW`] on
/// a few threads), freed at once, makes that much usable in one call
/// (freed memory stays in the heap: the trim threshold is above it), and
/// its range is marked for transparent huge pages like the main heap's.
/// On a thread that shares the main heap the block comes from there,
/// which the same mark fits.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn grow_worker_heap(bytes: usize) {
    const HUGE_PAGE: usize = 2 << 20;
    // SAFETY: the block is malloc's own, used for nothing and freed once;
    // madvise(MADV_HUGEPAGE) changes no content and only flags whole
    // pages inside the block, which is mapped while it is allocated.
    unsafe {
        let block = libc::malloc(bytes);
        if block.is_null() {
            return;
        }
        let at = block as usize;
        let start = at.next_multiple_of(HUGE_PAGE);
        let end = at.saturating_add(bytes) / HUGE_PAGE * HUGE_PAGE;
        if start < end {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
        libc::free(block);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn prepare_for_short_run() {}
