//! Java's `DelayedWorkQueue`: a binary min-heap behind one lock and one condition, drained
//! by leader/follower workers.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::counter::Counter;
use crate::state::TimeoutState;

/// A heap entry: Java's `ScheduledFutureTask` without the periodic parts.
pub(super) struct Scheduled<T> {
    pub(super) deadline: Instant,
    /// Breaks deadline ties first-in first-out, like Java's `sequenceNumber`.
    pub(super) seq: u64,
    pub(super) state: Arc<TimeoutState>,
    pub(super) task: T,
}

impl<T> Scheduled<T> {
    fn key(&self) -> (Instant, u64) {
        (self.deadline, self.seq)
    }
}

impl<T> Ord for Scheduled<T> {
    /// Reversed, because `BinaryHeap` keeps its greatest element on top.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key().cmp(&self.key())
    }
}

impl<T> PartialOrd for Scheduled<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> PartialEq for Scheduled<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl<T> Eq for Scheduled<T> {}

struct Inner<T> {
    heap: BinaryHeap<Scheduled<T>>,
    /// The worker waiting for the head's deadline (Java's `leader` thread).
    leader: Option<usize>,
    shutdown: bool,
}

pub(super) struct DelayQueue<T> {
    inner: Mutex<Inner<T>>,
    /// Java's `available` condition.
    available: Condvar,
    signals: Counter,
    wakeups: Counter,
}

impl<T> DelayQueue<T> {
    pub(super) fn new() -> Self {
        Self {
            inner: Mutex::new(Inner {
                heap: BinaryHeap::new(),
                leader: None,
                shutdown: false,
            }),
            available: Condvar::new(),
            signals: Counter::default(),
            wakeups: Counter::default(),
        }
    }

    /// Java's `offer`: a new head invalidates the leader's timed wait, so the leader
    /// role is reset and one waiter is woken to re-arm for the earlier deadline.
    pub(super) fn offer(&self, entry: Scheduled<T>) {
        let seq = entry.seq;
        let mut inner = self.lock();
        inner.heap.push(entry);
        if inner.heap.peek().map(|head| head.seq) == Some(seq) {
            inner.leader = None;
            self.signal();
        }
    }

    /// Java's `take`: blocks until the head is due and pops it; None once shut down.
    /// `worker` identifies the caller for the leader role.
    pub(super) fn take(&self, worker: usize) -> Option<Scheduled<T>> {
        let mut inner = self.lock();
        let taken = loop {
            if inner.shutdown {
                break None;
            }
            let Some(deadline) = inner.heap.peek().map(|head| head.deadline) else {
                inner = self.wait(inner, None);
                continue;
            };
            let now = Instant::now();
            if deadline <= now {
                break inner.heap.pop();
            }
            if inner.leader.is_some() {
                // A follower: the leader wakes up for the head, so wait without a timeout.
                inner = self.wait(inner, None);
            } else {
                inner.leader = Some(worker);
                inner = self.wait(inner, Some(deadline - now));
                if inner.leader == Some(worker) {
                    inner.leader = None;
                }
            }
        };
        // Java's `finally` block: with no leader left, hand the role to a follower.
        if inner.leader.is_none() && !inner.heap.is_empty() {
            self.signal();
        }
        taken
    }

    /// Makes every `take` return None. Entries still queued are dropped with the queue.
    pub(super) fn shutdown(&self) {
        self.lock().shutdown = true;
        self.available.notify_all();
    }

    /// Condition signals sent (by `offer` and by `take`).
    pub(super) fn signals(&self) -> u64 {
        self.signals.get()
    }

    /// Returns from a condition wait: signalled, timed out or spurious.
    pub(super) fn wakeups(&self) -> u64 {
        self.wakeups.get()
    }

    fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        self.inner.lock().expect("delay queue lock poisoned")
    }

    /// Signals while holding the lock, as Java does.
    fn signal(&self) {
        self.signals.inc();
        self.available.notify_one();
    }

    fn wait<'a>(
        &self,
        guard: MutexGuard<'a, Inner<T>>,
        timeout: Option<Duration>,
    ) -> MutexGuard<'a, Inner<T>> {
        const POISONED: &str = "delay queue lock poisoned";
        let guard = match timeout {
            None => self.available.wait(guard).expect(POISONED),
            Some(timeout) => {
                self.available
                    .wait_timeout(guard, timeout)
                    .expect(POISONED)
                    .0
            }
        };
        self.wakeups.inc();
        guard
    }
}

#[cfg(test)]
mod tests {
    use super::{DelayQueue, Scheduled};
    use crate::state::TimeoutState;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    fn entry(deadline: Instant, seq: u64) -> Scheduled<u64> {
        Scheduled {
            deadline,
            seq,
            state: Arc::new(TimeoutState::new()),
            task: seq,
        }
    }

    #[test]
    fn pops_by_deadline_then_sequence() {
        let queue = DelayQueue::new();
        let base = Instant::now() - Duration::from_secs(1);
        queue.offer(entry(base + Duration::from_millis(2), 0));
        queue.offer(entry(base + Duration::from_millis(1), 1));
        queue.offer(entry(base + Duration::from_millis(2), 2));
        queue.offer(entry(base, 3));
        let order: Vec<u64> = (0..4).map(|_| queue.take(0).unwrap().task).collect();
        assert_eq!(order, [3, 1, 0, 2]);
    }

    #[test]
    fn offer_signals_only_a_new_head() {
        let queue = DelayQueue::new();
        let later = Instant::now() + Duration::from_secs(60);
        queue.offer(entry(later, 0));
        assert_eq!(queue.signals(), 1);
        queue.offer(entry(later + Duration::from_secs(1), 1));
        assert_eq!(queue.signals(), 1);
        queue.offer(entry(later - Duration::from_secs(1), 2));
        assert_eq!(queue.signals(), 2);
    }

    #[test]
    fn take_waits_for_the_deadline_and_shutdown_releases_waiters() {
        let queue = Arc::new(DelayQueue::new());
        let deadline = Instant::now() + Duration::from_millis(30);
        queue.offer(entry(deadline, 0));
        let taken = queue.take(0).unwrap();
        assert!(Instant::now() >= taken.deadline);
        assert!(queue.wakeups() >= 1);

        queue.offer(entry(Instant::now() + Duration::from_secs(60), 1));
        let waiters: Vec<_> = (0..2)
            .map(|worker| {
                let queue = Arc::clone(&queue);
                std::thread::spawn(move || queue.take(worker).is_none())
            })
            .collect();
        queue.shutdown();
        for waiter in waiters {
            assert!(waiter.join().unwrap());
        }
    }
}
