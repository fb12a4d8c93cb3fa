//! The wheel's worker thread: Netty's `HashedWheelTimer.Worker`. It alone owns the buckets.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_queue::SegQueue;

use super::buckets::Buckets;
use super::{Core, Pending, WheelConfig, WheelTimeout, NOT_IN_BUCKET};
use crate::executor::OffloadPool;
use crate::threads::Callback;

pub(super) enum Expirer<T> {
    OnWorker(Callback<T>),
    Offload(Arc<OffloadPool<T>>),
}

/// A timeout in a bucket. Times are nanoseconds since the wheel started, like Netty's.
struct Entry<T> {
    deadline: u64,
    remaining_rounds: u64,
    timeout: Arc<WheelTimeout>,
    task: T,
}

pub(super) struct Worker<T> {
    start: Instant,
    tick_nanos: u64,
    wheel_len: u64,
    mask: u64,
    max_transfers: usize,
    /// The tick being processed; its bucket is `tick & mask`.
    tick: u64,
    buckets: Buckets<Entry<T>>,
    new_timeouts: Arc<SegQueue<Pending<T>>>,
    core: Arc<Core>,
    expirer: Expirer<T>,
}

impl<T> Worker<T> {
    pub(super) fn new(
        config: &WheelConfig,
        start: Instant,
        new_timeouts: Arc<SegQueue<Pending<T>>>,
        core: Arc<Core>,
        expirer: Expirer<T>,
    ) -> Self {
        let wheel_len = config.wheel_size.next_power_of_two();
        Self {
            start,
            tick_nanos: nanos(config.tick),
            wheel_len: wheel_len as u64,
            mask: wheel_len as u64 - 1,
            max_transfers: config.max_transfers_per_tick,
            tick: 0,
            buckets: Buckets::new(wheel_len),
            new_timeouts,
            core,
            expirer,
        }
    }

    /// Runs ticks until the timer is dropped, then drops every pending task with `self`.
    pub(super) fn run(mut self) {
        while let Some(now) = self.wait_for_next_tick() {
            // Netty's order: cancellations first, so a timeout cancelled before its
            // transfer is skipped there; new timeouts next, so one due this tick expires now.
            let bucket = (self.tick & self.mask) as usize;
            self.process_cancelled();
            self.transfer_new_timeouts();
            self.expire_bucket(bucket, now);
            self.tick += 1;
            self.core.counters.ticks.inc();
        }
    }

    /// Netty's `waitForNextTick`: sleeps until `start + tick_duration * (tick + 1)` and
    /// returns the time since start, or None once the timer is dropped. Netty sleeps whole
    /// milliseconds (rounded up); parking wakes closer to the tick.
    fn wait_for_next_tick(&self) -> Option<u64> {
        let target =
            self.start + Duration::from_nanos(self.tick_nanos.saturating_mul(self.tick + 1));
        loop {
            if self.core.stopped.load(Ordering::Acquire) {
                return None;
            }
            let now = Instant::now();
            if now >= target {
                return Some(since(self.start, now));
            }
            thread::park_timeout(target - now);
        }
    }

    /// Netty's `processCancelledTasks`: unlinks timeouts cancelled since the last tick.
    /// Ones not transferred yet are skipped by the transfer instead; ones the bucket scan
    /// already unlinked have their slot reset, so a reused slab key is never hit.
    fn process_cancelled(&mut self) {
        while let Some(timeout) = self.core.cancelled.pop() {
            self.core.counters.cancelled.inc();
            let key = timeout.slot.load(Ordering::Relaxed);
            if key != NOT_IN_BUCKET {
                debug_assert!(Arc::ptr_eq(&self.buckets.get(key).timeout, &timeout));
                self.unlink(key);
                self.core.counters.cancelled_unlinked.inc();
            }
        }
    }

    /// Netty's `transferTimeoutsToBuckets`.
    fn transfer_new_timeouts(&mut self) {
        for _ in 0..self.max_transfers {
            let Some(pending) = self.new_timeouts.pop() else {
                return;
            };
            if pending.timeout.state.is_cancelled() {
                self.core.retire();
                continue;
            }
            let deadline = since(self.start, pending.deadline);
            let calculated = deadline / self.tick_nanos;
            // Netty divides (calculated - tick) signed; a past deadline gives <= 0 rounds,
            // which saturating at 0 reproduces.
            let remaining_rounds = calculated.saturating_sub(self.tick) / self.wheel_len;
            // A deadline already passed goes into the current bucket, never a past one.
            let bucket = (calculated.max(self.tick) & self.mask) as usize;
            let key = self.buckets.push_back(
                bucket,
                Entry {
                    deadline,
                    remaining_rounds,
                    timeout: pending.timeout,
                    task: pending.task,
                },
            );
            self.buckets
                .get(key)
                .timeout
                .slot
                .store(key, Ordering::Relaxed);
            self.core.counters.transferred.inc();
        }
    }

    /// Netty's `HashedWheelBucket.expireTimeouts`.
    fn expire_bucket(&mut self, bucket: usize, now: u64) {
        let mut cursor = self.buckets.first(bucket);
        while let Some(key) = cursor {
            cursor = self.buckets.next(key);
            let entry = self.buckets.get_mut(key);
            if entry.remaining_rounds == 0 {
                let entry = self.unlink(key);
                // Netty throws IllegalStateException here: the transfer misplaced it.
                assert!(
                    entry.deadline <= now,
                    "timeout deadline ({}) > tick deadline ({now})",
                    entry.deadline
                );
                self.expire(entry);
            } else if entry.timeout.state.is_cancelled() {
                self.unlink(key);
                self.core.counters.cancelled_unlinked.inc();
            } else {
                entry.remaining_rounds -= 1;
            }
        }
    }

    /// Netty's `HashedWheelTimeout.expire`: the state CAS settles a concurrent cancel.
    fn expire(&mut self, entry: Entry<T>) {
        if !entry.timeout.state.try_expire() {
            self.core.counters.cancelled_unlinked.inc();
            return;
        }
        self.core.counters.fired.inc();
        match &self.expirer {
            Expirer::OnWorker(fire) => fire(entry.task),
            Expirer::Offload(pool) => pool.submit(entry.task),
        }
    }

    /// Takes a timeout out of its bucket for good: it is expiring or was cancelled.
    fn unlink(&mut self, key: usize) -> Entry<T> {
        let entry = self.buckets.remove(key);
        entry.timeout.slot.store(NOT_IN_BUCKET, Ordering::Relaxed);
        self.core.retire();
        entry
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// Nanoseconds from `start` to `instant`; 0 for an instant before `start`.
fn since(start: Instant, instant: Instant) -> u64 {
    nanos(instant.saturating_duration_since(start))
}
