//! One timer per connection that any thread can arm to an earlier deadline.
//!
//! Wrapping every request in `tokio::time::timeout` registers and cancels one
//! timer entry per request under the timer driver's mutex. Instead, the
//! connection's router task owns a single [`ArmableTimer`]; its writer lowers
//! the deadline through an [`ArmHandle`] (which any thread may hold) only when
//! a request it allocates brings the earliest in-flight deadline forward, so
//! the underlying tokio `Sleep` is reset about once per expiry batch rather
//! than once per request.
//!
//! The armed deadline lives in an atomic (nanoseconds since the timer's epoch,
//! [`u64::MAX`] when unarmed) next to a waker slot. The router registers its
//! waker *before* reading the deadline, and after resetting the `Sleep` it polls
//! it in the same call, so neither a concurrent `arm` nor a deadline that has
//! already passed can leave the router waiting for a wake-up that never comes
//! (the bug found in review of scylla-rust-driver PR #564).

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::PoisonError;
use std::task::{ready, Context, Poll, Waker};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

// std's in the library; the loom model (tests/loom_armable_timer.rs) compiles this file
// with loom's as `crate::sync`.
use crate::sync::{Arc, AtomicU64, Mutex, Ordering};

/// The armed deadline of an unarmed timer.
const UNARMED: u64 = u64::MAX;

/// The sleeping half of an [`ArmableTimer`]: tokio's `Sleep` in production
/// ([`TokioSleep`]); the loom model plugs in a clock of its own.
pub trait Sleeper {
    /// Makes the sleep elapse at `deadline`.
    fn reset(&mut self, deadline: Instant);
    /// Ready once the deadline of the last [`reset`](Sleeper::reset) has
    /// passed; otherwise Pending, and `cx` is woken when it passes.
    /// Only called after a `reset`.
    fn poll_sleep(&mut self, cx: &mut Context<'_>) -> Poll<()>;
    /// The current time of the clock the sleep follows.
    fn now(&self) -> Instant;
}

/// The production [`Sleeper`]: a single tokio `Sleep`, created by the first
/// reset (which runs inside the runtime) and reset in place afterwards.
pub struct TokioSleep {
    sleep: Option<Pin<Box<Sleep>>>,
}

impl Sleeper for TokioSleep {
    fn reset(&mut self, deadline: Instant) {
        match &mut self.sleep {
            Some(sleep) => sleep.as_mut().reset(deadline),
            None => self.sleep = Some(Box::pin(tokio::time::sleep_until(deadline))),
        }
    }

    fn poll_sleep(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.sleep
            .as_mut()
            .expect("Sleeper::poll_sleep before the first reset")
            .as_mut()
            .poll(cx)
    }

    fn now(&self) -> Instant {
        Instant::now()
    }
}

struct ArmState {
    epoch: Instant,
    /// Nanoseconds since `epoch`, or [`UNARMED`]. `arm` only ever lowers it;
    /// only the timer raises it, to `UNARMED`, once it has elapsed.
    armed: AtomicU64,
    /// The waker of the task polling the timer, taken by the `arm` that
    /// lowers the deadline. A mutex rather than a lock-free slot: it is
    /// uncontended except when an `arm` races the router's poll.
    waker: Mutex<Option<Waker>>,
}

impl ArmState {
    fn to_nanos(&self, deadline: Instant) -> u64 {
        // A deadline before the epoch has passed already; `epoch` stands in
        // for it. Deadlines centuries away saturate just below `UNARMED`.
        let nanos = deadline.saturating_duration_since(self.epoch).as_nanos();
        u64::try_from(nanos).map_or(UNARMED - 1, |nanos| nanos.min(UNARMED - 1))
    }

    fn to_instant(&self, nanos: u64) -> Instant {
        self.epoch + Duration::from_nanos(nanos)
    }

    fn register(&self, waker: &Waker) {
        let mut slot = self.waker.lock().unwrap_or_else(PoisonError::into_inner);
        if !slot.as_ref().is_some_and(|old| old.will_wake(waker)) {
            *slot = Some(waker.clone());
        }
    }

    fn wake(&self) {
        let waker = self
            .waker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        // Woken outside the lock: the waker may run arbitrary code.
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// Lets any thread arm the connection's timer to an earlier deadline.
#[derive(Clone)]
pub struct ArmHandle {
    state: Arc<ArmState>,
}

impl ArmHandle {
    /// Lowers the armed deadline to `deadline` if that is earlier (an unarmed
    /// timer counts as armed at infinity) and then wakes the task polling the
    /// timer. Returns whether it lowered the deadline.
    pub fn arm(&self, deadline: Instant) -> bool {
        let nanos = self.state.to_nanos(deadline);
        let lowered = self.state.armed.fetch_min(nanos, Ordering::AcqRel) > nanos;
        if lowered {
            self.state.wake();
        }
        lowered
    }
}

/// The connection's timer, owned and polled by its router task.
pub struct ArmableTimer<S = TokioSleep> {
    state: Arc<ArmState>,
    sleeper: S,
    /// The armed value the sleeper was last reset to; `UNARMED` before the
    /// first reset.
    sleeping_until: u64,
    rearms: u64,
}

impl ArmableTimer {
    /// An unarmed timer backed by tokio's `Sleep`. It may be created outside
    /// the runtime but must be polled inside it.
    pub fn new() -> Self {
        Self::with_sleeper(TokioSleep { sleep: None })
    }
}

impl Default for ArmableTimer {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: Sleeper> ArmableTimer<S> {
    /// An unarmed timer that sleeps with `sleeper`; its epoch is the
    /// sleeper's current time.
    pub fn with_sleeper(sleeper: S) -> Self {
        Self {
            state: Arc::new(ArmState {
                epoch: sleeper.now(),
                armed: AtomicU64::new(UNARMED),
                waker: Mutex::new(None),
            }),
            sleeper,
            sleeping_until: UNARMED,
            rearms: 0,
        }
    }

    /// A handle for arming this timer from any thread.
    pub fn handle(&self) -> ArmHandle {
        ArmHandle {
            state: Arc::clone(&self.state),
        }
    }

    /// Ready(now) once the armed deadline has passed; the timer is then
    /// unarmed until armed again. Unarmed or not yet due: Pending, and `cx`
    /// is woken when the deadline passes or an `arm` lowers it.
    ///
    /// Only the most recent context's waker is woken: poll from one task.
    pub fn poll_elapsed(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        // Register before reading the deadline: an `arm` that the load below
        // misses will find this waker.
        self.state.register(cx.waker());
        loop {
            let armed = self.state.armed.load(Ordering::Acquire);
            if armed == UNARMED {
                return Poll::Pending;
            }
            if armed != self.sleeping_until {
                self.sleeper.reset(self.state.to_instant(armed));
                self.sleeping_until = armed;
                self.rearms += 1;
            }
            // Poll even right after a reset, when the new deadline may have
            // passed already: only this poll makes the sleep wake us.
            ready!(self.sleeper.poll_sleep(cx));
            // Disarm exactly the deadline that elapsed. Failing means an
            // `arm` lowered it meanwhile; go round again to serve that one.
            if self
                .state
                .armed
                .compare_exchange(armed, UNARMED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Poll::Ready(self.sleeper.now());
            }
        }
    }

    /// Waits until the armed deadline has passed; see
    /// [`poll_elapsed`](Self::poll_elapsed).
    pub async fn elapsed(&mut self) -> Instant {
        poll_fn(|cx| self.poll_elapsed(cx)).await
    }

    /// How many times the sleep was reset to a new deadline.
    pub fn rearms(&self) -> u64 {
        self.rearms
    }
}
