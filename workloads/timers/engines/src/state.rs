//! The per-timeout state on which cancel and expiry race.

use std::sync::atomic::{AtomicU8, Ordering};

const PENDING: u8 = 0;
const CANCELLED: u8 = 1;
const EXPIRED: u8 = 2;

/// Netty's `ST_INIT` / `ST_CANCELLED` / `ST_EXPIRED`: whichever of cancel and expiry
/// leaves `PENDING` first wins, the other one fails its compare-and-swap.
///
/// Java's `FutureTask` differs in one detail: it leaves `NEW` only after the task ran,
/// so `cancel(false)` still "succeeds" while the task is running. Here the expiring
/// worker claims the timeout before calling back, so a successful cancel always means
/// the callback never runs.
#[derive(Debug)]
pub(crate) struct TimeoutState(AtomicU8);

impl TimeoutState {
    pub(crate) const fn new() -> Self {
        Self(AtomicU8::new(PENDING))
    }

    /// Claims the timeout for the canceller; false if it already expired or was cancelled.
    pub(crate) fn try_cancel(&self) -> bool {
        self.leave_pending(CANCELLED)
    }

    /// Claims the timeout for its callback; false if it was cancelled first.
    pub(crate) fn try_expire(&self) -> bool {
        self.leave_pending(EXPIRED)
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire) == CANCELLED
    }

    fn leave_pending(&self, to: u8) -> bool {
        self.0
            .compare_exchange(PENDING, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::TimeoutState;

    #[test]
    fn first_transition_wins() {
        let cancelled_first = TimeoutState::new();
        assert!(cancelled_first.try_cancel());
        assert!(cancelled_first.is_cancelled());
        assert!(!cancelled_first.try_expire());
        assert!(!cancelled_first.try_cancel());

        let expired_first = TimeoutState::new();
        assert!(expired_first.try_expire());
        assert!(!expired_first.is_cancelled());
        assert!(!expired_first.try_cancel());
        assert!(!expired_first.try_expire());
    }
}
