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
/// runs the main heap grows 64 MiB at a time, keeps what is freed, and
/// serves blocks up to 256 MiB itself.
///
/// No range is marked for transparent huge pages. A huge page is zeroed
/// whole at its first touch, and in a virtual machine whose host takes
/// back the memory the guest frees (a balloon device's free page
/// reporting), each one is also faulted in by the host, 2 MiB at a time:
/// on such a machine the mark made a cold run of a 10,000-file move 11-20%
/// slower and a warm one 62-87% (docs/performance.md), and its times
/// spread twice as wide. Runs back to back, which find the huge pages the
/// previous one freed still backed, were faster with the mark (warm
/// 10-24%), as was a cold 100,000-file move (6%): a user's run, seconds
/// after other work, is the case chosen for.
///
/// Not for `repack`, whose buffers come and go per worker: there these
/// settings cost time and up to 40% more peak RSS. glibc's own settings
/// in the environment (`GLIBC_TUNABLES` with `glibc.malloc.` ones, which
/// include its own huge-page switch, or the older `MALLOC_*_` variables)
/// decide instead, and a glibc that refuses a threshold this high (older
/// ones cap it at 32 MiB) is left as it is: the other two settings alone
/// would freeze its threshold at 128 KiB.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn prepare_for_short_run() {
    const PAD: i32 = 64 << 20;
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
    // arena of its own).
    unsafe {
        if libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 20) == 0 {
            return;
        }
        libc::mallopt(libc::M_TOP_PAD, PAD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
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
/// (freed memory stays in the heap: the trim threshold is above it). On
/// a thread that shares the main heap the block comes from there, which
/// grows by it once.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn grow_worker_heap(bytes: usize) {
    // SAFETY: the block is malloc's own, used for nothing and freed once.
    unsafe {
        // Opaque, so that the compiler cannot drop the pair of calls as
        // an allocation nobody uses.
        let block = std::hint::black_box(libc::malloc(bytes));
        if !block.is_null() {
            libc::free(block);
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn prepare_for_short_run() {}
