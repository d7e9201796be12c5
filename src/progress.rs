//! Progress, trace events and cancellation, as handles the caller passes
//! in: the library never draws on a terminal, prints or reads the
//! environment.
//!
//! Long operations take a [`Feedback`]: an [`Observer`] told about the
//! work (counted stages such as "Fingerprinting blobs", trace events that
//! time the steps of a pipeline, what a child git process prints on its
//! stderr) and an interrupt flag the caller may set at any time, from any
//! thread or a signal handler. This is gitoxide's model (a `Progress` and a
//! `should_interrupt: &AtomicBool`), cut to what git-simm needs.
//!
//! Long loops poll the flag (per blob read, per destination scored, between
//! the steps of a repack) and return [`Interrupted`] inside their own error
//! type; [`is_interrupted`] recognises it in any of them. Counting costs the
//! hot loops one relaxed atomic add, never a call through the observer.
//!
//! [`Feedback::none()`] reports to nobody and is never interrupted, for
//! library users and tests that want neither.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The error of an operation stopped because its interrupt flag was set.
/// Operations return it inside their own error type (a variant named
/// `Interrupted`); [`is_interrupted`] finds it in any of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

/// True if and only if `err` or one of its sources is [`Interrupted`].
pub fn is_interrupted(err: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(err), |e| e.source()).any(|e| e.is::<Interrupted>())
}

/// How many items of a stage are done: shared between the library, which
/// adds to it from any thread, and the observer, which reads it whenever it
/// likes (a drawing thread, say).
#[derive(Clone, Debug, Default)]
pub struct Counter(Arc<AtomicU64>);

impl Counter {
    /// Items done so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Whether `self` and `other` count the same stage.
    pub fn same(&self, other: &Counter) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
}

/// What the caller is told while the library works. Every method does
/// nothing unless implemented; the library calls them from any thread, but
/// never from a loop over blobs or pairs.
pub trait Observer: Sync {
    /// A counted stage starts: `name` (git's style, "Fingerprinting
    /// blobs"), `total` items, `done` counting those finished.
    fn stage_started(&self, name: &str, total: u64, done: &Counter) {
        let _ = (name, total, done);
    }

    /// The stage counted by `done` ended: `completed` if it ran to its end,
    /// not if it failed or was interrupted.
    fn stage_ended(&self, name: &str, done: &Counter, completed: bool) {
        let _ = (name, done, completed);
    }

    /// A step of the work just finished ("candidate search", "repack:
    /// verified"): what `GIT_SIMM_TRACE=1` shows with the time elapsed.
    fn trace(&self, event: &str) {
        let _ = event;
    }

    /// Bytes a child git process wrote to its stderr (its own progress,
    /// when asked for it), as they come.
    fn git_stderr(&self, bytes: &[u8]) {
        let _ = bytes;
    }
}

/// An [`Observer`] that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Discard;

impl Observer for Discard {}

/// The handle long operations take: where to report, and when to stop.
/// Cheap to copy; share one for a whole command.
#[derive(Clone, Copy)]
pub struct Feedback<'a> {
    observer: &'a dyn Observer,
    interrupt: &'a AtomicBool,
}

impl std::fmt::Debug for Feedback<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feedback")
            .field("interrupted", &self.is_interrupted())
            .finish_non_exhaustive()
    }
}

/// The flag of [`Feedback::none()`], never set.
static NEVER: AtomicBool = AtomicBool::new(false);

impl<'a> Feedback<'a> {
    /// Report to `observer`; stop once `interrupt` is set.
    pub fn new(observer: &'a dyn Observer, interrupt: &'a AtomicBool) -> Feedback<'a> {
        Feedback {
            observer,
            interrupt,
        }
    }

    /// Report to nobody, never interrupted.
    pub fn none() -> Feedback<'static> {
        Feedback {
            observer: &Discard,
            interrupt: &NEVER,
        }
    }

    /// The same interrupt flag, reporting to nobody: for work whose
    /// progress is not worth showing.
    pub fn silent(&self) -> Feedback<'a> {
        Feedback {
            observer: &Discard,
            interrupt: self.interrupt,
        }
    }

    /// Start a counted stage of `total` items; it ends when the returned
    /// [`Stage`] is finished or dropped.
    pub fn stage(&self, name: &str, total: u64) -> Stage<'a> {
        let done = Counter::default();
        self.observer.stage_started(name, total, &done);
        Stage {
            observer: self.observer,
            name: name.to_owned(),
            done,
            completed: false,
        }
    }

    /// Report that the step `event` just finished.
    pub fn trace(&self, event: &str) {
        self.observer.trace(event);
    }

    /// Pass on what a child git process wrote to its stderr.
    pub fn git_stderr(&self, bytes: &[u8]) {
        self.observer.git_stderr(bytes);
    }

    /// Whether the work should stop: one relaxed atomic load, cheap enough
    /// for inner loops.
    pub fn is_interrupted(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed)
    }

    /// `Err(Interrupted)` once the work should stop.
    pub fn check(&self) -> Result<(), Interrupted> {
        if self.is_interrupted() {
            Err(Interrupted)
        } else {
            Ok(())
        }
    }

    /// The flag itself, for gix functions that take a `should_interrupt`.
    pub fn interrupt_flag(&self) -> &'a AtomicBool {
        self.interrupt
    }
}

impl Default for Feedback<'static> {
    fn default() -> Self {
        Feedback::none()
    }
}

/// A counted stage in progress (from [`Feedback::stage`]); the observer is
/// told it ended when it is finished or dropped.
pub struct Stage<'a> {
    observer: &'a dyn Observer,
    name: String,
    done: Counter,
    completed: bool,
}

impl Stage<'_> {
    /// Count `n` more items done: one relaxed atomic add.
    pub fn inc(&self, n: u64) {
        self.done.add(n);
    }

    /// End the stage as completed.
    pub fn finish(mut self) {
        self.completed = true;
    }
}

impl Drop for Stage<'_> {
    fn drop(&mut self) {
        self.observer
            .stage_ended(&self.name, &self.done, self.completed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Log(Mutex<Vec<String>>);

    impl Observer for Log {
        fn stage_started(&self, name: &str, total: u64, done: &Counter) {
            let mut log = self.0.lock().unwrap();
            log.push(format!("start {name} {}/{total}", done.get()));
        }
        fn stage_ended(&self, name: &str, done: &Counter, completed: bool) {
            let mut log = self.0.lock().unwrap();
            log.push(format!("end {name} {} {completed}", done.get()));
        }
        fn trace(&self, event: &str) {
            self.0.lock().unwrap().push(format!("trace {event}"));
        }
    }

    #[test]
    fn stages_and_traces_reach_the_observer() {
        let log = Log::default();
        let flag = AtomicBool::new(false);
        let feedback = Feedback::new(&log, &flag);
        let stage = feedback.stage("Counting", 3);
        stage.inc(2);
        stage.inc(1);
        stage.finish();
        feedback.trace("counted");
        drop(feedback.stage("Failing", 5));
        assert_eq!(
            *log.0.lock().unwrap(),
            [
                "start Counting 0/3",
                "end Counting 3 true",
                "trace counted",
                "start Failing 0/5",
                "end Failing 0 false"
            ]
        );
    }

    #[test]
    fn the_flag_is_seen_and_recognised_through_sources() {
        #[derive(Debug, thiserror::Error)]
        enum Inner {
            #[error("interrupted")]
            Interrupted(#[from] Interrupted),
        }
        #[derive(Debug, thiserror::Error)]
        enum Outer {
            #[error(transparent)]
            Inner(#[from] Inner),
            #[error("other")]
            Other,
        }
        let flag = AtomicBool::new(false);
        let feedback = Feedback::new(&Discard, &flag);
        assert_eq!(feedback.check(), Ok(()));
        flag.store(true, Ordering::Relaxed);
        let err = Outer::from(Inner::from(feedback.check().unwrap_err()));
        assert!(is_interrupted(&err));
        assert!(!is_interrupted(&Outer::Other));
        assert!(!Feedback::none().is_interrupted());
    }
}
