//! With one thread the scheduled executor runs tasks in (deadline, registration) order,
//! like Java's `DelayedWorkQueue`, and so does one event executor for the tasks in its heap,
//! like Netty's scheduled task queue.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use timer_engines::{EventExecutorGroup, ScheduledExecutor};

use crate::support::wait_until;

type Job = Box<dyn FnOnce() + Send>;

#[test]
fn single_worker_runs_earlier_deadlines_first_and_ties_in_order() {
    let engine: ScheduledExecutor<Job> = ScheduledExecutor::new(1, |job: Job| job());
    let (open_gate, gate) = mpsc::channel::<()>();
    // Hold the only worker in a callback until every task is queued, so that the order
    // in which they run is the heap's alone.
    engine.schedule(
        Instant::now(),
        Box::new(move || gate.recv().expect("gate dropped")),
    );
    let ran = Arc::new(Mutex::new(Vec::new()));
    let base = Instant::now();
    let mut slots: Vec<u64> = (0..400).map(|index| index % 50).collect();
    fastrand::shuffle(&mut slots);
    for (order, &slot) in slots.iter().enumerate() {
        let deadline = base + Duration::from_millis(slot);
        let ran = Arc::clone(&ran);
        engine.schedule(
            deadline,
            Box::new(move || ran.lock().unwrap().push((deadline, order))),
        );
    }
    open_gate.send(()).unwrap();

    assert!(wait_until(Duration::from_secs(5), || ran
        .lock()
        .unwrap()
        .len()
        == slots.len()));
    let ran = ran.lock().unwrap().clone();
    let mut sorted = ran.clone();
    sorted.sort();
    assert_eq!(
        ran, sorted,
        "tasks ran out of (deadline, registration) order"
    );
    // The queue is empty now; a task 100 ms out makes the worker wait for it.
    let (done, finished) = mpsc::channel();
    engine.schedule(
        Instant::now() + Duration::from_millis(100),
        Box::new(move || done.send(()).unwrap()),
    );
    finished.recv_timeout(Duration::from_secs(5)).unwrap();
    for (name, value) in engine.counters() {
        if name == "signals" || name == "worker_wakeups" {
            assert!(value >= 1, "{name} = {value}");
        }
    }
}

/// The order in which the single event executor ran 400 tasks over 50 deadlines, or None if
/// one of them ran before all had reached its heap: a task already due when the executor
/// takes its schedule runs at once, in queue order, as in Netty.
fn event_executor_run_order(lead: Duration) -> Option<Vec<(Instant, usize)>> {
    let engine: EventExecutorGroup<Job> = EventExecutorGroup::new(1, |job: Job| job());
    let ran = Arc::new(Mutex::new(Vec::new()));
    let base = Instant::now() + lead;
    let mut slots: Vec<u64> = (0..400).map(|index| index % 50).collect();
    fastrand::shuffle(&mut slots);
    for (order, &slot) in slots.iter().enumerate() {
        let deadline = base + Duration::from_millis(slot);
        let ran = Arc::clone(&ran);
        engine.schedule(
            deadline,
            Box::new(move || ran.lock().unwrap().push((deadline, order))),
        );
    }
    let registered = || {
        engine
            .counters()
            .into_iter()
            .find(|(name, _)| *name == "registered")
            .unwrap()
            .1
    };
    assert!(wait_until(Duration::from_secs(5), || registered() == 400));
    if !ran.lock().unwrap().is_empty() {
        return None;
    }
    assert!(wait_until(Duration::from_secs(5), || ran
        .lock()
        .unwrap()
        .len()
        == slots.len()));
    let order = ran.lock().unwrap().clone();
    Some(order)
}

#[test]
fn event_executor_runs_its_heap_by_deadline_and_ties_in_order() {
    // A busy machine may delay the executor past the first deadline; lead more then.
    let order = (0..7)
        .find_map(|attempt| event_executor_run_order(Duration::from_millis(50 << attempt)))
        .expect("a task ran before the executor took all schedules, even with a 3.2 s lead");
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(
        order, sorted,
        "tasks ran out of (deadline, registration) order"
    );
}
