//! The handle is a cheap shareable value and cancel succeeds exactly once.

use std::time::{Duration, Instant};

use timer_engines::{TimerHandle, WheelConfig};

use crate::support::{event_executor, executor, wait_until, wheel, Engine, Recorder};

#[test]
fn handles_are_small_shareable_values() {
    fn assert_shareable<T: Clone + Send + Sync + 'static>() {}
    assert_shareable::<TimerHandle>();
    assert!(std::mem::size_of::<TimerHandle>() <= 3 * std::mem::size_of::<usize>());
}

fn only_the_first_cancel_succeeds(engine: impl Engine, recorder: &Recorder) {
    let handle = engine.arm_probe(0, Instant::now() + Duration::from_secs(60));
    let copy = handle.clone();
    assert!(copy.cancel());
    assert!(!handle.cancel());
    assert!(!copy.cancel());
    // Engines may count on their own threads, a little after the fact.
    assert!(wait_until(Duration::from_secs(5), || engine
        .counter("cancelled")
        == 1));
    drop(engine);
    assert_eq!(recorder.total(), 0);
}

#[test]
fn executor_handle_cancels_once() {
    let recorder = Recorder::new(1);
    only_the_first_cancel_succeeds(executor(1, &recorder), &recorder);
}

#[test]
fn event_executor_handle_cancels_once() {
    let recorder = Recorder::new(1);
    only_the_first_cancel_succeeds(event_executor(1, &recorder), &recorder);
}

#[test]
fn wheel_handle_cancels_once() {
    let recorder = Recorder::new(1);
    only_the_first_cancel_succeeds(wheel(WheelConfig::default(), &recorder), &recorder);
}
