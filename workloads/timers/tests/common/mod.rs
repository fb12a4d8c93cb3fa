//! Shared by the strategy tests of this crate and of `timers-legacy` (included by path):
//! runs a strategy in-process against an in-process server with a resolution log, and
//! checks that every request resolved exactly once, that the counters agree with the log
//! and the server, and that no timeout fired early or more than its granularity late.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use timers::client::Bench;
use timers::completion::Outcome;
use timers::metrics::Report;
use timers::params::{self, Params};
use timers::resolution_log::{ResolutionLog, Verified};
use timers::server::{Server, ServerConfig};
use timers::strategy::StrategyKind;

/// Lateness allowed on top of a strategy's granularity and the measured wake-up delay
/// (`WakeupDelay`): this runs on small, busy machines.
pub const SLACK: Duration = Duration::from_millis(250);
/// Wake-ups in series between a deadline and its resolution: the timer's thread (a runtime
/// worker, a wheel's or an executor's) and the one it hands the expiry to.
const HOPS: u32 = 2;

#[path = "../../engines/tests/engines/wakeup_delay.rs"]
mod wakeup_delay;
pub use wakeup_delay::WakeupDelay;

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
}

/// Answers come at once: nothing may time out.
pub const STEADY: Case = Case {
    name: "steady",
    params: &["timeout_ms=2000"],
};

/// 5% of answers come after 450 ms, the timeout is 150 ms: exactly those time out. The
/// timeout leaves room for scheduling stalls of a busy 2-core machine, so that an answer
/// due at once never misses it, and the slow delay for a late-firing timer.
pub const SLOW_TAIL: Case = Case {
    name: "slow-tail",
    params: &["slow_fraction=0.05", "slow_delay_ms=450", "timeout_ms=150"],
};

/// Every answer takes about as long as the timeout: answers and timers race.
pub const RACE: Case = Case {
    name: "race",
    params: &["service_time_us=10000", "service_dist=exp", "timeout_ms=10"],
};

fn resolve(case: &Case) -> Params {
    let overrides: Vec<String> = BASE
        .iter()
        .chain(case.params)
        .map(|s| s.to_string())
        .collect();
    params::resolve(None, &overrides).expect("test parameters are valid")
}

/// How late a timeout of `kind` may fire at most: its granularity, plus HOPS wake-ups each as
/// late as `delay` saw this machine wake threads, plus SLACK. A fixed bound fails on a busy
/// 2-core machine; on a quiet one this is granularity + SLACK as before.
pub fn allowed_lateness(kind: StrategyKind, params: &Params, delay: &WakeupDelay) -> Duration {
    let granularity = match kind {
        StrategyKind::HashedWheel | StrategyKind::HashedWheelOffload => params.tick,
        StrategyKind::ScheduledExecutor | StrategyKind::EventExecutor => Duration::ZERO,
        _ => Duration::from_millis(1),
    };
    granularity + delay.worst() * HOPS + SLACK
}

/// Runs `kind` under `case` with a resolution log.
pub fn run(kind: StrategyKind, case: &Case) -> (Params, Report, Verified) {
    let _one_at_a_time = serial();
    let params = resolve(case);
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
        .block_on(bench.run(
            Duration::from_millis(100),
            Duration::from_millis(500),
            |_| {},
        ))
        .unwrap_or_else(|e| panic!("{} / {}: run failed: {e}", kind.name(), case.name));
    drop(runtime);
    drop(bench);
    drop(server);
    let verified = log
        .verify()
        .unwrap_or_else(|e| panic!("{} / {}: {e}", kind.name(), case.name));
    (params, report, verified)
}

/// Runs `kind` under `case` and checks everything that must hold for it.
pub fn check(kind: StrategyKind, case: &Case) {
    let delay = WakeupDelay::start();
    let (params, report, verified) = run(kind, case);
    let what = format!("{} / {}", kind.name(), case.name);
    let s = &report.stats;
    eprintln!(
        "{what}: issued {} ok {} timeouts {} late {} server_slow {} max lateness {:?} timer {:?}",
        s.issued,
        s.ok,
        s.timeouts,
        report.late_responses,
        report.server_slow,
        verified.max_lateness(),
        report.timer
    );
    assert!(
        report.violations().is_empty(),
        "{what}: {:?}",
        report.violations()
    );
    assert!(s.issued >= 100, "{what}: only {} requests issued", s.issued);
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
    if params.slow_fraction > 0.0 {
        assert!(
            report.server_slow > 0,
            "{what}: the server made nothing slow"
        );
        if kind.has_timeout() {
            // Exactly the slow requests time out.
            assert_eq!(s.timeouts, report.server_slow, "{what}: timeouts vs slow");
        }
    } else if params.service_time.is_zero() {
        assert_eq!(s.timeouts, 0, "{what}: timeouts without slow answers");
    } else if kind.has_timeout() {
        assert!(
            s.timeouts > 0 && s.ok > 0,
            "{what}: answers and timers did not race"
        );
    }
    let allowed = allowed_lateness(kind, &params, &delay);
    assert!(
        verified.max_lateness() <= allowed,
        "{what}: a timeout fired {:?} after its deadline (allowed {allowed:?})",
        verified.max_lateness()
    );
}
