//! Many threads register thousands of timeouts and cancel a random half while they
//! expire: every timeout not cancelled first fires exactly once, on time and on the
//! engine's threads, and no cancelled one fires.

use std::collections::BTreeSet;
use std::thread;
use std::time::{Duration, Instant};

use timer_engines::{Expiry, WheelConfig};

use crate::support::{
    allowed_lateness, event_executor, executor, sleep_until, wait_until, wheel, Engine, Recorder,
    WakeupDelay,
};

const THREADS: usize = 4;
const PER_THREAD: usize = 2_000;
const IDS: usize = THREADS * PER_THREAD;
const MIN_DELAY: Duration = Duration::from_millis(3);
const MAX_DELAY: Duration = Duration::from_millis(300);
/// Scheduling slack on a VM whose 2 cores are busy with other work, on top of the measured
/// wake-up delay (support::allowed_lateness).
const SLACK: Duration = Duration::from_millis(200);
/// Wake-ups between a deadline and its callback: the engine's thread, then the thread it
/// hands the expiry to (an offloading wheel's pool; executors' own hand-offs).
const HOPS: u32 = 2;
const WHEEL_TICK: Duration = Duration::from_millis(5);

/// For each id: None if never cancelled, else whether `cancel` returned true.
fn register_and_cancel_half(engine: &impl Engine) -> Vec<Option<bool>> {
    let per_thread: Vec<Vec<(usize, bool)>> = thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|thread| {
                scope.spawn(move || {
                    let mut rng = fastrand::Rng::new();
                    let mut to_cancel = Vec::new();
                    for id in thread * PER_THREAD..(thread + 1) * PER_THREAD {
                        let delay =
                            rng.u64(MIN_DELAY.as_millis() as u64..=MAX_DELAY.as_millis() as u64);
                        let handle =
                            engine.arm_probe(id, Instant::now() + Duration::from_millis(delay));
                        if rng.bool() {
                            to_cancel.push((id, handle));
                        }
                    }
                    rng.shuffle(&mut to_cancel);
                    // Spread the cancels over the deadline range so that many race expiry.
                    let per_millisecond = (to_cancel.len() / MAX_DELAY.as_millis() as usize).max(1);
                    to_cancel
                        .iter()
                        .enumerate()
                        .map(|(index, (id, handle))| {
                            if index % per_millisecond == 0 {
                                thread::sleep(Duration::from_millis(1));
                            }
                            (*id, handle.cancel())
                        })
                        .collect()
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().unwrap())
            .collect()
    });
    let mut outcome = vec![None; IDS];
    for (id, cancelled) in per_thread.into_iter().flatten() {
        outcome[id] = Some(cancelled);
    }
    outcome
}

/// Runs the scenario on `engine`, lets `settle` check engine-specific counters, drops the
/// engine and checks every probe.
fn check<E: Engine>(
    engine: E,
    recorder: &Recorder,
    granularity: Duration,
    settle: impl FnOnce(&E),
) {
    let delay = WakeupDelay::start();
    let outcome = register_and_cancel_half(&engine);
    // Every deadline is at most MAX_DELAY after its registration, which is over now.
    let quiet = Instant::now() + MAX_DELAY + allowed_lateness(granularity, HOPS, &delay, SLACK);
    let cancelled = outcome
        .iter()
        .filter(|&&cancel| cancel == Some(true))
        .count();
    let expected = (IDS - cancelled) as u64;
    let fired_in_time = wait_until(
        quiet.duration_since(Instant::now()) + Duration::from_secs(5),
        || recorder.total() >= expected,
    );
    assert!(
        fired_in_time,
        "only {} of {expected} timeouts fired",
        recorder.total()
    );
    // Leave a cancelled timeout that wrongly fires the time to show up.
    sleep_until(quiet);
    assert!(wait_until(Duration::from_secs(2), || engine
        .counter("fired")
        == expected));
    // Engines may count on their own threads, a little after the fact.
    let counted = wait_until(Duration::from_secs(2), || {
        engine.counter("registered") == IDS as u64
            && engine.counter("cancelled") == cancelled as u64
    });
    assert!(counted, "{:?}, {cancelled} cancelled", engine.counters());
    settle(&engine);
    drop(engine);

    for (id, cancel) in outcome.iter().enumerate() {
        let fires = recorder.fires(id);
        match cancel {
            Some(true) => assert_eq!(fires, 0, "cancelled timeout {id} fired"),
            _ => assert_eq!(
                fires, 1,
                "timeout {id} (cancel: {cancel:?}) fired {fires} times"
            ),
        }
    }
    assert_eq!(recorder.total(), expected);
    assert_eq!(recorder.early(), 0, "callbacks ran before their deadline");
    let lateness = recorder.max_lateness();
    let allowed = allowed_lateness(granularity, HOPS, &delay, SLACK);
    assert!(
        lateness <= allowed,
        "a callback ran {lateness:?} late, {allowed:?} allowed (threads woke up to {:?} late)",
        delay.worst()
    );
}

fn names(prefix: &str, threads: usize) -> BTreeSet<String> {
    (0..threads)
        .map(|index| format!("{prefix}-{index}"))
        .collect()
}

#[test]
fn scheduled_executor_fires_each_uncancelled_timeout_once() {
    let recorder = Recorder::new(IDS);
    check(
        executor(2, &recorder),
        &recorder,
        Duration::ZERO,
        |engine| {
            // removeOnCancel = false: every cancelled entry is still popped at its deadline.
            let all_popped = wait_until(Duration::from_secs(2), || {
                engine.counter("fired") + engine.counter("popped_cancelled") == IDS as u64
            });
            assert!(all_popped, "{:?}", engine.counters());
            assert_eq!(
                engine.counter("popped_cancelled"),
                engine.counter("cancelled")
            );
        },
    );
    let used = recorder.thread_names();
    assert!(
        !used.is_empty() && used.is_subset(&names("sched-exec", 2)),
        "{used:?}"
    );
}

#[test]
fn event_executor_fires_each_uncancelled_timeout_once() {
    let recorder = Recorder::new(IDS);
    check(
        event_executor(2, &recorder),
        &recorder,
        Duration::ZERO,
        |engine| {
            // Every timeout left its executor's heap one way or another.
            let heaps_empty = wait_until(Duration::from_secs(2), || {
                engine.counter("fired") + engine.counter("removed") + engine.counter("discarded")
                    == IDS as u64
            });
            assert!(heaps_empty, "{:?}", engine.counters());
            assert!(
                engine.counter("tasks") >= IDS as u64 + engine.counter("cancelled"),
                "schedules and cancels go through the task queues: {:?}",
                engine.counters()
            );
        },
    );
    assert_eq!(
        recorder.thread_names(),
        names("event-exec", 2),
        "round-robin gives both executors work"
    );
}

#[test]
fn wheel_fires_each_uncancelled_timeout_once_on_its_worker() {
    let recorder = Recorder::new(IDS);
    let config = WheelConfig {
        tick: WHEEL_TICK,
        ..WheelConfig::default()
    };
    check(wheel(config, &recorder), &recorder, WHEEL_TICK, |engine| {
        assert!(engine.counter("cancelled_unlinked") <= engine.counter("cancelled"));
        assert!(engine.counter("transferred") <= IDS as u64);
    });
    assert_eq!(
        recorder.thread_names(),
        BTreeSet::from(["wheel-worker".to_owned()])
    );
}

#[test]
fn wheel_offload_fires_each_uncancelled_timeout_once_on_the_pool() {
    let recorder = Recorder::new(IDS);
    let config = WheelConfig {
        tick: WHEEL_TICK,
        expiry: Expiry::Offload { threads: 2 },
        ..WheelConfig::default()
    };
    check(wheel(config, &recorder), &recorder, WHEEL_TICK, |engine| {
        assert!(engine.counter("executor_wakeups") >= 1);
    });
    let used = recorder.thread_names();
    assert_eq!(
        used,
        names("wheel-offload", 2),
        "both pool threads should get work"
    );
}
