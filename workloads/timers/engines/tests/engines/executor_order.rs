//! With one worker thread the scheduled executor runs tasks in (deadline, registration)
//! order, like Java's `DelayedWorkQueue`.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use timer_engines::ScheduledExecutor;

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
