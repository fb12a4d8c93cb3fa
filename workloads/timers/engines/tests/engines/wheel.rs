//! Wheel mechanics: timeouts longer than one turn, cancellation unlinking, the per-tick
//! transfer cap.

use std::time::{Duration, Instant};

use timer_engines::WheelConfig;

use crate::support::{
    allowed_lateness, sleep_until, wait_until, wheel, Engine, Recorder, WakeupDelay,
};

const TICK: Duration = Duration::from_millis(2);
const SLACK: Duration = Duration::from_millis(200);

fn small_wheel(wheel_size: usize) -> WheelConfig {
    WheelConfig {
        tick: TICK,
        wheel_size,
        ..WheelConfig::default()
    }
}

#[test]
fn timeouts_longer_than_a_turn_wait_out_their_rounds() {
    // One turn is 8 ticks = 16 ms; a wheel_size of 5 is rounded up to the same 8.
    for wheel_size in [8, 5] {
        let delays_ms = [20, 37, 100, 150];
        let recorder = Recorder::new(delays_ms.len());
        let delay = WakeupDelay::start();
        let engine = wheel(small_wheel(wheel_size), &recorder);
        let handles: Vec<_> = delays_ms
            .iter()
            .enumerate()
            .map(|(id, &delay)| engine.arm_probe(id, Instant::now() + Duration::from_millis(delay)))
            .collect();
        assert!(wait_until(Duration::from_secs(5), || recorder.total() == 4));
        for (id, handle) in handles.iter().enumerate() {
            assert_eq!(recorder.fires(id), 1);
            assert!(!handle.cancel(), "cancel after the callback ran must fail");
        }
        assert_eq!(recorder.early(), 0, "a timeout fired before its deadline");
        let lateness = recorder.max_lateness();
        // The worker's one wake-up per tick, however late the machine makes it.
        let allowed = allowed_lateness(TICK, 1, &delay, SLACK);
        assert!(
            lateness <= allowed,
            "fired {lateness:?} late, {allowed:?} allowed"
        );
        assert!(engine.counter("ticks") >= 50, "{:?}", engine.counters());
        assert_eq!(engine.counter("cancelled"), 0);
    }
}

#[test]
fn cancel_before_expiry_unlinks_the_timeout() {
    let recorder = Recorder::new(1);
    let engine = wheel(small_wheel(8), &recorder);
    let deadline = Instant::now() + Duration::from_millis(300);
    let handle = engine.arm_probe(0, deadline);
    assert!(wait_until(Duration::from_secs(5), || engine
        .counter("transferred")
        == 1));
    assert_eq!(engine.counter("cancelled_unlinked"), 0);

    assert!(handle.cancel());
    assert!(wait_until(Duration::from_secs(5), || {
        engine.counter("cancelled_unlinked") == 1
    }));
    sleep_until(deadline + Duration::from_millis(50));
    assert_eq!(recorder.total(), 0);
    assert!(!handle.cancel());
    assert_eq!(engine.counter("cancelled"), 1);
    assert_eq!(engine.counter("fired"), 0);
}

#[test]
fn transfers_at_most_the_cap_per_tick() {
    let past = Instant::now();
    let cap = 10;
    let recorder = Recorder::new(100);
    let tick = Duration::from_millis(20);
    let config = WheelConfig {
        tick,
        max_transfers_per_tick: cap,
        ..WheelConfig::default()
    };
    let engine = wheel(config, &recorder);
    // Due before the wheel even started: each goes into the bucket of the tick that
    // transfers it.
    for id in 0..100 {
        engine.arm_probe(id, past);
    }
    let mut within_cap = true;
    assert!(wait_until(Duration::from_secs(10), || {
        // The worker counts the tick after its transfers, hence `ticks + 1`.
        let ticks = engine.counter("ticks");
        within_cap &= engine.counter("transferred") <= cap as u64 * (ticks + 1);
        recorder.total() == 100
    }));
    assert!(within_cap, "more than {cap} transfers in one tick");
    assert!((0..100).all(|id| recorder.fires(id) == 1));
    // The last ten wait for the tenth tick.
    assert!(
        recorder.max_lateness() >= 8 * tick,
        "{:?}",
        recorder.max_lateness()
    );
}
