//! Cancels sweep across the moment timeouts expire: each timeout ends exactly one way,
//! either cancelled (and never fired) or fired once (and its cancel failed). Whatever the
//! machine's load, both ways occur and the clear cases go the one way they must: a cancel
//! that returned before the deadline won, a cancel made after the callback ran lost.
//!
//! Neither way counts on the wall clock: the timeouts cancelled at once have a deadline
//! [`FAR`] away, so their cancels verifiably return before it even on a stalled machine, and
//! the ones cancelled late wait for their callback to have run.

use std::thread;
use std::time::{Duration, Instant};

use timer_engines::{Expiry, TimerHandle, WheelConfig};

use crate::support::{event_executor, executor, sleep_until, wait_until, wheel, Engine, Recorder};

const ROUNDS: usize = 4;
const PER_ROUND: usize = 2_000;
const IDS: usize = ROUNDS * PER_ROUND;
const CANCELLERS: usize = 2;
/// Per round, timeouts cancelled as soon as all are armed, [`FAR`] before their deadline...
const EARLY: usize = 16;
/// ...and timeouts cancelled only once their callback has run.
const LATE: usize = 16;
/// The deadline of the swept and the late timeouts is this far from the start of a round...
const LEAD: Duration = Duration::from_millis(20);
/// ...and that of the early ones this far after it: far more than arming a round and
/// cancelling takes, however loaded the machine, yet soon enough that one wrongly firing
/// after its cancel won shows up before the end.
const FAR: Duration = Duration::from_secs(1);
/// The cancels of a round start this long before the common deadline...
const SWEEP_BEFORE: Duration = Duration::from_millis(1);
/// ...and end this long after it, past the wheel's next 1 ms tick.
const SWEEP_AFTER: Duration = Duration::from_millis(2);

/// One cancel: the timeout's id, whether the cancel won, whether it returned before the
/// deadline.
type Cancel = (usize, bool, bool);

fn cancel(deadline: Instant, id: usize, handle: &TimerHandle) -> Cancel {
    let won = handle.cancel();
    (id, won, Instant::now() < deadline)
}

/// Cancels `handles` one by one at evenly spaced instants across the sweep.
fn sweep(deadline: Instant, handles: &[(usize, TimerHandle)]) -> Vec<Cancel> {
    let first = deadline - SWEEP_BEFORE;
    let span = SWEEP_BEFORE + SWEEP_AFTER;
    handles
        .iter()
        .enumerate()
        .map(|(index, (id, handle))| {
            let at = first + span.mul_f64(index as f64 / handles.len() as f64);
            while Instant::now() < at {
                thread::yield_now();
            }
            cancel(deadline, *id, handle)
        })
        .collect()
}

fn race(engine: impl Engine, recorder: &Recorder) {
    let mut cancelled = vec![false; IDS];
    let mut last_deadline = Instant::now();
    let mut before_deadline = 0;
    for round in 0..ROUNDS {
        let deadline = Instant::now() + LEAD;
        let far_deadline = deadline + FAR;
        last_deadline = far_deadline;
        let first = round * PER_ROUND;
        let early: Vec<_> = (first..first + EARLY)
            .map(|id| (id, engine.arm_probe(id, far_deadline)))
            .collect();
        let rest: Vec<_> = (first + EARLY..first + PER_ROUND)
            .map(|id| (id, engine.arm_probe(id, deadline)))
            .collect();
        let (late, swept) = rest.split_at(LATE);
        let mut results: Vec<Cancel> = early
            .iter()
            .map(|(id, handle)| cancel(far_deadline, *id, handle))
            .collect();
        let swept: Vec<Vec<Cancel>> = thread::scope(|scope| {
            let cancellers: Vec<_> = swept
                .chunks(swept.len().div_ceil(CANCELLERS))
                .map(|chunk| scope.spawn(move || sweep(deadline, chunk)))
                .collect();
            cancellers
                .into_iter()
                .map(|canceller| canceller.join().unwrap())
                .collect()
        });
        results.extend(swept.into_iter().flatten());
        for (id, handle) in late {
            assert!(
                wait_until(Duration::from_secs(10), || recorder.fires(*id) == 1),
                "timeout {id} did not fire"
            );
            results.push(cancel(deadline, *id, handle));
        }
        for (id, won, before) in results {
            cancelled[id] = won;
            if before {
                // No engine runs a callback before its deadline (checked below).
                assert!(
                    won,
                    "the cancel of timeout {id} returned before its deadline but lost"
                );
                before_deadline += 1;
            }
        }
        for (id, _) in late {
            assert!(
                !cancelled[*id],
                "timeout {id} was cancelled after its callback ran"
            );
        }
    }

    let cancels = cancelled.iter().filter(|&&won| won).count();
    let expected = (IDS - cancels) as u64;
    eprintln!(
        "cancel won {cancels} of {IDS} races; {before_deadline} cancels returned before the \
         deadline (all won), {} came after the callback (all lost)",
        ROUNDS * LATE
    );
    // Both outcomes occurred: the early cancels return long before a deadline FAR away.
    assert!(
        before_deadline > 0 && cancels > 0,
        "only {before_deadline} cancels returned before their deadline, {cancels} won"
    );
    assert!(cancels < IDS, "every cancel won");
    assert!(
        wait_until(Duration::from_secs(5), || recorder.total() >= expected),
        "only {} of {expected} timeouts fired",
        recorder.total()
    );
    // Leave a cancelled timeout that wrongly fires the time to show up.
    sleep_until(last_deadline + Duration::from_millis(250));
    assert!(wait_until(Duration::from_secs(2), || engine
        .counter("fired")
        == expected));
    // Engines may count on their own threads, a little after the fact.
    let counted = wait_until(Duration::from_secs(2), || {
        engine.counter("cancelled") == cancels as u64 && engine.counter("registered") == IDS as u64
    });
    assert!(counted, "{:?}, {cancels} cancelled", engine.counters());
    drop(engine);

    for (id, &won) in cancelled.iter().enumerate() {
        let fires = recorder.fires(id);
        assert_eq!(
            fires,
            u32::from(!won),
            "timeout {id}: cancel won: {won}, fired {fires} times"
        );
    }
    assert_eq!(recorder.early(), 0, "callbacks ran before their deadline");
}

#[test]
fn scheduled_executor_settles_each_race_one_way() {
    let recorder = Recorder::new(IDS);
    race(executor(2, &recorder), &recorder);
}

#[test]
fn event_executor_settles_each_race_one_way() {
    let recorder = Recorder::new(IDS);
    race(event_executor(2, &recorder), &recorder);
}

#[test]
fn wheel_settles_each_race_one_way() {
    let recorder = Recorder::new(IDS);
    let config = WheelConfig {
        tick: Duration::from_millis(1),
        ..WheelConfig::default()
    };
    race(wheel(config, &recorder), &recorder);
}

#[test]
fn wheel_offload_settles_each_race_one_way() {
    let recorder = Recorder::new(IDS);
    let config = WheelConfig {
        tick: Duration::from_millis(1),
        expiry: Expiry::Offload { threads: 2 },
        ..WheelConfig::default()
    };
    race(wheel(config, &recorder), &recorder);
}
