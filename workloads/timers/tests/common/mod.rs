//! Shared by the strategy tests of this crate and of `timers-legacy` and `timers-sharded`
//! (included by path): runs a strategy in-process against an in-process server with a
//! resolution log, and checks that every request resolved exactly once, that the counters
//! agree with the log and the server, that no timeout fired early or more than its
//! granularity late, and that exactly the requests the server answered late timed out.
//!
//! No check counts on wall-clock luck; this runs on small, busy machines. An attempt that
//! issued too few requests is re-run with a longer window. Whether an answer beats its
//! timeout depends on how late the machine ran the threads in between, so a case's timeout
//! is a margin over the wake-up delay measured during the attempt (`WakeupDelay`): outcomes
//! that are not what the case expects (an exact split into answers and timeouts, or a race
//! with both) fail the test if the measured delay stayed within the margin, and otherwise
//! re-run the attempt with a timeout (and server delays) that covers the delay seen. Both
//! re-runs are capped, and the test then fails with the figures measured.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use timers::client::Bench;
use timers::completion::Outcome;
use timers::metrics::Report;
use timers::params::{self, Params};
use timers::resolution_log::{ResolutionLog, Verified};
use timers::server::{Server, ServerConfig};
use timers::strategy::StrategyKind;

/// Lateness allowed on top of a strategy's granularity and the measured wake-up delay.
const SLACK: Duration = Duration::from_millis(250);
/// Wake-ups in series between a deadline and its resolution: the timer's thread (a runtime
/// worker, a wheel's or an executor's) and the one it hands the expiry to.
const HOPS: u32 = 2;
/// Wake-ups in series between sending a request the server answers at once and its task
/// getting the answer: the server's reader and writer, the client's reader and the task.
const FAST_HOPS: u32 = 4;
/// How many times over the timeout covers what the measured wake-up delay can make of a
/// fast answer or a late timer: "far within", "far beyond".
const MARGIN: u32 = 2;
/// A slow answer comes this many timeouts after its request; in a race, about one answer in
/// 20 (e^-3) does too.
const SLOW_FACTOR: u32 = 3;

const WARMUP: Duration = Duration::from_millis(100);
/// The first attempt's measured window; it doubles while too few requests were issued and
/// grows as the timeout does (a request takes as much longer).
const WINDOW: Duration = Duration::from_millis(500);
/// An attempt is conclusive with at least this many measured requests...
const MIN_ISSUED: u64 = 100;
/// ...and, in a case with slow answers, this many of them.
const MIN_SLOW: u64 = 5;
/// Attempts per check before it fails with the last one's figures.
const MAX_ATTEMPTS: u32 = 5;
/// The timeout grows to at most this (or a case's first one, if longer).
const MAX_TIMEOUT: Duration = Duration::from_secs(4);
/// The window grows to at most this.
const MAX_WINDOW: Duration = Duration::from_secs(8);

#[path = "../../engines/tests/engines/wakeup_delay.rs"]
mod wakeup_delay;
use wakeup_delay::WakeupDelay;

/// Runs are timing-sensitive: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Small runs: 2 client threads and connections, 16 requests in flight.
const BASE: &[&str] = &[
    "threads=2",
    "connections=2",
    "concurrency=16",
    "server_threads=1",
    "executor_threads=2",
    "computation_threads=2",
    "tick_ms=20",
    "wheel_size=64",
];

/// The load of one check.
pub struct Case {
    pub name: &'static str,
    pub params: &'static [&'static str],
    /// The first attempt's timeout; the server's delays follow it (see [`Expect`]).
    pub timeout: Duration,
    pub expect: Expect,
}

/// How the answers of a case relate to its timeout, and what must come of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Answers come at once or, `slow_fraction` of them, `SLOW_FACTOR` timeouts late:
    /// exactly the slow ones time out.
    Exact,
    /// Service times are exponential with the timeout as their mean: answers and timers
    /// race, and both win some.
    Race,
}

/// Answers come at once: nothing may time out.
pub const STEADY: Case = Case {
    name: "steady",
    params: &[],
    timeout: Duration::from_millis(2000),
    expect: Expect::Exact,
};

/// 5% of answers come after 3 timeouts (450 ms at first): exactly those time out.
pub const SLOW_TAIL: Case = Case {
    name: "slow-tail",
    params: &["slow_fraction=0.05"],
    timeout: Duration::from_millis(150),
    expect: Expect::Exact,
};

/// Every answer takes about as long as the timeout (10 ms at first): answers and timers race.
pub const RACE: Case = Case {
    name: "race",
    params: &["service_dist=exp"],
    timeout: Duration::from_millis(10),
    expect: Expect::Race,
};

/// What one attempt at a case runs with.
#[derive(Clone, Copy, Debug)]
struct Attempt {
    window: Duration,
    /// Whole milliseconds, as the parameters take them.
    timeout: Duration,
}

fn resolve(case: &Case, attempt: Attempt) -> Params {
    let mut overrides: Vec<String> = BASE
        .iter()
        .chain(case.params)
        .map(|s| s.to_string())
        .collect();
    let ms = attempt.timeout.as_millis();
    overrides.push(format!("timeout_ms={ms}"));
    overrides.push(match case.expect {
        Expect::Exact => format!("slow_delay_ms={}", ms * u128::from(SLOW_FACTOR)),
        Expect::Race => format!("service_time_us={}", attempt.timeout.as_micros()),
    });
    params::resolve(None, &overrides).expect("test parameters are valid")
}

/// How much later than its deadline a timeout of `kind` may fire by design.
fn granularity(kind: StrategyKind, params: &Params) -> Duration {
    match kind {
        StrategyKind::HashedWheel | StrategyKind::HashedWheelOffload => params.tick,
        StrategyKind::ScheduledExecutor | StrategyKind::EventExecutor => Duration::ZERO,
        _ => Duration::from_millis(1),
    }
}

/// How late a timeout of `kind` may fire at most: its granularity, plus HOPS wake-ups each as
/// late as the worst this machine was seen to wake threads, plus SLACK. A fixed bound fails on
/// a busy 2-core machine; on a quiet one this is granularity + SLACK.
fn allowed_lateness(kind: StrategyKind, params: &Params, worst_wakeup: Duration) -> Duration {
    granularity(kind, params) + worst_wakeup * HOPS + SLACK
}

/// The timeout that settles the outcomes when threads wake up to `worst_wakeup` late: an
/// answer due at once comes MARGIN times within it, and a slow answer, `SLOW_FACTOR`
/// timeouts after its request, MARGIN times after a timer as late as such wake-ups make it.
/// (In a race, answers due in under half the timeout, 39% of them, count as fast.)
fn timeout_needed(kind: StrategyKind, params: &Params, worst_wakeup: Duration) -> Duration {
    let fast = worst_wakeup * FAST_HOPS * MARGIN;
    let slow = (granularity(kind, params) + worst_wakeup * HOPS) * MARGIN / (SLOW_FACTOR - 1);
    fast.max(slow)
}

/// Runs `kind` under `case` as `attempt` says with a resolution log; checks that every
/// request resolved exactly once.
fn run(kind: StrategyKind, case: &Case, attempt: Attempt) -> (Params, Report, Verified) {
    let params = resolve(case, attempt);
    let server = Server::start(ServerConfig::from_params(&params), 0).expect("server starts");
    let runtime = kind.build_runtime(params.threads).expect("runtime builds");
    let log = Arc::new(ResolutionLog::new());
    let bench = runtime
        .block_on(Bench::connect(
            kind,
            &params,
            server.addr(),
            Some(Arc::clone(&log)),
        ))
        .expect("connects");
    let report = runtime
        .block_on(bench.run(WARMUP, attempt.window, |_| {}))
        .unwrap_or_else(|e| panic!("{} / {}: run failed: {e}", kind.name(), case.name));
    drop(runtime);
    drop(bench);
    drop(server);
    let verified = log
        .verify()
        .unwrap_or_else(|e| panic!("{} / {}: {e}", kind.name(), case.name));
    (params, report, verified)
}

/// Checks what must hold for any attempt, whatever the machine's load.
fn check_sound(
    kind: StrategyKind,
    params: &Params,
    report: &Report,
    verified: &Verified,
    worst_wakeup: Duration,
    what: &str,
) {
    let s = &report.stats;
    assert!(
        report.violations().is_empty(),
        "{what}: {:?}",
        report.violations()
    );
    assert_eq!(
        s.issued as usize, verified.measured,
        "{what}: issued vs log"
    );
    assert_eq!(
        s.ok as usize,
        verified.measured_count(Outcome::Ok),
        "{what}: ok vs log"
    );
    assert_eq!(
        s.timeouts as usize,
        verified.measured_count(Outcome::Timeout),
        "{what}: timeouts vs log"
    );
    assert_eq!(
        (s.errors, s.unresolved, report.handlers_left),
        (0, 0, 0),
        "{what}"
    );
    assert_eq!(s.issued, s.ok + s.timeouts, "{what}");
    // Every timed-out request's answer still arrives, inside the drain.
    assert_eq!(report.late_responses, s.timeouts, "{what}: late responses");
    let timer = |name: &str| {
        report
            .timer
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("{what}: timer.{name} missing"))
    };
    if kind.has_timeout() {
        assert!(timer("registered") > 0, "{what}: no timer registered");
    } else {
        assert_eq!(s.timeouts, 0, "{what}: timeouts without a timeout");
        assert_eq!(timer("registered"), 0, "{what}");
    }
    let allowed = allowed_lateness(kind, params, worst_wakeup);
    assert!(
        verified.max_lateness() <= allowed,
        "{what}: a timeout fired {:?} after its deadline (allowed {allowed:?})",
        verified.max_lateness()
    );
}

/// How the outcomes of an attempt differ from what `case` expects, if they do.
fn outcome_error(
    kind: StrategyKind,
    case: &Case,
    params: &Params,
    report: &Report,
) -> Option<String> {
    let s = &report.stats;
    if !kind.has_timeout() {
        return None; // It has no timeouts (checked by check_sound) and nothing to race.
    }
    match case.expect {
        Expect::Exact => {
            // Exactly the slow requests time out, none without slow answers.
            let expected = if params.slow_fraction > 0.0 {
                report.server_slow
            } else {
                0
            };
            (s.timeouts != expected).then(|| {
                format!(
                    "{} timeouts, {expected} expected ({} answers slow)",
                    s.timeouts, report.server_slow
                )
            })
        }
        Expect::Race => (s.timeouts == 0 || s.ok == 0).then(|| {
            format!(
                "answers and timers did not race: {} ok, {} timeouts",
                s.ok, s.timeouts
            )
        }),
    }
}

/// Runs `kind` under `case` and checks everything that must hold for it, in attempts as the
/// module documentation says.
pub fn check(kind: StrategyKind, case: &Case) {
    let _one_at_a_time = serial();
    let mut attempt = Attempt {
        window: WINDOW,
        timeout: case.timeout,
    };
    let mut last = String::new();
    for number in 1..=MAX_ATTEMPTS {
        let what = format!("{} / {} #{number}", kind.name(), case.name);
        let delay = WakeupDelay::start();
        let (params, report, verified) = run(kind, case, attempt);
        let worst = delay.worst();
        drop(delay);
        let s = &report.stats;
        last = format!(
            "{what}: window {:?} timeout {:?} issued {} ok {} timeouts {} late {} \
             server_slow {} max lateness {:?} worst wake-up {worst:?}",
            attempt.window,
            params.timeout,
            s.issued,
            s.ok,
            s.timeouts,
            report.late_responses,
            report.server_slow,
            verified.max_lateness(),
        );
        eprintln!("{last} timer {:?}", report.timer);
        check_sound(kind, &params, &report, &verified, worst, &what);

        let slow_wanted = if params.slow_fraction > 0.0 {
            MIN_SLOW
        } else {
            0
        };
        if s.issued < MIN_ISSUED || report.server_slow < slow_wanted {
            // Too little happened to judge: run longer.
            attempt.window = (attempt.window * 2).min(MAX_WINDOW);
            last = format!("{last}: too few requests");
            continue;
        }
        let Some(error) = outcome_error(kind, case, &params, &report) else {
            return;
        };
        let needed = timeout_needed(kind, &params, worst);
        assert!(
            params.timeout < needed,
            "{what}: {error}, although threads woke at worst {worst:?} late, which a \
             {:?} timeout covers",
            params.timeout
        );
        // The machine stalled more than this timeout covers: again with one that covers it,
        // in whole milliseconds, and a window as much longer (requests take as much longer).
        let timeout = (params.timeout * 2)
            .max(needed)
            .min(MAX_TIMEOUT.max(case.timeout));
        let timeout = Duration::from_millis(
            u64::try_from(timeout.as_micros().div_ceil(1000)).expect("a timeout fits u64 ms"),
        );
        attempt.window = attempt
            .window
            .mul_f64(timeout.as_secs_f64() / attempt.timeout.as_secs_f64())
            .min(MAX_WINDOW);
        attempt.timeout = timeout;
        last = format!("{last}: {error}");
    }
    panic!("{MAX_ATTEMPTS} attempts, none conclusive; the last: {last}");
}
