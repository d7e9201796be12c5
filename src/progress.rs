//! Progress on stderr for long work, in git's style
//! ("Fingerprinting blobs:  42% (4200/10000)"), shown only when stderr is a
//! terminal so scripts and CI logs stay clean.
//!
//! Workers bump an atomic counter; one background thread redraws the line at
//! most ten times a second, so the hot loops pay one relaxed atomic add.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A progress counter. Dropping it (or [`Progress::finish`]) prints the
/// final line, like git's "done".
pub struct Progress {
    done: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Start counting towards `total` under `title`; silent unless stderr is
    /// a terminal (or `force` is set, for tests).
    pub fn new(title: &str, total: u64, force: bool) -> Progress {
        let done = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let shown = force || std::io::stderr().is_terminal();
        let thread = shown.then(|| {
            let (done, stop, title) = (done.clone(), stop.clone(), title.to_owned());
            std::thread::spawn(move || {
                let draw = |n: u64, end: &str| {
                    let pct = (n * 100).checked_div(total).unwrap_or(100);
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "\r{title}: {pct:3}% ({n}/{total}){end}");
                    let _ = err.flush();
                };
                // Wait, but wake as soon as the work is done: `finish`
                // joins this thread, and a plain sleep here once held every
                // quick lookup (check's, in a terminal) for 250 ms.
                let wait = |d: Duration| {
                    let until = Instant::now() + d;
                    while !stop.load(Ordering::Acquire) {
                        let left = until.saturating_duration_since(Instant::now());
                        if left.is_zero() {
                            break;
                        }
                        std::thread::park_timeout(left);
                    }
                };
                // Say nothing for work that finishes in a blink.
                wait(Duration::from_millis(250));
                let mut drew = false;
                while !stop.load(Ordering::Acquire) {
                    draw(done.load(Ordering::Relaxed), "");
                    drew = true;
                    wait(Duration::from_millis(100));
                }
                if drew {
                    draw(done.load(Ordering::Relaxed), ", done.\n");
                }
            })
        });
        Progress { done, stop, thread }
    }

    /// A counter that never prints.
    pub fn hidden() -> Progress {
        Progress {
            done: Arc::new(AtomicU64::new(0)),
            stop: Arc::new(AtomicBool::new(true)),
            thread: None,
        }
    }

    /// Count `n` more items done; cheap enough for inner loops.
    pub fn inc(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }

    /// Stop and print the final line.
    pub fn finish(mut self) {
        self.stop_thread();
    }

    fn stop_thread(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

/// With `GIT_SIMM_TRACE` set, print each stage's elapsed time to stderr
/// (like `GIT_TRACE_PERFORMANCE`).
pub fn trace(stage: &str) {
    use std::sync::OnceLock;
    static START: OnceLock<Option<std::time::Instant>> = OnceLock::new();
    let start =
        START.get_or_init(|| std::env::var_os("GIT_SIMM_TRACE").map(|_| std::time::Instant::now()));
    if let Some(start) = start {
        eprintln!("trace: {:>8.3} s  {stage}", start.elapsed().as_secs_f64());
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
        let start = Instant::now();
        for _ in 0..4 {
            // `force` starts the drawing thread as a terminal would.
            let p = Progress::new("test", 10, true);
            p.inc(10);
            p.finish();
        }
        let took = start.elapsed();
        assert!(took < Duration::from_millis(250), "{took:?} for four");
    }
}
