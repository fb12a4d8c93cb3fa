//! The pool the wheel hands expired tasks to in offload mode, shaped like lettuce's
//! `EventExecutorGroup` (Netty's `DefaultEventExecutorGroup`): one thread per executor,
//! each draining its own blocking queue, with tasks dealt out round-robin.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use crate::counter::Counter;
use crate::threads::{self, Callback};

struct Lane<T> {
    queue: Mutex<LaneQueue<T>>,
    not_empty: Condvar,
    wakeups: Arc<Counter>,
}

struct LaneQueue<T> {
    tasks: VecDeque<T>,
    closed: bool,
}

pub(crate) struct OffloadPool<T> {
    lanes: Vec<Arc<Lane<T>>>,
    /// Netty's executor chooser; only the wheel worker submits, so no atomic is needed.
    next: usize,
    threads: Vec<JoinHandle<()>>,
}

impl<T: Send + 'static> OffloadPool<T> {
    /// Starts `threads` threads named `{name}-N` that run `run` on each submitted task and
    /// count their returns from waiting in `wakeups`.
    pub(crate) fn new(name: &str, threads: usize, run: Callback<T>, wakeups: Arc<Counter>) -> Self {
        assert!(threads > 0, "an offload pool needs at least one thread");
        let lanes: Vec<_> = (0..threads)
            .map(|_| {
                Arc::new(Lane {
                    queue: Mutex::new(LaneQueue {
                        tasks: VecDeque::new(),
                        closed: false,
                    }),
                    not_empty: Condvar::new(),
                    wakeups: Arc::clone(&wakeups),
                })
            })
            .collect();
        let threads = lanes
            .iter()
            .enumerate()
            .map(|(index, lane)| {
                let lane = Arc::clone(lane);
                let run = Arc::clone(&run);
                threads::spawn_named(format!("{name}-{index}"), move || {
                    while let Some(task) = lane.take() {
                        run(task);
                    }
                })
            })
            .collect();
        Self {
            lanes,
            next: 0,
            threads,
        }
    }
}

impl<T> OffloadPool<T> {
    pub(crate) fn submit(&mut self, task: T) {
        let lane = &self.lanes[self.next];
        self.next = (self.next + 1) % self.lanes.len();
        lane.put(task);
    }
}

impl<T> Lane<T> {
    /// `LinkedBlockingQueue.put`: signals only when the queue was empty, since a
    /// non-empty queue means its one consumer is not waiting.
    fn put(&self, task: T) {
        let mut queue = self.lock();
        queue.tasks.push_back(task);
        if queue.tasks.len() == 1 {
            self.not_empty.notify_one();
        }
    }

    /// Blocks for the next task; None once the lane is closed and drained.
    fn take(&self) -> Option<T> {
        let mut queue = self.lock();
        loop {
            if let Some(task) = queue.tasks.pop_front() {
                return Some(task);
            }
            if queue.closed {
                return None;
            }
            queue = self
                .not_empty
                .wait(queue)
                .expect("offload lane lock poisoned");
            self.wakeups.inc();
        }
    }

    fn close(&self) {
        self.lock().closed = true;
        self.not_empty.notify_one();
    }

    fn lock(&self) -> MutexGuard<'_, LaneQueue<T>> {
        self.queue.lock().expect("offload lane lock poisoned")
    }
}

/// Tasks already handed over have expired (their cancel returns false), so the threads
/// run them before exiting rather than dropping them.
impl<T> Drop for OffloadPool<T> {
    fn drop(&mut self) {
        self.lanes.iter().for_each(|lane| lane.close());
        self.threads.drain(..).for_each(threads::join);
    }
}

#[cfg(test)]
mod tests {
    use super::OffloadPool;
    use crate::counter::Counter;
    use std::sync::{Arc, Mutex};

    #[test]
    fn deals_tasks_round_robin_and_runs_all_before_exiting() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        let mut pool = OffloadPool::new(
            "offload-test",
            3,
            Arc::new(move |task: u32| {
                let name = std::thread::current().name().unwrap().to_owned();
                record.lock().unwrap().push((task, name));
            }),
            Arc::new(Counter::default()),
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
