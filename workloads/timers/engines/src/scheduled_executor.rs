//! Java's `ScheduledThreadPoolExecutor`, for comparison with lettuce's engines (lettuce
//! itself scheduled on Netty's executors, see `event_executor`): `schedule(expiry,
//! timeout)` per request, `cancel(false)` on completion, default `removeOnCancel = false`.

mod delay_queue;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use crate::counter::Counter;
use crate::handle::TimerHandle;
use crate::state::TimeoutState;
use crate::threads::{self, Callback};
use delay_queue::{DelayQueue, Scheduled};

#[derive(Debug, Default)]
struct Counters {
    registered: Counter,
    cancelled: Counter,
    fired: Counter,
    popped_cancelled: Counter,
}

/// A delay queue drained by `threads` worker threads named `sched-exec-N`.
pub struct ScheduledExecutor<T> {
    queue: Arc<DelayQueue<T>>,
    /// Java's `sequencer`, taken outside the queue lock.
    sequencer: AtomicU64,
    counters: Arc<Counters>,
    workers: Vec<JoinHandle<()>>,
}

impl<T: Send + 'static> ScheduledExecutor<T> {
    /// Starts `threads` workers that call `on_expire` with each task whose deadline passed
    /// and that was not cancelled.
    ///
    /// # Panics
    /// If `threads` is zero.
    pub fn new(threads: usize, on_expire: impl Fn(T) + Send + Sync + 'static) -> Self {
        assert!(
            threads > 0,
            "a scheduled executor needs at least one thread"
        );
        let queue = Arc::new(DelayQueue::new());
        let counters = Arc::new(Counters::default());
        let on_expire: Callback<T> = Arc::new(on_expire);
        let workers = (0..threads)
            .map(|worker| {
                let queue = Arc::clone(&queue);
                let counters = Arc::clone(&counters);
                let on_expire = Arc::clone(&on_expire);
                threads::spawn_named(format!("sched-exec-{worker}"), move || {
                    work(&queue, worker, &*on_expire, &counters)
                })
            })
            .collect();
        Self {
            queue,
            sequencer: AtomicU64::new(0),
            counters,
            workers,
        }
    }

    /// Schedules `task` to expire at `deadline` (Java's `schedule` -> `delayedExecute`).
    pub fn schedule(&self, deadline: Instant, task: T) -> TimerHandle {
        let state = Arc::new(TimeoutState::new());
        self.counters.registered.inc();
        self.queue.offer(Scheduled {
            deadline,
            seq: self.sequencer.fetch_add(1, Ordering::Relaxed),
            state: Arc::clone(&state),
            task,
        });
        ExecutorCancel {
            state,
            counters: Arc::clone(&self.counters),
        }
        .into()
    }

    /// `registered`, `cancelled`, `fired`, `signals`, `worker_wakeups`, `popped_cancelled`.
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("registered", self.counters.registered.get()),
            ("cancelled", self.counters.cancelled.get()),
            ("fired", self.counters.fired.get()),
            ("signals", self.queue.signals()),
            ("worker_wakeups", self.queue.wakeups()),
            ("popped_cancelled", self.counters.popped_cancelled.get()),
        ]
    }
}

/// A worker's loop: Java's `ThreadPoolExecutor.runWorker` over `DelayedWorkQueue.take`.
/// Cancelled entries come out at their deadline like any other and are discarded here.
fn work<T>(queue: &DelayQueue<T>, worker: usize, on_expire: &dyn Fn(T), counters: &Counters) {
    while let Some(entry) = queue.take(worker) {
        if entry.state.try_expire() {
            on_expire(entry.task);
            counters.fired.inc();
        } else {
            counters.popped_cancelled.inc();
        }
    }
}

impl<T> Drop for ScheduledExecutor<T> {
    fn drop(&mut self) {
        self.queue.shutdown();
        self.workers.drain(..).for_each(threads::join);
    }
}

/// Java's `cancel(false)` with `removeOnCancel = false`: flips the state and leaves the
/// entry in the heap, so no lock is taken.
#[derive(Clone, Debug)]
pub(crate) struct ExecutorCancel {
    state: Arc<TimeoutState>,
    counters: Arc<Counters>,
}

impl ExecutorCancel {
    pub(crate) fn cancel(&self) -> bool {
        let cancelled = self.state.try_cancel();
        if cancelled {
            self.counters.cancelled.inc();
        }
        cancelled
    }
}
