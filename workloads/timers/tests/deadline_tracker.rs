//! The armable timer and the deadline tracker under tokio's paused clock.

use std::future::poll_fn;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use timers::armable_timer::ArmableTimer;
use timers::deadline_tracker::DeadlineTracker;
use tokio::sync::mpsc;
use tokio::time::{self, Instant};

const SEC: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);
/// Far beyond any deadline in these tests: waiting this long means hung.
const HUNG: Duration = Duration::from_secs(3600);

/// One pass of the router loop.
struct Batch {
    /// When the timer elapsed.
    now: Instant,
    /// The requests that expired.
    ids: Vec<u64>,
    /// The timer's re-arms so far.
    rearms: u64,
}

/// The connection router's timeout loop, reporting each pass.
fn spawn_router(
    tracker: Arc<Mutex<DeadlineTracker>>,
    mut timer: ArmableTimer,
) -> mpsc::UnboundedReceiver<Batch> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let now = timer.elapsed().await;
            let mut ids = Vec::new();
            tracker.lock().unwrap().pop_expired(now, &mut ids);
            let batch = Batch {
                now,
                ids,
                rearms: timer.rearms(),
            };
            if tx.send(batch).is_err() {
                return;
            }
        }
    });
    rx
}

/// The router's next pass. A paused runtime with nothing left to do jumps
/// to its next timer, so a router waiting for a wake-up that never comes
/// fails this at once instead of hanging the test.
async fn next_batch(rx: &mut mpsc::UnboundedReceiver<Batch>) -> Batch {
    time::timeout(HUNG, rx.recv())
        .await
        .expect("the router hung: lost wake-up")
        .expect("the router stopped")
}

/// Asserts the router's next pass: when, which requests expired, re-arms so
/// far.
async fn expect_pass(
    rx: &mut mpsc::UnboundedReceiver<Batch>,
    now: Instant,
    ids: &[u64],
    rearms: u64,
) {
    let batch = next_batch(rx).await;
    assert_eq!(
        (batch.now, &batch.ids[..], batch.rearms),
        (now, ids, rearms)
    );
}

/// The timer's next elapse, failing like [`next_batch`] if it never comes.
async fn elapse(timer: &mut ArmableTimer) -> Instant {
    time::timeout(HUNG, timer.elapsed())
        .await
        .expect("the timer hung: lost wake-up")
}

fn shared(timer: &ArmableTimer) -> Arc<Mutex<DeadlineTracker>> {
    Arc::new(Mutex::new(DeadlineTracker::new(timer.handle())))
}

/// The lost wake-up found in review of scylla-rust-driver PR #564: deadlines
/// T, T+1s and T+2s; the router handles the first two, and by the time it
/// re-arms for T+2s that has passed (it is T+3s). The last expiry must still
/// come without any further insert.
#[tokio::test(start_paused = true)]
async fn rearmed_deadline_that_already_passed_still_elapses() {
    let mut timer = ArmableTimer::new();
    let mut tracker = DeadlineTracker::new(timer.handle());
    let t = Instant::now() + SEC;
    for (i, deadline) in [t, t + SEC, t + 2 * SEC].into_iter().enumerate() {
        tracker.insert(deadline, i as u64);
    }

    time::advance(2 * SEC).await;
    let now = elapse(&mut timer).await;
    assert_eq!(now, t + SEC);
    time::advance(2 * SEC).await;
    let mut expired = Vec::new();
    tracker.pop_expired(now, &mut expired);
    assert_eq!(expired, [0, 1]);

    // Nothing advances the clock or arms the timer from here on.
    let now = elapse(&mut timer).await;
    assert_eq!(now, t + 3 * SEC);
    tracker.pop_expired(now, &mut expired);
    assert_eq!(expired, [0, 1, 2]);
    assert!(tracker.is_empty());
    assert_eq!(
        tracker.counters(),
        [("inserted", 3), ("removed", 0), ("expired", 3)]
    );

    // Empty and unarmed, the timer waits for the next insert.
    let poll = poll_fn(|cx| Poll::Ready(timer.poll_elapsed(cx))).await;
    assert!(poll.is_pending());
}

/// The same deadlines, the router task first polled at T+3s.
#[tokio::test(start_paused = true)]
async fn router_first_polled_after_all_deadlines_expires_them_at_once() {
    let timer = ArmableTimer::new();
    let tracker = shared(&timer);
    let t = Instant::now() + SEC;
    for (i, deadline) in [t, t + SEC, t + 2 * SEC].into_iter().enumerate() {
        tracker.lock().unwrap().insert(deadline, i as u64);
    }
    time::advance(4 * SEC).await;

    let mut rx = spawn_router(Arc::clone(&tracker), timer);
    expect_pass(&mut rx, t + 3 * SEC, &[0, 1, 2], 1).await;
    assert!(tracker.lock().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn earlier_deadline_rearms_a_waiting_timer() {
    let timer = ArmableTimer::new();
    let arm = timer.handle();
    let tracker = shared(&timer);
    let start = Instant::now();
    tracker.lock().unwrap().insert(start + 10 * SEC, 0);
    let mut rx = spawn_router(Arc::clone(&tracker), timer);
    // Let the router start sleeping until start+10s.
    tokio::task::yield_now().await;

    tracker.lock().unwrap().insert(start + SEC, 1);
    expect_pass(&mut rx, start + SEC, &[1], 2).await;
    expect_pass(&mut rx, start + 10 * SEC, &[0], 3).await;

    // A later deadline never re-arms an armed timer; an earlier one does.
    tracker.lock().unwrap().insert(start + 20 * SEC, 2);
    assert!(!arm.arm(start + 30 * SEC));
    assert!(arm.arm(start + 15 * SEC));
    expect_pass(&mut rx, start + 15 * SEC, &[], 4).await;
    expect_pass(&mut rx, start + 20 * SEC, &[2], 5).await;
}

#[tokio::test(start_paused = true)]
async fn removed_deadline_fires_early_then_rearms_for_the_next() {
    let timer = ArmableTimer::new();
    let tracker = shared(&timer);
    let start = Instant::now();
    tracker.lock().unwrap().insert(start + SEC, 0);
    tracker.lock().unwrap().insert(start + 2 * SEC, 1);
    let mut rx = spawn_router(Arc::clone(&tracker), timer);
    tokio::task::yield_now().await;

    assert!(tracker.lock().unwrap().remove(start + SEC, 0));
    assert!(!tracker.lock().unwrap().remove(start + SEC, 0));
    expect_pass(&mut rx, start + SEC, &[], 1).await;
    expect_pass(&mut rx, start + 2 * SEC, &[1], 2).await;
    assert_eq!(
        tracker.lock().unwrap().counters(),
        [("inserted", 2), ("removed", 1), ("expired", 1)]
    );
}

/// xorshift64*: reproducible pseudo-random numbers without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % bound
    }

    fn millis(&mut self, bound: u64) -> Duration {
        Duration::from_millis(self.below(bound))
    }
}

/// What became of each request in the random test.
struct Ledger {
    deadlines: Vec<Instant>,
    answered: Vec<bool>,
    expired: Vec<bool>,
    settled: usize,
    max_lateness: Duration,
}

impl Ledger {
    fn expire(&mut self, batch: Batch) {
        for id in batch.ids {
            let id = id as usize;
            assert!(!self.expired[id], "request {id} expired twice");
            assert!(!self.answered[id], "request {id} expired after its answer");
            let deadline = self.deadlines[id];
            assert!(deadline <= batch.now, "request {id} expired early");
            self.max_lateness = self.max_lateness.max(batch.now - deadline);
            self.expired[id] = true;
            self.settled += 1;
        }
    }

    fn answer(&mut self, tracker: &Mutex<DeadlineTracker>, id: u64) {
        let id = id as usize;
        if tracker
            .lock()
            .unwrap()
            .remove(self.deadlines[id], id as u64)
        {
            assert!(!self.expired[id], "request {id} answered after it expired");
            self.answered[id] = true;
            self.settled += 1;
        } else {
            assert!(self.expired[id], "request {id} vanished");
        }
    }
}

/// Random deadlines, half of the requests answered at a random time (some
/// after their deadline): each request is answered in time or expires,
/// exactly once, never before its deadline and within a few timer ticks.
#[tokio::test(start_paused = true)]
async fn random_deadlines_expire_exactly_once_and_never_early() {
    const REQUESTS: usize = 2000;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let timer = ArmableTimer::new();
    let tracker = shared(&timer);
    let mut rx = spawn_router(Arc::clone(&tracker), timer);
    let mut ledger = Ledger {
        deadlines: Vec::new(),
        answered: vec![false; REQUESTS],
        expired: vec![false; REQUESTS],
        settled: 0,
        max_lateness: Duration::ZERO,
    };
    // (when, request id) of the responses yet to come.
    let mut responses: Vec<(Instant, u64)> = Vec::new();

    let mut steps = 0;
    while ledger.settled < REQUESTS {
        steps += 1;
        assert!(steps < 100_000, "requests left unsettled");
        let now = Instant::now();
        let id = ledger.deadlines.len();
        if id < REQUESTS {
            let deadline = now + MS + rng.millis(500);
            ledger.deadlines.push(deadline);
            tracker.lock().unwrap().insert(deadline, id as u64);
            if rng.below(2) == 0 {
                responses.push((now + rng.millis(600), id as u64));
            }
        }
        responses.retain(|&(when, id)| {
            let due = when <= now;
            if due {
                ledger.answer(&tracker, id);
            }
            !due
        });
        time::advance(rng.millis(3)).await;
        while let Ok(batch) = rx.try_recv() {
            ledger.expire(batch);
        }
    }

    assert!(tracker.lock().unwrap().is_empty());
    let answered = ledger.answered.iter().filter(|&&a| a).count() as u64;
    let expired = ledger.expired.iter().filter(|&&e| e).count() as u64;
    assert!(answered > 0 && expired > 0);
    assert_eq!(
        tracker.lock().unwrap().counters(),
        [
            ("inserted", REQUESTS as u64),
            ("removed", answered),
            ("expired", expired)
        ]
    );
    assert!(
        ledger.max_lateness <= 5 * MS,
        "expired {:?} late",
        ledger.max_lateness
    );
}

/// One request per millisecond for a second, all with the same timeout;
/// every `unanswered_every`-th request gets no response, the others get one
/// after `LATENCY`. Returns (router passes, re-arms, expired requests).
async fn equal_timeouts(unanswered_every: Option<u64>) -> (u64, u64, u64) {
    const REQUESTS: u32 = 1000;
    const TIMEOUT: Duration = Duration::from_millis(100);
    const LATENCY: Duration = Duration::from_millis(10);
    let timer = ArmableTimer::new();
    let tracker = shared(&timer);
    let mut rx = spawn_router(Arc::clone(&tracker), timer);
    // (when, deadline, request id), in answering order.
    let mut responses = std::collections::VecDeque::new();
    let (mut passes, mut rearms, mut expired) = (0, 0, 0);

    let end = Instant::now() + REQUESTS * MS + TIMEOUT + LATENCY;
    let mut id = 0;
    while Instant::now() < end {
        let now = Instant::now();
        if id < REQUESTS {
            tracker.lock().unwrap().insert(now + TIMEOUT, id.into());
            if unanswered_every.is_none_or(|every| u64::from(id) % every != 0) {
                responses.push_back((now + LATENCY, now + TIMEOUT, u64::from(id)));
            }
            id += 1;
        }
        while let Some(&(when, deadline, id)) = responses.front() {
            if when > now {
                break;
            }
            responses.pop_front();
            assert!(tracker.lock().unwrap().remove(deadline, id));
        }
        time::advance(MS).await;
        while let Ok(batch) = rx.try_recv() {
            passes += 1;
            rearms = batch.rearms;
            expired += batch.ids.len() as u64;
        }
    }
    assert!(tracker.lock().unwrap().is_empty());
    (passes, rearms, expired)
}

/// Everything answered in time: the timer fires early about once per
/// `TIMEOUT - LATENCY` (90 ms) and is re-armed once per firing, not once per
/// request.
#[tokio::test(start_paused = true)]
async fn equal_timeouts_answered_in_time_rearm_once_per_timeout() {
    let (passes, rearms, expired) = equal_timeouts(None).await;
    assert_eq!(expired, 0);
    // 1100 ms of armed timer, one firing per 90 ms.
    assert!((10..=13).contains(&passes), "{passes} router passes");
    assert!(rearms <= passes + 1, "{rearms} re-arms for {passes} passes");
}

/// One request in ten times out: one re-arm per expiry batch.
#[tokio::test(start_paused = true)]
async fn equal_timeouts_with_expiries_rearm_once_per_batch() {
    let (passes, rearms, expired) = equal_timeouts(Some(10)).await;
    assert_eq!(expired, 100);
    assert!(passes <= expired + 13, "{passes} router passes");
    assert!(rearms <= passes + 1, "{rearms} re-arms for {passes} passes");
}
