//! Netty's `DefaultEventExecutorChooserFactory`: which executor of an event executor group
//! takes the next task, round-robin through one atomic index that every submitting thread
//! bumps.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::padded::Padded;

pub(crate) struct Chooser {
    /// Netty's `idx`: a separate `AtomicInteger` object (`AtomicLong` for the generic
    /// chooser), so boxed, and on lines of its own.
    index: Box<Padded<AtomicUsize>>,
    pick: Pick,
}

/// Netty's two choosers; both deal out the same sequence, a mask is just cheaper.
enum Pick {
    /// `PowerOfTwoEventExecutorChooser`: the index masked by `executors - 1`.
    Mask(usize),
    /// `GenericEventExecutorChooser`: the index modulo the group size.
    Modulo(usize),
}

impl Chooser {
    pub(crate) fn new(executors: usize) -> Self {
        assert!(executors > 0, "a group needs at least one executor");
        let pick = if executors.is_power_of_two() {
            Pick::Mask(executors - 1)
        } else {
            Pick::Modulo(executors)
        };
        Self {
            index: Box::new(Padded(AtomicUsize::new(0))),
            pick,
        }
    }

    /// The index of the executor for the next task.
    pub(crate) fn next(&self) -> usize {
        let index = self.index.fetch_add(1, Ordering::Relaxed);
        match self.pick {
            Pick::Mask(mask) => index & mask,
            Pick::Modulo(executors) => index % executors,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Chooser;

    #[test]
    fn deals_round_robin_for_any_group_size() {
        for executors in [1, 2, 3, 8] {
            let chooser = Chooser::new(executors);
            let picks: Vec<usize> = (0..3 * executors).map(|_| chooser.next()).collect();
            let expected: Vec<usize> = (0..3).flat_map(|_| 0..executors).collect();
            assert_eq!(picks, expected, "{executors} executors");
        }
    }
}
