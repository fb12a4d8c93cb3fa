//! An executor's scheduled tasks: Netty's `DefaultPriorityQueue` as
//! `AbstractScheduledEventExecutor` uses it, a binary min-heap ordered by (deadline, id)
//! whose entries remember their position, so that a cancelled task is removed in
//! `O(log n)`. Only the executor's own thread ever touches it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::{Scheduled, ScheduledTimeout, NOT_IN_HEAP};

struct Entry<T> {
    /// Netty's task id, handed out as the task enters the heap; breaks deadline ties
    /// first-in first-out.
    id: u64,
    scheduled: Scheduled<T>,
}

impl<T> Entry<T> {
    fn key(&self) -> (Instant, u64) {
        (self.scheduled.timeout.deadline, self.id)
    }
}

pub(super) struct ScheduledHeap<T> {
    entries: Vec<Entry<T>>,
    /// Netty's `nextTaskId`.
    last_id: u64,
}

impl<T> ScheduledHeap<T> {
    pub(super) fn new() -> Self {
        Self {
            entries: Vec::new(),
            last_id: 0,
        }
    }

    /// `scheduleFromEventLoop`: gives the task the next id and adds it.
    pub(super) fn push(&mut self, scheduled: Scheduled<T>) {
        self.last_id += 1;
        self.entries.push(Entry {
            id: self.last_id,
            scheduled,
        });
        self.sift_up(self.entries.len() - 1);
    }

    /// The earliest deadline, if any task is scheduled.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.entries
            .first()
            .map(|entry| entry.scheduled.timeout.deadline)
    }

    /// `pollScheduledTask`: removes and returns the head if its deadline is not after `now`.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<Scheduled<T>> {
        if self.next_deadline()? > now {
            return None;
        }
        Some(self.remove_at(0))
    }

    /// `removeTyped`: removes `timeout`'s task if it is still in the heap.
    pub(super) fn remove(&mut self, timeout: &Arc<ScheduledTimeout>) -> Option<Scheduled<T>> {
        let index = timeout.heap_index.load(Ordering::Relaxed);
        let entry = self.entries.get(index)?;
        debug_assert!(Arc::ptr_eq(&entry.scheduled.timeout, timeout));
        Some(self.remove_at(index))
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }

    fn remove_at(&mut self, index: usize) -> Scheduled<T> {
        let entry = self.entries.swap_remove(index);
        entry
            .scheduled
            .timeout
            .heap_index
            .store(NOT_IN_HEAP, Ordering::Relaxed);
        if index < self.entries.len() {
            // The former last entry fills the hole; it may belong above or below it.
            self.sift_up(index);
            self.sift_down(index);
        }
        entry.scheduled
    }

    fn sift_up(&mut self, mut index: usize) {
        while index > 0 {
            let parent = (index - 1) / 2;
            if self.entries[parent].key() <= self.entries[index].key() {
                break;
            }
            self.entries.swap(parent, index);
            self.place(index);
            index = parent;
        }
        self.place(index);
    }

    fn sift_down(&mut self, mut index: usize) {
        loop {
            let left = 2 * index + 1;
            let right = left + 1;
            let mut smallest = index;
            for child in [left, right] {
                if child < self.entries.len()
                    && self.entries[child].key() < self.entries[smallest].key()
                {
                    smallest = child;
                }
            }
            if smallest == index {
                break;
            }
            self.entries.swap(smallest, index);
            self.place(index);
            index = smallest;
        }
        self.place(index);
    }

    /// Records an entry's position in its timeout (Netty's `priorityQueueIndex`).
    fn place(&self, index: usize) {
        self.entries[index]
            .scheduled
            .timeout
            .heap_index
            .store(index, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::ScheduledHeap;
    use crate::event_executor::{Scheduled, ScheduledTimeout, Task, NOT_IN_HEAP};
    use crate::state::TimeoutState;
    use crate::task_queue::TaskQueue;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    fn scheduled(deadline: Instant, task: u32) -> Scheduled<u32> {
        let queue: Arc<TaskQueue<Task<u32>>> = Arc::new(TaskQueue::new());
        Scheduled {
            timeout: Arc::new(ScheduledTimeout {
                deadline,
                state: TimeoutState::new(),
                heap_index: AtomicUsize::new(NOT_IN_HEAP),
                removals: queue,
            }),
            task,
        }
    }

    #[test]
    fn pops_due_tasks_by_deadline_then_insertion() {
        let base = Instant::now();
        let mut heap = ScheduledHeap::new();
        for (task, offset_ms) in [(0, 30), (1, 10), (2, 30), (3, 0), (4, 20), (5, 10)] {
            heap.push(scheduled(base + Duration::from_millis(offset_ms), task));
        }
        assert!(heap.pop_due(base - Duration::from_millis(1)).is_none());
        let later = base + Duration::from_secs(1);
        let order: Vec<u32> = std::iter::from_fn(|| heap.pop_due(later))
            .map(|s| s.task)
            .collect();
        assert_eq!(order, [3, 1, 5, 4, 0, 2]);
        assert_eq!(heap.next_deadline(), None);
    }

    #[test]
    fn removes_any_entry_and_keeps_the_order_of_the_rest() {
        let base = Instant::now();
        let mut heap = ScheduledHeap::new();
        let offsets: Vec<u64> = (0..64).map(|i| (i * 37) % 64).collect();
        let timeouts: Vec<Arc<ScheduledTimeout>> = offsets
            .iter()
            .enumerate()
            .map(|(task, &offset)| {
                let s = scheduled(base + Duration::from_millis(offset), task as u32);
                let timeout = Arc::clone(&s.timeout);
                heap.push(s);
                timeout
            })
            .collect();
        // Remove every third entry, wherever it sits in the heap.
        for timeout in timeouts.iter().step_by(3) {
            assert!(heap.remove(timeout).is_some());
            assert_eq!(timeout.heap_index.load(Ordering::Relaxed), NOT_IN_HEAP);
            assert!(heap.remove(timeout).is_none(), "removed twice");
        }
        assert_eq!(heap.len(), 64 - 22);
        let later = base + Duration::from_secs(1);
        let popped: Vec<u64> = std::iter::from_fn(|| heap.pop_due(later))
            .map(|s| offsets[s.task as usize])
            .collect();
        let mut expected: Vec<u64> = offsets
            .iter()
            .enumerate()
            .filter(|(task, _)| task % 3 != 0)
            .map(|(_, &offset)| offset)
            .collect();
        expected.sort();
        assert_eq!(popped, expected);
        assert!(timeouts
            .iter()
            .all(|t| t.heap_index.load(Ordering::Relaxed) == NOT_IN_HEAP));
    }
}
