//! The terminal side of the library's [`Feedback`]: progress lines on
//! stderr in git's style ("Fingerprinting blobs:  42% (4200/10000)", drawn
//! by indicatif), `GIT_SIMM_TRACE` lines, git's own progress relayed, and
//! the Ctrl-C handler that sets the interrupt flag.
//!
//! The library only bumps an atomic counter per item; a thread per stage
//! copies it into the progress line ten times a second, after staying
//! silent for the first quarter second so quick work shows nothing.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[cfg(doc)]
use git_simm::progress::Feedback;
use git_simm::progress::{Counter, Observer};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Set by SIGINT or SIGTERM (see [`catch_interrupts`]); the flag every
/// command's [`Feedback`] carries.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Exit status of an interrupted run: 128 + SIGINT, what a shell reports
/// for a command killed by Ctrl-C (and what git's commands exit with then).
pub const EXIT_INTERRUPTED: u8 = 130;

/// On SIGINT or SIGTERM, set [`INTERRUPTED`], so the work stops at its
/// next check and cleans up after itself; a second signal, when the flag
/// is already set, exits at once with [`EXIT_INTERRUPTED`]. Whatever the
/// work waits on, the first signal ends the run within a second (see
/// [`watchdog`]).
pub fn catch_interrupts() -> std::io::Result<()> {
    // A process whose parent ends is handed to the nearest "subreaper"
    // among its ancestors instead of to init: so an ssh whose `git fetch`
    // died stays in this process's family, where the signals below find
    // it (Linux; elsewhere the call does not exist and nothing changes).
    #[cfg(target_os = "linux")]
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    std::thread::Builder::new()
        .name("interrupt watchdog".into())
        .spawn(watchdog)?;
    use signal_hook::consts::{SIGINT, SIGTERM};
    for signal in [SIGINT, SIGTERM] {
        // Registered first, so it sees the flag as the previous signal
        // left it.
        signal_hook::flag::register_conditional_shutdown(
            signal,
            i32::from(EXIT_INTERRUPTED),
            &INTERRUPTED,
        )?;
        signal_hook::flag::register(signal, &INTERRUPTED)?;
    }
    Ok(())
}

/// How long after the flag is set the git commands still running get
/// SIGTERM: the work stops its own children sooner (git's plumbing, when
/// it is polled), but some waits are plain (`git rev-parse`, `git
/// fetch`, a FIFO named on the command line) and only end with them.
const STOP_CHILDREN_AFTER: Duration = Duration::from_millis(150);

/// How long after the flag is set the process ends, if the work has not
/// ended it: whatever it waits on, a run stops within a second of the
/// first SIGINT or SIGTERM. What it leaves is what a `kill -9` would
/// leave, which every command is made to survive (temporaries locked by
/// their writer, the repack journal), and its children are killed.
const EXIT_AFTER: Duration = Duration::from_millis(700);

/// Watch [`INTERRUPTED`]; once it is set, stop the children still running
/// and, if the run has not ended [`EXIT_AFTER`] it, end it.
fn watchdog() {
    while !interrupted() {
        std::thread::sleep(Duration::from_millis(25));
    }
    let set = Instant::now();
    std::thread::sleep(STOP_CHILDREN_AFTER);
    signal_children(false);
    std::thread::sleep(EXIT_AFTER.saturating_sub(set.elapsed()));
    signal_children(true);
    std::process::exit(i32::from(EXIT_INTERRUPTED));
}

/// Before an interrupted run exits: whatever it started that is still
/// there (the work waits for its own children, not for theirs) gets
/// SIGTERM, a tenth of a second to clean up, then SIGKILL, so that nothing
/// outlives the run.
pub fn end_children() {
    signal_children(false);
    #[cfg(target_os = "linux")]
    {
        let until = Instant::now() + Duration::from_millis(100);
        while Instant::now() < until && !descendants().is_empty() {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    signal_children(true);
}

/// SIGTERM (SIGKILL with `kill`) to every process this one started and
/// the processes they started in turn (what Ctrl-C in a terminal reaches:
/// `git fetch` leaves its ssh running on a SIGTERM of its own), found in
/// `/proc` (Linux; elsewhere nothing is sent).
///
/// The family is stopped (SIGSTOP) before anything else is sent, and
/// looked for again until no new member shows up: a process that sees
/// its child end reacts at once (`git fetch` whose `ssh -G` probe dies
/// starts the real ssh), so signalled one by one, a parent could start a
/// child nobody signals, left running after this process is gone. Once
/// all are stopped, each gets the signal and then SIGCONT, so git's
/// handlers still clean up after themselves.
fn signal_children(kill: bool) {
    // The watchdog and an interrupted run's end may both be at it: one
    // sequence at a time, so none is left stopped by the other's.
    static SIGNALLING: Mutex<()> = Mutex::new(());
    let _one = SIGNALLING.lock().unwrap_or_else(PoisonError::into_inner);
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{Pid, Signal, kill_process};
        let send = |pid: u32, signal: Signal| {
            if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
                let _ = kill_process(pid, signal);
            }
        };
        let mut stopped: Vec<u32> = Vec::new();
        // A parent is stopped before its children are looked for again,
        // so each round can only find what was started before it; a few
        // rounds settle any real tree.
        for _ in 0..16 {
            let new: Vec<u32> = descendants()
                .into_iter()
                .filter(|pid| !stopped.contains(pid))
                .collect();
            if new.is_empty() {
                break;
            }
            for &pid in &new {
                send(pid, Signal::STOP);
            }
            stopped.extend(new);
        }
        let signal = if kill { Signal::KILL } else { Signal::TERM };
        for &pid in &stopped {
            send(pid, signal);
        }
        for &pid in &stopped {
            send(pid, Signal::CONT);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = kill;
}

/// Every process this one started and the processes they started in
/// turn (orphans among them come back to this one, the subreaper),
/// parents before their children, read from `/proc`; zombies left out.
#[cfg(target_os = "linux")]
fn descendants() -> Vec<u32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    // (pid, parent) of every process.
    let parents: Vec<(u32, u32)> = procs
        .filter_map(Result::ok)
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // `pid (comm) state ppid ...`; comm may hold anything, so
            // the fields are counted from its closing parenthesis.
            let at = stat.rfind(')')?;
            let mut fields = stat[at + 1..].split_whitespace();
            // A zombie has ended already and holds no children.
            if fields.next()? == "Z" {
                return None;
            }
            let ppid = fields.next()?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut family = vec![std::process::id()];
    let mut i = 0;
    while i < family.len() {
        let parent = family[i];
        family.extend(parents.iter().filter(|p| p.1 == parent).map(|p| p.0));
        i += 1;
    }
    family.split_off(1)
}

/// Whether a signal asked this run to stop.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Wait before drawing anything: work that ends sooner shows nothing.
const FIRST_DRAW: Duration = Duration::from_millis(250);
/// Redraw at most this often.
const REDRAW: Duration = Duration::from_millis(100);

/// What the library reports, shown on stderr.
pub struct Terminal {
    /// Draw progress lines (stderr is a terminal and no `--quiet`).
    progress: bool,
    /// With `GIT_SIMM_TRACE`: when the first trace event came, which the
    /// times printed count from.
    trace: Option<OnceLock<Instant>>,
    /// Stages being drawn.
    active: Mutex<Vec<Drawing>>,
}

/// A stage being drawn by its thread.
struct Drawing {
    done: Counter,
    stop: Arc<AtomicBool>,
    /// The line, once the thread has started drawing it.
    bar: Arc<Mutex<Option<ProgressBar>>>,
    thread: JoinHandle<()>,
}

impl Terminal {
    /// Draw progress lines if `progress`, print trace lines if `trace`.
    pub fn new(progress: bool, trace: bool) -> Terminal {
        Terminal {
            progress,
            trace: trace.then(OnceLock::new),
            active: Mutex::new(Vec::new()),
        }
    }

    fn active(&self) -> std::sync::MutexGuard<'_, Vec<Drawing>> {
        self.active.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// git's progress line: "Fingerprinting blobs:  42% (4200/10000)".
fn style(end: &str) -> ProgressStyle {
    ProgressStyle::with_template(&format!("{{msg}}: {{percent:>3}}% ({{pos}}/{{len}}){end}"))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
}

/// Sleep up to `d`, waking early once `stop` is set (and the sleeper
/// unparked).
fn wait(stop: &AtomicBool, d: Duration) {
    let until = Instant::now() + d;
    while !stop.load(Ordering::Acquire) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        std::thread::park_timeout(left);
    }
}

impl Observer for Terminal {
    fn stage_started(&self, name: &str, total: u64, done: &Counter) {
        if !self.progress {
            return;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let bar = Arc::new(Mutex::new(None));
        let thread = {
            let (stop, bar, done, name) =
                (stop.clone(), bar.clone(), done.clone(), name.to_owned());
            std::thread::spawn(move || {
                // Wait, but wake as soon as the work is done: the stage's
                // end joins this thread, and a plain sleep here once held
                // every quick lookup (check's, in a terminal) for 250 ms.
                wait(&stop, FIRST_DRAW);
                if stop.load(Ordering::Acquire) {
                    return;
                }
                let line = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
                    .with_style(style(""))
                    .with_message(name);
                line.set_position(done.get());
                *bar.lock().unwrap_or_else(PoisonError::into_inner) = Some(line.clone());
                while !stop.load(Ordering::Acquire) {
                    line.set_position(done.get());
                    wait(&stop, REDRAW);
                }
            })
        };
        self.active().push(Drawing {
            done: done.clone(),
            stop,
            bar,
            thread,
        });
    }

    fn stage_ended(&self, _name: &str, done: &Counter, completed: bool) {
        let drawing = {
            let mut active = self.active();
            let Some(i) = active.iter().position(|d| d.done.same(done)) else {
                return;
            };
            active.remove(i)
        };
        drawing.stop.store(true, Ordering::Release);
        drawing.thread.thread().unpark();
        let _ = drawing.thread.join();
        let line = drawing
            .bar
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(line) = line {
            line.set_position(done.get());
            if completed {
                // Like git's "done".
                line.set_style(style(", done."));
                line.finish();
            } else {
                line.abandon();
            }
        }
    }

    fn trace(&self, event: &str) {
        let Some(start) = &self.trace else {
            return;
        };
        let start = start.get_or_init(Instant::now);
        let text = format!("trace: {:>8.6} s  {event}", start.elapsed().as_secs_f64());
        // A progress line being drawn steps aside for it.
        let line = self
            .active()
            .iter()
            .find_map(|d| d.bar.lock().unwrap_or_else(PoisonError::into_inner).clone());
        let print = || {
            let _ = writeln!(std::io::stderr().lock(), "{text}");
        };
        match line {
            Some(line) => line.suspend(print),
            None => print(),
        }
    }

    fn git_stderr(&self, bytes: &[u8]) {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(bytes);
        let _ = err.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: finishing waited out the thread's first 250 ms pause, so
    /// every quick step that counts progress cost a quarter second when
    /// stderr was a terminal (the pre-commit hook's usual case).
    #[test]
    fn finishing_early_does_not_wait_for_the_first_draw() {
        let terminal = Terminal::new(true, false);
        let flag = AtomicBool::new(false);
        let feedback = git_simm::progress::Feedback::new(&terminal, &flag);
        let start = Instant::now();
        for _ in 0..4 {
            let stage = feedback.stage("test", 10);
            stage.inc(10);
            stage.finish();
        }
        let took = start.elapsed();
        assert!(took < FIRST_DRAW, "{took:?} for four");
        assert!(terminal.active().is_empty());
    }

    #[test]
    fn a_stage_longer_than_the_first_pause_is_drawn_and_ended() {
        let terminal = Terminal::new(true, false);
        let flag = AtomicBool::new(false);
        let feedback = git_simm::progress::Feedback::new(&terminal, &flag);
        let stage = feedback.stage("test", 10);
        stage.inc(3);
        // The line appears after FIRST_DRAW; a loaded machine may take
        // longer to run the drawing thread.
        let start = Instant::now();
        let line = loop {
            let line = terminal.active()[0].bar.lock().unwrap().clone();
            if line.is_some() || start.elapsed() > Duration::from_secs(10) {
                break line;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(start.elapsed() >= FIRST_DRAW - Duration::from_millis(20));
        assert_eq!(line.map(|l| l.position()), Some(3));
        drop(stage);
        assert!(terminal.active().is_empty());
    }
}
