//! One executor's thread: Netty's `DefaultEventExecutor.run` over
//! `SingleThreadEventExecutor.takeTask`, running `ScheduledFutureTask.run` for each task.
//! It alone owns the executor's heap of scheduled tasks.

use std::sync::Arc;
use std::time::Instant;

use super::scheduled_heap::ScheduledHeap;
use super::{Counters, Scheduled, ScheduledTimeout, Task};
use crate::padded::Padded;
use crate::task_queue::{Polled, TaskQueue};
use crate::threads::Callback;

pub(super) struct ExecutorThread<T> {
    queue: Arc<TaskQueue<Task<T>>>,
    heap: ScheduledHeap<T>,
    on_expire: Callback<T>,
    counters: Arc<Padded<Counters>>,
}

impl<T> ExecutorThread<T> {
    pub(super) fn new(
        queue: Arc<TaskQueue<Task<T>>>,
        on_expire: Callback<T>,
        counters: Arc<Padded<Counters>>,
    ) -> Self {
        Self {
            queue,
            heap: ScheduledHeap::new(),
            on_expire,
            counters,
        }
    }

    /// Runs tasks until the queue is closed, then drops the heap's tasks with `self`.
    pub(super) fn run(mut self) {
        while let Some(task) = self.take_task() {
            self.counters.tasks.inc();
            match task {
                Task::Schedule(scheduled) => {
                    self.counters.registered.inc();
                    self.run_scheduled(scheduled);
                }
                Task::Due(scheduled) => self.run_scheduled(scheduled),
                Task::Remove(timeout) => self.remove_cancelled(&timeout),
            }
        }
    }

    /// `takeTask`: with no scheduled task, waits for a queued one; otherwise waits for one
    /// until the earliest deadline at most, and when none came, moves the due tasks into
    /// the queue behind those already there and takes the first. Only the queue's own
    /// signal (an offer finding it empty) wakes the thread early: `DefaultEventExecutor`
    /// sets `addTaskWakesUp`, so `execute` sends no wake-up task of its own.
    fn take_task(&mut self) -> Option<Task<T>> {
        loop {
            let Some(deadline) = self.heap.next_deadline() else {
                return self.queue.take();
            };
            let delay = deadline.saturating_duration_since(Instant::now());
            if !delay.is_zero() {
                match self.queue.poll_timeout(delay) {
                    Polled::Item(task) => return Some(task),
                    Polled::Closed => return None,
                    Polled::TimedOut => {}
                }
            }
            self.fetch_due();
            if let Some(task) = self.queue.poll() {
                return Some(task);
            }
        }
    }

    /// `fetchFromScheduledTaskQueue`: the due tasks go through the task queue too.
    fn fetch_due(&mut self) {
        let now = Instant::now();
        while let Some(scheduled) = self.heap.pop_due(now) {
            if self.queue.offer(Task::Due(scheduled)).is_err() {
                // Closed: the thread is about to exit and drop what is pending.
                return;
            }
        }
    }

    /// `ScheduledFutureTask.run`: a task not due yet goes into the heap (unless it was
    /// cancelled meanwhile); a due one expires unless cancelled first.
    fn run_scheduled(&mut self, scheduled: Scheduled<T>) {
        let timeout = &scheduled.timeout;
        if Instant::now() < timeout.deadline {
            if timeout.state.is_cancelled() {
                self.counters.discarded.inc();
            } else {
                self.heap.push(scheduled);
            }
        } else if timeout.state.try_expire() {
            (self.on_expire)(scheduled.task);
            self.counters.fired.inc();
        } else {
            self.counters.discarded.inc();
        }
    }

    /// `ScheduledFutureTask.run` of a cancelled task that `removeScheduled` handed over:
    /// removed from the heap while not due yet. A due one is left there, to be moved out
    /// and discarded like any cancelled task found due.
    fn remove_cancelled(&mut self, timeout: &Arc<ScheduledTimeout>) {
        self.counters.cancelled.inc();
        if Instant::now() < timeout.deadline && self.heap.remove(timeout).is_some() {
            self.counters.removed.inc();
        }
    }
}
