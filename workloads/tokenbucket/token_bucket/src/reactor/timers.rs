//! The timer queue of a reactor: task ids by deadline, FIFO among equal deadlines.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Default)]
pub(super) struct TimerQueue {
    heap: BinaryHeap<Reverse<(u64, u64, usize)>>,
    seq: u64,
}

impl TimerQueue {
    pub(super) fn push(&mut self, due_ns: u64, id: usize) {
        self.seq += 1;
        self.heap.push(Reverse((due_ns, self.seq, id)));
    }

    /// The earliest timer due at or before `now_ns`, removed: (deadline, task id).
    pub(super) fn pop_due(&mut self, now_ns: u64) -> Option<(u64, usize)> {
        match self.heap.peek() {
            Some(Reverse((due, _, _))) if *due <= now_ns => {
                let Reverse((due, _, id)) = self.heap.pop().expect("peeked");
                Some((due, id))
            }
            _ => None,
        }
    }

    pub(super) fn next_due(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((due, _, _))| *due)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_deadline_order_then_fifo() {
        let mut q = TimerQueue::default();
        q.push(30, 1);
        q.push(10, 2);
        q.push(10, 3);
        assert_eq!(q.next_due(), Some(10));
        assert_eq!(q.pop_due(5), None);
        assert_eq!(q.pop_due(20), Some((10, 2)));
        assert_eq!(q.pop_due(20), Some((10, 3)));
        assert_eq!(q.pop_due(20), None);
        assert_eq!(q.pop_due(30), Some((30, 1)));
    }
}
