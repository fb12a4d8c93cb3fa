//! Thread-based timer engines that expire requests the way the Redis client lettuce did
//! before and after its issue #2773. Both engines take absolute deadlines, run one shared
//! expiry callback, and hand out a [`TimerHandle`] whose [`cancel`](TimerHandle::cancel)
//! races the expiry through one compare-and-swap on the timeout's state: a callback runs
//! exactly once for a timeout that was not cancelled first, never for one that was, and
//! never before its deadline.
//!
//! # [`EventExecutorGroup`]: Netty's `DefaultEventExecutorGroup` (lettuce up to 6.3.1)
//!
//! Each `schedule` takes the next executor round-robin. Every executor is one thread with
//! a blocking task queue and a heap of scheduled tasks only that thread touches, so a
//! schedule or a cancel from another thread is a task in the executor's queue; an offer
//! that finds the queue empty wakes the thread.
//!
//! # [`ScheduledExecutor`]: Java's `ScheduledThreadPoolExecutor` (lettuce before 6.3.2)
//!
//! Every timeout goes into one binary min-heap ordered by (deadline, sequence number),
//! guarded by one mutex with one condition variable, as in Java's `DelayedWorkQueue`.
//! Worker threads wait leader/follower style: one leader sleeps until the head's deadline,
//! the others wait without a timeout; inserting a new head and taking a task both signal
//! the condition. Cancel is `cancel(false)` with `removeOnCancel = false`: it only flips
//! the state, the entry stays in the heap, and a worker still pops it at its deadline.
//! Scheduling therefore costs a lock and an `O(log n)` sift per request, and every request
//! costs a worker pop whether it was cancelled or not.
//!
//! # [`HashedWheelTimer`]: Netty's `HashedWheelTimer` (lettuce 6.3.2 and later)
//!
//! Registering and cancelling only push onto lock-free queues. A single worker thread
//! ticks at a fixed rate (100 ms by default); on each tick it unlinks the cancelled
//! timeouts, moves up to 100,000 new ones into a wheel of buckets (512 by default;
//! timeouts further away than one turn wait out `remainingRounds` turns), and expires the
//! current bucket. Expiry is coarse (up to one tick late) and all bucket work happens on
//! one thread. The callback runs on that worker ([`Expiry::OnWorker`]) or, as lettuce
//! 6.3.2 does with its `EventExecutorGroup`, on a small thread pool
//! ([`Expiry::Offload`]).
//!
//! Dropping an engine stops and joins its threads; timeouts still pending are dropped
//! without running.

mod counter;
mod event_executor;
mod executor;
mod handle;
mod hashed_wheel;
mod padded;
mod scheduled_executor;
mod state;
mod threads;

pub use event_executor::EventExecutorGroup;
pub use handle::TimerHandle;
pub use hashed_wheel::{Expiry, HashedWheelTimer, WheelConfig};
pub use scheduled_executor::ScheduledExecutor;
