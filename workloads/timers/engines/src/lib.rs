//! Thread-based timer engines that expire requests the way the Redis client lettuce did
//! before and after its issue #2773, and Java's scheduled executor for comparison. All take
//! absolute deadlines, run one shared expiry callback, and hand out a [`TimerHandle`] whose
//! [`cancel`](TimerHandle::cancel) races the expiry through one compare-and-swap on the
//! timeout's state: a callback runs exactly once for a timeout that was not cancelled
//! first, never for one that was, and never before its deadline.
//!
//! # [`EventExecutorGroup`]: Netty's `DefaultEventExecutorGroup` (lettuce up to 6.3.1)
//!
//! Lettuce scheduled each command's expiry on its event executor group. Each `schedule`
//! takes the next executor round-robin (one shared atomic index). Every executor is one
//! thread with a blocking task queue (Java's `LinkedBlockingQueue`: one lock for producers,
//! one for the consumer) and a heap of scheduled tasks only that thread touches. So a
//! schedule from another thread is a task in the executor's queue that adds the timeout
//! to the heap, and a cancel is a task that removes it. The thread waits on its queue until
//! the earliest deadline; an offer that finds the queue empty signals it. Due timeouts are
//! moved from the heap through the queue and expire on the executor thread. Scheduling and
//! cancelling each cost a lock and often a cross-thread wake-up.
//!
//! # [`HashedWheelTimer`]: Netty's `HashedWheelTimer` (lettuce 6.3.2 and later)
//!
//! Registering bumps one shared pending count and, like cancelling, pushes onto a
//! lock-free queue. A single worker thread ticks at a fixed rate (100 ms by default); on
//! each tick it unlinks the cancelled timeouts, moves up to 100,000 new ones into a wheel
//! of buckets (512 by default; timeouts further away than one turn wait out
//! `remainingRounds` turns), and expires the current bucket. Expiry is coarse (up to one
//! tick late) and all bucket work happens on one thread. Lettuce 6.3.2's timer task only
//! submits the expiry to its event executor group: [`Expiry::Offload`] hands it to a pool
//! built like that group (the same chooser and task queues). [`Expiry::OnWorker`] runs it
//! on the worker, as a plain Netty `TimerTask` would, for reference.
//!
//! # [`ScheduledExecutor`]: Java's `ScheduledThreadPoolExecutor` (for comparison)
//!
//! Not what lettuce used, but the textbook scheduled executor. Every timeout goes into one
//! binary min-heap ordered by (deadline, sequence number), guarded by one mutex with one
//! condition variable, as in Java's `DelayedWorkQueue`. Worker threads wait
//! leader/follower style: one leader sleeps until the head's deadline, the others wait
//! without a timeout; inserting a new head and taking a task both signal the condition.
//! Cancel is `cancel(false)` with `removeOnCancel = false`: it only flips the state, the
//! entry stays in the heap, and a worker still pops it at its deadline. Scheduling
//! therefore costs a lock and an `O(log n)` sift per request, and every request costs a
//! worker pop whether it was cancelled or not.
//!
//! Dropping an engine stops and joins its threads; timeouts still pending are dropped
//! without running.

mod chooser;
mod counter;
mod event_executor;
mod executor;
mod handle;
mod hashed_wheel;
mod padded;
mod scheduled_executor;
mod state;
mod task_queue;
mod threads;

pub use event_executor::EventExecutorGroup;
pub use handle::TimerHandle;
pub use hashed_wheel::{Expiry, HashedWheelTimer, WheelConfig};
pub use scheduled_executor::ScheduledExecutor;
