//! The event executor hands schedules and cancels to the executor threads through their
//! task queues, wakes a waiting executor, and leaves nothing behind in the heaps.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::support::{event_executor, wait_until, Engine, Recorder};

const FAR: Duration = Duration::from_secs(3600);

#[test]
fn cancels_go_through_the_queue_and_empty_the_heaps() {
    const TIMEOUTS: u64 = 1_000;
    let recorder = Recorder::new(TIMEOUTS as usize);
    let engine = event_executor(2, &recorder);
    let handles: Vec<_> = (0..TIMEOUTS)
        .map(|id| engine.arm_probe(id as usize, Instant::now() + FAR))
        .collect();
    // Every schedule is a task the executors run: then the timeouts are in their heaps.
    assert!(wait_until(Duration::from_secs(5), || engine
        .counter("registered")
        == TIMEOUTS));
    assert_eq!(engine.counter("tasks"), TIMEOUTS);

    assert!(handles.iter().all(|handle| handle.cancel()));
    let settled = wait_until(Duration::from_secs(5), || {
        engine.counter("cancelled") == TIMEOUTS
    });
    assert!(settled, "{:?}", engine.counters());
    // Every cancel is a task too, and each took its timeout out of a heap.
    assert_eq!(engine.counter("tasks"), 2 * TIMEOUTS);
    assert_eq!(
        engine.counter("removed"),
        TIMEOUTS,
        "cancelled timeouts left in the heaps: {:?}",
        engine.counters()
    );
    assert_eq!(engine.counter("discarded"), 0);
    assert_eq!(engine.counter("fired"), 0);
    drop(engine);
    assert_eq!(recorder.total(), 0);
}

#[test]
fn a_schedule_wakes_the_waiting_executor() {
    let (fired, fires) = mpsc::channel();
    let engine = timer_engines::EventExecutorGroup::new(1, move |()| fired.send(()).unwrap());
    // The executor waits on its empty queue between two of these; a schedule then finds
    // the queue empty and signals it. Repeat until one schedule caught it waiting.
    let woken = wait_until(Duration::from_secs(10), || {
        engine.schedule(Instant::now(), ());
        fires.recv().unwrap();
        engine
            .counters()
            .iter()
            .any(|&(name, value)| name == "wakeups" && value >= 1)
    });
    assert!(woken, "{:?}", engine.counters());
}
