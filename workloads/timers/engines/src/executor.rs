//! The pool the wheel hands expired tasks to in offload mode. Lettuce 6.3.2's timer task
//! submits the expiry to its `EventExecutorGroup` (Netty's `DefaultEventExecutorGroup`), so
//! this is that group running plain tasks: each task goes to the next executor round-robin,
//! and each executor is one thread taking from its own task queue (with no scheduled tasks,
//! `takeTask` is the queue's `take`).

use std::sync::Arc;
use std::thread::JoinHandle;

use crate::chooser::Chooser;
use crate::task_queue::TaskQueue;
use crate::threads::{self, Callback};

pub(crate) struct OffloadPool<T> {
    queues: Vec<Arc<TaskQueue<T>>>,
    chooser: Chooser,
    threads: Vec<JoinHandle<()>>,
}

impl<T: Send + 'static> OffloadPool<T> {
    /// Starts `threads` threads named `{name}-N` that run `run` on each submitted task.
    pub(crate) fn new(name: &str, threads: usize, run: Callback<T>) -> Self {
        let chooser = Chooser::new(threads);
        let queues: Vec<_> = (0..threads).map(|_| Arc::new(TaskQueue::new())).collect();
        let threads = queues
            .iter()
            .enumerate()
            .map(|(index, queue)| {
                let queue = Arc::clone(queue);
                let run = Arc::clone(&run);
                threads::spawn_named(format!("{name}-{index}"), move || {
                    while let Some(task) = queue.take() {
                        run(task);
                    }
                })
            })
            .collect();
        Self {
            queues,
            chooser,
            threads,
        }
    }
}

impl<T> OffloadPool<T> {
    /// `execute` on the next executor: an offer to its queue, which signals the executor's
    /// thread if that waits on the empty queue.
    pub(crate) fn submit(&self, task: T) {
        if self.queues[self.chooser.next()].offer(task).is_err() {
            unreachable!("the queues close only when the pool is dropped");
        }
    }

    /// Offers that woke a waiting pool thread.
    pub(crate) fn wakeups(&self) -> u64 {
        self.queues.iter().map(|queue| queue.wakeups()).sum()
    }
}

/// Tasks already handed over have expired (their cancel returns false), so the threads
/// run them before exiting rather than dropping them: a closed queue still hands out what
/// it holds.
impl<T> Drop for OffloadPool<T> {
    fn drop(&mut self) {
        self.queues.iter().for_each(|queue| queue.close());
        self.threads.drain(..).for_each(threads::join);
    }
}

#[cfg(test)]
mod tests {
    use super::OffloadPool;
    use std::sync::{Arc, Mutex};

    #[test]
    fn deals_tasks_round_robin_and_runs_all_before_exiting() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        let pool = OffloadPool::new(
            "offload-test",
            3,
            Arc::new(move |task: u32| {
                let name = std::thread::current().name().unwrap().to_owned();
                record.lock().unwrap().push((task, name));
            }),
        );
        (0..30).for_each(|task| pool.submit(task));
        drop(pool);

        let mut seen = seen.lock().unwrap().clone();
        seen.sort();
        assert_eq!(seen.len(), 30);
        for (index, (task, name)) in seen.iter().enumerate() {
            assert_eq!(*task as usize, index);
            assert_eq!(*name, format!("offload-test-{}", task % 3));
        }
    }
}
