//! Dropping an engine joins its threads promptly and drops pending tasks unrun.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use timer_engines::{
    EventExecutorGroup, Expiry, HashedWheelTimer, ScheduledExecutor, TimerHandle, WheelConfig,
};

use crate::support::wait_until;

const FAR: Duration = Duration::from_secs(60);
/// Generous, yet far below FAR: nobody waited out a deadline.
const PROMPT: Duration = Duration::from_secs(5);

fn counting(ran: &Arc<AtomicUsize>) -> impl Fn(Arc<()>) + Send + Sync + 'static {
    let ran = Arc::clone(ran);
    move |_token| {
        ran.fetch_add(1, Ordering::Relaxed);
    }
}

/// Drops `engine` and checks what is left: no task ran, the tasks' tokens were released,
/// and the handles, which outlive the engine, still cancel.
fn drop_and_check(
    engine: impl Sized,
    token: &Arc<()>,
    ran: &AtomicUsize,
    handles: Vec<TimerHandle>,
) {
    assert_eq!(Arc::strong_count(token), 1 + handles.len());
    let dropping = Instant::now();
    drop(engine);
    assert!(
        dropping.elapsed() < PROMPT,
        "drop took {:?}",
        dropping.elapsed()
    );
    assert_eq!(ran.load(Ordering::Relaxed), 0);
    assert_eq!(Arc::strong_count(token), 1, "pending tasks leaked");
    assert!(handles.iter().all(TimerHandle::cancel));
    drop(handles);
    assert_eq!(Arc::strong_count(token), 1);
}

#[test]
fn executor_drop_discards_pending_tasks() {
    let token = Arc::new(());
    let ran = Arc::new(AtomicUsize::new(0));
    let engine = ScheduledExecutor::new(2, counting(&ran));
    let handles = (0..100)
        .map(|_| engine.schedule(Instant::now() + FAR, Arc::clone(&token)))
        .collect();
    // Let a worker settle into its timed wait as leader.
    thread::sleep(Duration::from_millis(20));
    drop_and_check(engine, &token, &ran, handles);
}

#[test]
fn event_executor_drop_discards_pending_tasks() {
    let token = Arc::new(());
    let ran = Arc::new(AtomicUsize::new(0));
    let engine = EventExecutorGroup::new(2, counting(&ran));
    let mut handles: Vec<_> = (0..50)
        .map(|_| engine.schedule(Instant::now() + FAR, Arc::clone(&token)))
        .collect();
    // Half of them in the executors' heaps, the other half most likely still queued.
    assert!(wait_until(PROMPT, || engine
        .counters()
        .contains(&("registered", 50))));
    handles.extend((0..50).map(|_| engine.schedule(Instant::now() + FAR, Arc::clone(&token))));
    drop_and_check(engine, &token, &ran, handles);
}

fn wheel_drop_discards_pending_tasks(expiry: Expiry) {
    let token = Arc::new(());
    let ran = Arc::new(AtomicUsize::new(0));
    let config = WheelConfig {
        tick: Duration::from_millis(5),
        expiry,
        ..WheelConfig::default()
    };
    let engine = HashedWheelTimer::new(config, counting(&ran));
    let mut handles: Vec<_> = (0..50)
        .map(|_| engine.new_timeout(Instant::now() + FAR, Arc::clone(&token)))
        .collect();
    // Half of them in buckets, the other half most likely still queued for transfer.
    assert!(wait_until(PROMPT, || engine
        .counters()
        .contains(&("transferred", 50))));
    handles.extend((0..50).map(|_| engine.new_timeout(Instant::now() + FAR, Arc::clone(&token))));
    drop_and_check(engine, &token, &ran, handles);
}

#[test]
fn wheel_drop_discards_pending_tasks_on_worker() {
    wheel_drop_discards_pending_tasks(Expiry::OnWorker);
}

#[test]
fn wheel_drop_discards_pending_tasks_with_offload() {
    wheel_drop_discards_pending_tasks(Expiry::Offload { threads: 2 });
}

#[test]
fn wheel_drop_runs_tasks_already_handed_to_the_pool() {
    let ran = Arc::new(AtomicUsize::new(0));
    let slow = {
        let ran = Arc::clone(&ran);
        move |_: usize| {
            thread::sleep(Duration::from_millis(20));
            ran.fetch_add(1, Ordering::Relaxed);
        }
    };
    let config = WheelConfig {
        tick: Duration::from_millis(5),
        expiry: Expiry::Offload { threads: 2 },
        ..WheelConfig::default()
    };
    let engine = HashedWheelTimer::new(config, slow);
    let handles: Vec<_> = (0..20)
        .map(|task| engine.new_timeout(Instant::now(), task))
        .collect();
    // One callback took 20 ms, so the worker has ticked past all 20 deadlines and handed
    // every task over; tasks handed over run even though the timer is being dropped.
    assert!(wait_until(PROMPT, || ran.load(Ordering::Relaxed) >= 1));
    drop(engine);
    assert_eq!(ran.load(Ordering::Relaxed), 20);
    assert!(handles.iter().all(|handle| !handle.cancel()));
}
