//! Netty's `DefaultEventExecutorGroup` as lettuce up to 6.3.1 expires commands on it:
//! `schedule(expiry, timeout)` per command on `ClientResources.eventExecutorGroup()`, and
//! `cancel(false)` on completion.
//!
//! Each `schedule` picks the next executor round-robin. Every executor is one thread with
//! a blocking task queue and a heap of scheduled tasks that only its thread touches, so a
//! schedule from another thread is a task in that queue ("add me to your heap"), and so is
//! a cancel ("remove me"). The thread waits on its queue until the earliest deadline; an
//! offer that finds the queue empty wakes it.

mod executor_thread;
mod scheduled_heap;

use std::fmt;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use crate::chooser::Chooser;
use crate::counter::OwnedCounter;
use crate::handle::TimerHandle;
use crate::padded::Padded;
use crate::state::TimeoutState;
use crate::task_queue::TaskQueue;
use crate::threads::{self, Callback};
use executor_thread::ExecutorThread;

/// What the scheduling and cancelling threads and the executor share about one timeout:
/// Netty's `ScheduledFutureTask` minus the task.
pub(crate) struct ScheduledTimeout {
    deadline: Instant,
    state: TimeoutState,
    /// Netty's `queueIndex`: the position in the executor's heap, or [`NOT_IN_HEAP`]. Only
    /// the executor thread reads or writes it; it is atomic only to be `Sync`.
    heap_index: AtomicUsize,
    /// The executor's queue, for the removal a successful cancel hands over. Unlike Java's
    /// reference to the executor, the `Arc` costs a shared reference-count update per
    /// timeout made and dropped.
    removals: Arc<dyn RemovalQueue>,
}

const NOT_IN_HEAP: usize = usize::MAX;

/// A task and its timeout, on its way to or in an executor's heap.
struct Scheduled<T> {
    timeout: Arc<ScheduledTimeout>,
    task: T,
}

/// What goes through an executor's task queue. Netty queues the `ScheduledFutureTask`
/// itself each time, whose `run` then does one of these depending on its state.
enum Task<T> {
    /// Scheduled from another thread: into the heap, or run at once if already due.
    Schedule(Scheduled<T>),
    /// Moved out of the heap because its deadline passed.
    Due(Scheduled<T>),
    /// Cancelled from another thread: out of the heap.
    Remove(Arc<ScheduledTimeout>),
}

/// An executor's task queue with its task type erased, as a cancel sees it.
trait RemovalQueue: Send + Sync {
    fn hand_over(&self, timeout: Arc<ScheduledTimeout>);
}

impl<T: Send> RemovalQueue for TaskQueue<Task<T>> {
    /// `removeScheduled` from outside the executor: `lazyExecute`, which for a
    /// `DefaultEventExecutor` offers like `execute` does (the queue's own signal only).
    fn hand_over(&self, timeout: Arc<ScheduledTimeout>) {
        // Refused once the group is shut down, when nobody would remove it anyway.
        let _refused = self.offer(Task::Remove(timeout));
    }
}

/// One executor's counts; only its thread bumps them, so they get cache lines of their own.
#[derive(Debug, Default)]
struct Counters {
    registered: OwnedCounter,
    cancelled: OwnedCounter,
    fired: OwnedCounter,
    /// Tasks taken from the queue: schedules, cancels and due tasks.
    tasks: OwnedCounter,
    /// Cancelled tasks taken out of the heap before their deadline.
    removed: OwnedCounter,
    /// Cancelled tasks dropped when run: cancelled before they reached the heap, or
    /// found due before their removal.
    discarded: OwnedCounter,
}

/// A group of `threads` executors, threads named `event-exec-N`.
pub struct EventExecutorGroup<T> {
    queues: Vec<Arc<TaskQueue<Task<T>>>>,
    counters: Vec<Arc<Padded<Counters>>>,
    chooser: Chooser,
    threads: Vec<JoinHandle<()>>,
}

impl<T: Send + 'static> EventExecutorGroup<T> {
    /// Starts `threads` executors (lettuce's default: one per available processor) that
    /// call `on_expire` with each task whose deadline passed and that was not cancelled.
    ///
    /// # Panics
    /// If `threads` is zero.
    pub fn new(threads: usize, on_expire: impl Fn(T) + Send + Sync + 'static) -> Self {
        let chooser = Chooser::new(threads);
        let on_expire: Callback<T> = Arc::new(on_expire);
        let queues: Vec<_> = (0..threads).map(|_| Arc::new(TaskQueue::new())).collect();
        let counters: Vec<_> = (0..threads).map(|_| Arc::new(Padded::default())).collect();
        let threads = queues
            .iter()
            .zip(&counters)
            .enumerate()
            .map(|(index, (queue, counters))| {
                let executor = ExecutorThread::new(
                    Arc::clone(queue),
                    Arc::clone(&on_expire),
                    Arc::clone(counters),
                );
                threads::spawn_named(format!("event-exec-{index}"), move || executor.run())
            })
            .collect();
        Self {
            queues,
            counters,
            chooser,
            threads,
        }
    }

    /// Schedules `task` to expire at `deadline` on the next executor (Netty's
    /// `schedule` from outside the executor: `execute` of the new task).
    pub fn schedule(&self, deadline: Instant, task: T) -> TimerHandle {
        let queue = &self.queues[self.chooser.next()];
        let timeout = Arc::new(ScheduledTimeout {
            deadline,
            state: TimeoutState::new(),
            heap_index: AtomicUsize::new(NOT_IN_HEAP),
            removals: Arc::clone(queue) as Arc<dyn RemovalQueue>,
        });
        let scheduled = Scheduled {
            timeout: Arc::clone(&timeout),
            task,
        };
        if queue.offer(Task::Schedule(scheduled)).is_err() {
            unreachable!("the queues close only when the group is dropped");
        }
        EventCancel(timeout).into()
    }
}

impl<T> EventExecutorGroup<T> {
    /// Summed over the executors: `registered`, `cancelled`, `fired`, `tasks`, `wakeups`
    /// (offers that woke a waiting executor), `removed`, `discarded`.
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        let sum = |count: fn(&Counters) -> &OwnedCounter| -> u64 {
            self.counters.iter().map(|c| count(c).get()).sum()
        };
        vec![
            ("registered", sum(|c| &c.registered)),
            ("cancelled", sum(|c| &c.cancelled)),
            ("fired", sum(|c| &c.fired)),
            ("tasks", sum(|c| &c.tasks)),
            ("wakeups", self.queues.iter().map(|q| q.wakeups()).sum()),
            ("removed", sum(|c| &c.removed)),
            ("discarded", sum(|c| &c.discarded)),
        ]
    }
}

impl<T> Drop for EventExecutorGroup<T> {
    fn drop(&mut self) {
        self.queues.iter().for_each(|queue| queue.close());
        self.threads.drain(..).for_each(threads::join);
        // Handles keep the queues alive; drop the tasks still queued now, not with them.
        self.queues.iter().for_each(|queue| queue.clear());
    }
}

/// Netty's `ScheduledFutureTask.cancel` from outside the executor: claim the state, then
/// hand the removal to the executor through its task queue.
#[derive(Clone)]
pub(crate) struct EventCancel(Arc<ScheduledTimeout>);

impl EventCancel {
    pub(crate) fn cancel(&self) -> bool {
        if !self.0.state.try_cancel() {
            return false;
        }
        self.0.removals.hand_over(Arc::clone(&self.0));
        true
    }
}

impl fmt::Debug for EventCancel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventCancel")
            .field("deadline", &self.0.deadline)
            .field("state", &self.0.state)
            .finish_non_exhaustive()
    }
}
