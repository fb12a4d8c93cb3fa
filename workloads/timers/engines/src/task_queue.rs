//! An event executor's task queue: Java's `LinkedBlockingQueue`, the queue Netty's
//! `SingleThreadEventExecutor` creates by default. Producers serialise on one lock, the
//! consumer on another, and an atomic count links the two ends: a producer only takes the
//! consumer's lock (`signalNotEmpty`) when its offer found the queue empty.
//!
//! The items between the two ends are a lock-free `SegQueue` rather than a hand-linked
//! list, to stay in safe Rust; its ends are only touched under their lock, as
//! `LinkedBlockingQueue`'s `last` and `head` are. Netty's default capacity is
//! `Integer.MAX_VALUE`, so the queue is unbounded here and its `notFull` side, which nobody
//! waits on, is left out. There is one consumer, the executor thread, so `take`'s signal to
//! further consumers is left out too.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crossbeam_queue::SegQueue;

use crate::padded::Padded;

const POISONED: &str = "task queue lock poisoned";

/// What the producers' lock (`putLock`) guards besides the tail.
struct PutSide {
    /// Set on shutdown: offers are refused from then on (Netty rejects them).
    closed: bool,
}

/// What the consumer's lock (`takeLock`) guards besides the head.
struct TakeSide {
    /// Whether the consumer waits on `not_empty`: Java's condition keeps its waiters in a
    /// list under the lock, and `signal` with nobody waiting does nothing.
    waiting: bool,
    closed: bool,
    /// Signals that found the consumer waiting.
    wakeups: u64,
}

/// The outcome of [`TaskQueue::poll_timeout`].
pub(crate) enum Polled<E> {
    Item(E),
    TimedOut,
    Closed,
}

pub(crate) struct TaskQueue<E> {
    put: Padded<Mutex<PutSide>>,
    take: Padded<Mutex<TakeSide>>,
    /// `notEmpty`, paired with the take lock.
    not_empty: Condvar,
    count: Padded<AtomicUsize>,
    items: SegQueue<E>,
}

impl<E> TaskQueue<E> {
    pub(crate) fn new() -> Self {
        Self {
            put: Padded(Mutex::new(PutSide { closed: false })),
            take: Padded(Mutex::new(TakeSide {
                waiting: false,
                closed: false,
                wakeups: 0,
            })),
            not_empty: Condvar::new(),
            count: Padded(AtomicUsize::new(0)),
            items: SegQueue::new(),
        }
    }

    /// `offer`: appends under the put lock, then, if the queue was empty before, wakes the
    /// consumer under the take lock. Gives the item back once the queue is closed.
    pub(crate) fn offer(&self, item: E) -> Result<(), E> {
        let was = {
            let put = self.put.lock().expect(POISONED);
            if put.closed {
                return Err(item);
            }
            self.items.push(item);
            self.count.fetch_add(1, Ordering::AcqRel)
        };
        if was == 0 {
            self.signal_not_empty();
        }
        Ok(())
    }

    /// `take`: blocks until an item is queued; None once the queue is closed.
    pub(crate) fn take(&self) -> Option<E> {
        let mut take = self.lock_take();
        while self.is_empty() {
            if take.closed {
                return None;
            }
            take = self.wait(take, None);
        }
        Some(self.dequeue(take))
    }

    /// `poll(timeout)`: like [`take`](Self::take), but waits `timeout` at most.
    pub(crate) fn poll_timeout(&self, timeout: Duration) -> Polled<E> {
        let until = Instant::now() + timeout;
        let mut take = self.lock_take();
        while self.is_empty() {
            if take.closed {
                return Polled::Closed;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Polled::TimedOut;
            }
            take = self.wait(take, Some(left));
        }
        Polled::Item(self.dequeue(take))
    }

    /// `poll()`: an item if one is queued, without waiting (and without locking when the
    /// count says the queue is empty).
    pub(crate) fn poll(&self) -> Option<E> {
        if self.is_empty() {
            return None;
        }
        let take = self.lock_take();
        (!self.is_empty()).then(|| self.dequeue(take))
    }

    /// Refuses further offers and makes the consumer's `take` and `poll_timeout` return.
    pub(crate) fn close(&self) {
        self.put.lock().expect(POISONED).closed = true;
        let mut take = self.lock_take();
        take.closed = true;
        self.not_empty.notify_one();
    }

    /// Drops every queued item; for after the consumer has exited.
    pub(crate) fn clear(&self) {
        let _take = self.lock_take();
        while self.items.pop().is_some() {
            self.count.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Signals that woke the waiting consumer.
    pub(crate) fn wakeups(&self) -> u64 {
        self.lock_take().wakeups
    }

    fn is_empty(&self) -> bool {
        self.count.load(Ordering::Acquire) == 0
    }

    /// `signalNotEmpty`.
    fn signal_not_empty(&self) {
        let mut take = self.lock_take();
        if take.waiting {
            take.wakeups += 1;
            self.not_empty.notify_one();
        }
    }

    /// `dequeue` with the count's decrement; the caller saw the count above zero under the
    /// take lock, so the item is there.
    fn dequeue(&self, _take: MutexGuard<'_, TakeSide>) -> E {
        let item = self.items.pop().expect("the count promised a queued item");
        self.count.fetch_sub(1, Ordering::AcqRel);
        item
    }

    /// Waits on `not_empty`, woken by a signal, the timeout or spuriously.
    fn wait<'a>(
        &self,
        mut take: MutexGuard<'a, TakeSide>,
        timeout: Option<Duration>,
    ) -> MutexGuard<'a, TakeSide> {
        take.waiting = true;
        let mut take = match timeout {
            None => self.not_empty.wait(take).expect(POISONED),
            Some(timeout) => {
                self.not_empty
                    .wait_timeout(take, timeout)
                    .expect(POISONED)
                    .0
            }
        };
        take.waiting = false;
        take
    }

    fn lock_take(&self) -> MutexGuard<'_, TakeSide> {
        self.take.lock().expect(POISONED)
    }
}

#[cfg(test)]
mod tests {
    use super::{Polled, TaskQueue};
    use std::sync::Arc;
    use std::thread;
    use std::time::Duration;

    /// Returns once the consumer sleeps on `not_empty`.
    fn until_waiting(queue: &TaskQueue<u32>) {
        while !queue.lock_take().waiting {
            thread::yield_now();
        }
    }

    #[test]
    fn first_in_first_out_without_waiting_when_items_are_there() {
        let queue = TaskQueue::new();
        assert!(queue.poll().is_none());
        assert!(matches!(
            queue.poll_timeout(Duration::from_millis(1)),
            Polled::TimedOut
        ));
        for item in 0..3 {
            queue.offer(item).unwrap();
        }
        assert_eq!(queue.take(), Some(0));
        assert!(matches!(
            queue.poll_timeout(Duration::ZERO),
            Polled::Item(1)
        ));
        assert_eq!(queue.poll(), Some(2));
        assert!(queue.poll().is_none());
        assert_eq!(queue.wakeups(), 0, "nobody was waiting");
    }

    #[test]
    fn an_offer_to_an_empty_queue_wakes_the_waiting_consumer() {
        let queue = Arc::new(TaskQueue::new());
        let consumer = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || queue.take())
        };
        until_waiting(&queue);
        queue.offer(7).unwrap();
        assert_eq!(consumer.join().unwrap(), Some(7));
        assert_eq!(queue.wakeups(), 1);

        // The queue was not empty for the second offer, and nobody waits: no signal.
        queue.offer(8).unwrap();
        queue.offer(9).unwrap();
        assert_eq!(queue.wakeups(), 1);
        assert_eq!(queue.take(), Some(8));
    }

    #[test]
    fn close_releases_the_consumer_and_refuses_offers() {
        let queue = Arc::new(TaskQueue::new());
        let consumer = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || queue.poll_timeout(Duration::from_secs(3600)))
        };
        until_waiting(&queue);
        queue.close();
        assert!(matches!(consumer.join().unwrap(), Polled::Closed));
        assert_eq!(queue.offer(1), Err(1));
        assert_eq!(queue.take(), None);
    }
}
