//! Which of `n` items one probe of an index has met, and where each sits
//! in that probe's output: a probe meets a few hundred of up to millions
//! of items, so the marks are emptied between probes by a new epoch, not
//! by clearing `n` slots. The prefix index ([`super::prefix`]) and the
//! groups' search keep one per thread.

/// The items met in the current probe ([`Seen::begin`] starts one).
#[derive(Default, Debug)]
pub struct Seen {
    stamp: Vec<u32>,
    at: Vec<u32>,
    epoch: u32,
}

impl Seen {
    /// Start a probe over `n` items: every mark of earlier probes is void.
    pub fn begin(&mut self, n: usize) {
        if self.stamp.len() != n || self.epoch == u32::MAX {
            self.stamp = vec![0; n];
            self.at = vec![0; n];
            self.epoch = 0;
        }
        self.epoch += 1;
    }

    /// Where item `i` sits in this probe's output, if it was met; items
    /// beyond `n` never are.
    #[inline]
    pub fn position(&self, i: usize) -> Option<u32> {
        (self.stamp.get(i) == Some(&self.epoch)).then(|| self.at[i])
    }

    /// Mark item `i` met in this probe, at `at` in its output (items
    /// beyond `n` are ignored).
    #[inline]
    pub fn insert(&mut self, i: usize, at: u32) {
        if let Some(stamp) = self.stamp.get_mut(i) {
            *stamp = self.epoch;
            self.at[i] = at;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Seen;

    #[test]
    fn marks_last_one_probe() {
        let mut seen = Seen::default();
        seen.begin(4);
        assert_eq!(seen.position(2), None);
        seen.insert(2, 7);
        seen.insert(9, 1);
        assert_eq!(seen.position(2), Some(7));
        assert_eq!(seen.position(9), None);
        seen.begin(4);
        assert_eq!(seen.position(2), None);
        seen.begin(5);
        seen.insert(4, 0);
        assert_eq!(seen.position(4), Some(0));
    }
}
