//! The cancel handle every engine returns.

use crate::event_executor::EventCancel;
use crate::hashed_wheel::WheelCancel;
use crate::scheduled_executor::ExecutorCancel;

/// Cancels one timeout. Cheap to clone, `Send + Sync`, and holds neither the task nor the
/// engine's queues, so it may outlive the engine.
#[derive(Clone, Debug)]
pub struct TimerHandle(Target);

#[derive(Clone, Debug)]
enum Target {
    Executor(ExecutorCancel),
    EventExecutor(EventCancel),
    Wheel(WheelCancel),
}

impl TimerHandle {
    /// Cancels the timeout. Returns true if it was still pending, in which case its
    /// callback will never run; false if it already expired (its callback ran or is
    /// about to run) or was cancelled before.
    pub fn cancel(&self) -> bool {
        match &self.0 {
            Target::Executor(cancel) => cancel.cancel(),
            Target::EventExecutor(cancel) => cancel.cancel(),
            Target::Wheel(cancel) => cancel.cancel(),
        }
    }
}

impl From<ExecutorCancel> for TimerHandle {
    fn from(cancel: ExecutorCancel) -> Self {
        Self(Target::Executor(cancel))
    }
}

impl From<EventCancel> for TimerHandle {
    fn from(cancel: EventCancel) -> Self {
        Self(Target::EventExecutor(cancel))
    }
}

impl From<WheelCancel> for TimerHandle {
    fn from(cancel: WheelCancel) -> Self {
        Self(Target::Wheel(cancel))
    }
}
