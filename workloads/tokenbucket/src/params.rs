//! The suite's strategies, scenarios and parameters, and their typed, checked form.

use std::time::Duration;

use token_bucket::reactor::{seastar_idle_poll_us, ReactorConfig, TASK_QUOTA_NS};
use token_bucket::shared_token_bucket::MAX_RATE;
use token_bucket::Replenish;

use suite_cli::param_values::{
    choice, find_named, float, int, logical_cpus, resolve_values, spec, BadInput, Kind, ParamSpec,
    Scenario, Value,
};

/// The suite's strategies: the bucket's.
pub use token_bucket::BucketStrategy as Strategy;

/// The strategy named `name`.
pub fn strategy(name: &str) -> Result<Strategy, BadInput> {
    find_named("strategy", &Strategy::ALL, Strategy::name, name)
}

/// A strategy's line in `describe`.
pub fn strategy_help(strategy: Strategy) -> &'static str {
    match strategy {
        Strategy::Pure => "shared_token_bucket<capped_release::no>: replenished by time up to limit",
        Strategy::CappedRelease => {
            "shared_token_bucket<capped_release::yes>: replenished only up to the tokens released back (seastar before #1766)"
        }
        Strategy::FlowMonitor => {
            "pure bucket + #1766's flow monitor: EMA of grabbed/released tokens raises each grab's cost above flow_threshold"
        }
    }
}

/// How a worker waits for a deficiency to go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Timer sleep of `duration_for(deficiency)` (the perf test's `work_sleeping`).
    Sleep,
    /// Yield to the shard's other tasks and poll again (`work_yielding`).
    Yield,
}

/// Every scenario, the default first.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "sleeping",
        help: "workers sleep duration_for(deficiency) when the bucket is empty (perf test sleeping_throughput)",
        params: &[("wait", Value::Choice("sleep")), ("hog", Value::Choice("off"))],
    },
    Scenario {
        name: "yielding",
        help: "workers yield and poll the bucket again (perf test yielding_throughput)",
        params: &[("wait", Value::Choice("yield")), ("hog", Value::Choice("off"))],
    },
    Scenario {
        name: "sleeping-hog",
        help: "sleeping workers, plus a CPU hog task per shard: sleep Exp(hog_rest_us), spin Exp(hog_busy_us) without yielding (perf test sleeping_throughput_with_hog)",
        params: &[("wait", Value::Choice("sleep")), ("hog", Value::Choice("on"))],
    },
    Scenario {
        name: "yielding-hog",
        help: "yielding workers plus the CPU hog task per shard (ours: the perf test has no such case)",
        params: &[("wait", Value::Choice("yield")), ("hog", Value::Choice("on"))],
    },
];

/// Most grabs a shard's tick may take on average. A worker does not yield until it got its
/// per-tick cap (limit / shards tokens) or the bucket ran dry, and when the bucket's rate is
/// above what the shards can grab it never runs dry: a tick of limit / shards tokens in
/// grabs of (1 + grab_max) / 2 tokens on average then holds the shard for that many grabs.
/// At ~100 ns a grab this is about a millisecond (seastar's task quota is 0.5 ms); at the
/// perf test's limit with rate 1e15 it was 4e9 grabs, minutes of one tick that began before
/// the measured window and so counted nothing.
pub const MAX_TICK_GRABS: u64 = 10_000;

/// The parameter specs, with machine-dependent defaults resolved.
pub fn specs() -> Vec<ParamSpec> {
    let (int, float) = (Kind::int, Kind::float);
    // The bucket's own clamp (rate x an hour's replenish fits a u64); above it the bucket
    // would silently run slower than asked. It is below 2^53, so JSON carries it exactly.
    let max_rate = MAX_RATE as i64;
    vec![
        spec("shards", int(1, 1024), Value::Int(logical_cpus()),
            "shards (threads, each a cooperative reactor) sharing the bucket; pinned one per CPU when there are enough (default: logical CPUs)"),
        spec("rate", int(1, max_rate), Value::Int(1_000_000),
            "bucket rate, tokens/s"),
        spec("limit", int(0, max_rate), Value::Int(0),
            "most tokens in the bucket (replenish_limit); 0 = rate/2000, the perf test's; the per-tick cap of a shard is limit/shards"),
        spec("threshold", int(1, max_rate), Value::Int(1),
            "replenish only once this many tokens accumulated (replenish_threshold); at most limit"),
        spec("replenish", Kind::Choice(&["round", "exact"]), Value::Choice("round"),
            "round: seastar's round(rate x elapsed) tokens, timestamp += elapsed (a shard polling every 0.5-1 token's time gets a token each poll: above the rate); exact: floor the tokens, timestamp += their exact time (#1723 without its max_delta bug)"),
        spec("max_grab", int(1, 1_000_000), Value::Int(128),
            "grab sizes are uniform in 1..=min(limit/shards, max_grab)"),
        spec("release_period_us", int(1, 1_000_000), Value::Int(500),
            "releaser period: each shard releases its share of the rate for the real time elapsed"),
        spec("over_release", float(0.0, 1.0), Value::Float(0.0),
            "release this fraction more than the rate's share (0.01 = #1766's 1% experiment)"),
        spec("flow_threshold", float(0.0, 1000.0), Value::Float(1.1),
            "flow-monitor: costs grow while the ratio exceeds this (seastar --io-flow-rate-threshold)"),
        spec("flow_smoothing", float(0.0, 1.0), Value::Float(0.95),
            "flow-monitor: EMA factor of the ratio (flow_ratio_ema_factor)"),
        spec("flow_period_us", int(100, 60_000_000), Value::Int(75_000),
            "flow-monitor: ratio update period (io_latency_goal 0.75 ms x averaging_decay_ticks 100)"),
        spec("wait", Kind::Choice(&["sleep", "yield"]), Value::Choice("sleep"),
            "how a worker waits for a deficiency: timer sleep of duration_for(deficiency), or yield"),
        spec("hog", Kind::Choice(&["off", "on"]), Value::Choice("off"),
            "a CPU hog task on every shard"),
        spec("hog_busy_us", int(1, 1_000_000), Value::Int(300),
            "hog: mean of the exponential busy spin (no yield)"),
        spec("hog_rest_us", int(1, 1_000_000), Value::Int(100),
            "hog: mean of the exponential sleep between spins"),
        spec("idle_poll_us", int(0, 1_000_000), Value::Int(seastar_idle_poll_us() as i64),
            "an idle shard busy-polls this long before sleeping in the kernel (seastar --idle-poll-time-us; default reactor::calculate_poll_time: 2000 if /sys/hypervisor/type exists, else 200)"),
        spec("task_quota_us", int(1, 1_000_000), Value::Int((TASK_QUOTA_NS / 1_000) as i64),
            "longest batch of tasks between timer checks (seastar --task-quota-ms 0.5)"),
        spec("pin", Kind::Choice(&["auto", "off"]), Value::Choice("auto"),
            "auto: pin shard i to the i-th allowed CPU when there are at least as many CPUs as shards (as seastar pins reactors); off: let the kernel place them"),
        spec("series_ms", int(10, 60_000), Value::Int(100),
            "sampling period of tokens_per_sec_series"),
        spec("seed", int(0, (1 << 53) - 1), Value::Int(1),
            "seed of grab sizes and hog periods"),
    ]
}

/// Fully resolved, typed and cross-checked parameters of one run.
#[derive(Clone, Debug)]
pub struct Params {
    pub shards: usize,
    pub rate: u64,
    /// Resolved: never 0.
    pub limit: u64,
    pub threshold: u64,
    pub replenish: Replenish,
    pub max_grab: u64,
    pub release_period: Duration,
    pub over_release: f64,
    pub flow_threshold: f64,
    pub flow_smoothing: f64,
    pub flow_period: Duration,
    pub wait: Wait,
    pub hog: bool,
    pub hog_busy: Duration,
    pub hog_rest: Duration,
    pub reactor: ReactorConfig,
    pub pin: bool,
    pub series: Duration,
    pub seed: u64,
    values: Vec<(&'static str, Value)>,
}

/// Resolves and checks the parameters of a run.
pub fn resolve(scenario: Option<&Scenario>, overrides: &[String]) -> Result<Params, BadInput> {
    Params::from_values(resolve_values(&specs(), scenario, overrides)?)
}

impl Params {
    fn from_values(mut values: Vec<(&'static str, Value)>) -> Result<Params, BadInput> {
        let int = |name: &str| u64::try_from(int(&values, name)).expect("int params have min >= 0");
        let float = |name: &str| float(&values, name);
        let choice = |name: &str| choice(&values, name);
        let rate = int("rate");
        let shards = int("shards");
        let threshold = int("threshold");
        let limit = match int("limit") {
            0 => rate / 2000,
            n => n,
        };
        if limit < threshold {
            return Err(BadInput(format!(
                "bad value '{limit}' for parameter 'limit' (valid: an integer >= threshold ({threshold}); 0 = rate/2000 = {})",
                rate / 2000
            )));
        }
        if limit < shards {
            return Err(BadInput(format!(
                "bad value '{limit}' for parameter 'limit' (valid: an integer >= shards ({shards}), so that each shard's per-tick cap limit/shards is at least 1 token)"
            )));
        }
        let max_grab = int("max_grab");
        let grab_max = (limit / shards).min(max_grab);
        let most = shards * MAX_TICK_GRABS * (grab_max + 1) / 2;
        if limit > most {
            return Err(BadInput(format!(
                "bad value '{limit}' for parameter 'limit' (valid: at most {most} = shards x {MAX_TICK_GRABS} grabs of (1 + max_grab) / 2 tokens, so that a shard's tick of limit/shards tokens ends; 0 = rate/2000 = {}; lower limit or raise max_grab)",
                rate / 2000
            )));
        }
        let params = Params {
            shards: shards as usize,
            rate,
            limit,
            threshold,
            replenish: if choice("replenish") == "exact" {
                Replenish::Exact
            } else {
                Replenish::Round
            },
            max_grab,
            release_period: Duration::from_micros(int("release_period_us")),
            over_release: float("over_release"),
            flow_threshold: float("flow_threshold"),
            flow_smoothing: float("flow_smoothing"),
            flow_period: Duration::from_micros(int("flow_period_us")),
            wait: if choice("wait") == "yield" {
                Wait::Yield
            } else {
                Wait::Sleep
            },
            hog: choice("hog") == "on",
            hog_busy: Duration::from_micros(int("hog_busy_us")),
            hog_rest: Duration::from_micros(int("hog_rest_us")),
            reactor: ReactorConfig {
                task_quota_ns: int("task_quota_us") * 1_000,
                idle_poll_ns: int("idle_poll_us") * 1_000,
            },
            pin: choice("pin") == "auto",
            series: Duration::from_millis(int("series_ms")),
            seed: int("seed"),
            values: Vec::new(),
        };
        // Report the limit actually used.
        if let Some(slot) = values.iter_mut().find(|(n, _)| *n == "limit") {
            slot.1 = Value::Int(limit as i64);
        }
        Ok(Params { values, ..params })
    }

    /// A shard's per-tick cap (the perf test's worker `threshold`): limit / shards.
    pub fn per_tick_cap(&self) -> u64 {
        self.limit / self.shards as u64
    }

    /// The releaser's tokens per period: the perf test's `const uint64_t release_per_tick`
    /// = rate / shards x period, truncated when it is set.
    pub fn release_per_period(&self) -> u64 {
        (self.rate as f64 / self.shards as f64 * self.release_period.as_secs_f64()) as u64
    }

    /// Largest grab: min(per-tick cap, max_grab).
    pub fn grab_max(&self) -> u64 {
        self.per_tick_cap().min(self.max_grab)
    }

    /// The resolved values, in spec order.
    pub fn values(&self) -> &[(&'static str, Value)] {
        &self.values
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use suite_cli::param_values::{find_scenario, param_words};

    fn scenario(name: Option<&str>) -> Result<&'static Scenario, BadInput> {
        find_scenario(SCENARIOS, name)
    }

    #[test]
    fn defaults_are_the_perf_tests() {
        let p = resolve(Some(scenario(None).unwrap()), &param_words(&["shards=4"])).unwrap();
        assert_eq!(p.rate, 1_000_000);
        assert_eq!(p.limit, 500);
        assert_eq!(p.threshold, 1);
        assert_eq!(p.per_tick_cap(), 125);
        assert_eq!(p.grab_max(), 125);
        assert_eq!(p.wait, Wait::Sleep);
        assert!(!p.hog);
        assert_eq!(p.replenish, Replenish::Round);
        assert_eq!(p.reactor.task_quota_ns, 500_000);
        assert_eq!(p.reactor.idle_poll_ns, seastar_idle_poll_us() * 1_000);
        let p = resolve(Some(scenario(Some("yielding-hog")).unwrap()), &[]).unwrap();
        assert_eq!(p.wait, Wait::Yield);
        assert!(p.hog);
    }

    /// The perf test's `release_per_tick` is a `const uint64_t`: 1M t/s over 64 shards is
    /// 7.8125 tokens per 0.5 ms, released as 7 (10% under the rate), 250 at 2 shards.
    #[test]
    fn the_release_share_is_truncated_as_the_perf_tests() {
        let at = |shards: &str| {
            resolve(
                Some(scenario(None).unwrap()),
                &param_words(&[shards, "limit=6400"]),
            )
            .unwrap()
            .release_per_period()
        };
        assert_eq!(at("shards=64"), 7);
        assert_eq!(at("shards=32"), 15);
        assert_eq!(at("shards=2"), 250);
    }

    #[test]
    fn bad_input_names_the_valid_range() {
        let s = Some(scenario(None).unwrap());
        let err = |o: &[&str]| resolve(s, &param_words(o)).unwrap_err().0;
        assert!(err(&["rate=0"])
            .starts_with("bad value '0' for parameter 'rate' (valid: an integer in 1..="));
        assert!(err(&["shards=0"]).contains("an integer in 1..=1024"));
        let e = err(&["limit=5", "threshold=10"]);
        assert!(
            e.contains("parameter 'limit'") && e.contains(">= threshold (10)"),
            "{e}"
        );
        let e = err(&["rate=1000", "threshold=2"]);
        assert!(e.starts_with("bad value '0' for parameter 'limit'"), "{e}");
        let e = err(&["shards=8", "limit=4"]);
        assert!(e.contains(">= shards (8)"), "{e}");
        let e = scenario(Some("burst")).unwrap_err().0;
        assert_eq!(
            e,
            "unknown scenario 'burst' (valid: sleeping, yielding, sleeping-hog, yielding-hog)"
        );
        assert_eq!(
            strategy("capped").unwrap_err().0,
            "unknown strategy 'capped' (valid: pure, capped-release, flow-monitor)"
        );
    }

    /// The range is what the bucket holds: its max rate runs (the per-tick cap permitting),
    /// one more is refused; and a rate the shards cannot grab at the default limit rate/2000
    /// (a tick of billions of grabs) is refused instead of running for minutes.
    #[test]
    fn rate_range_is_what_the_bucket_holds_and_ticks_end() {
        let s = Some(scenario(None).unwrap());
        let max = MAX_RATE.to_string();
        let p = resolve(
            s,
            &param_words(&[&format!("rate={max}"), "limit=1000", "shards=2"]),
        );
        assert_eq!(p.unwrap().rate, MAX_RATE);
        let e = resolve(s, &param_words(&[&format!("rate={}", MAX_RATE + 1)]))
            .unwrap_err()
            .0;
        assert!(e.contains(&format!("an integer in 1..={max}")), "{e}");
        let e = resolve(s, &param_words(&["rate=1000000000000000", "shards=2"]))
            .unwrap_err()
            .0;
        assert!(
            e.starts_with(
                "bad value '500000000000' for parameter 'limit' (valid: at most 1290000 ="
            ),
            "{e}"
        );
        // The boundary itself: shards x MAX_TICK_GRABS x (1 + 128) / 2 tokens.
        assert!(resolve(s, &param_words(&["shards=2", "limit=1290000"])).is_ok());
        assert!(resolve(s, &param_words(&["shards=2", "limit=1290001"])).is_err());
        // Bigger grabs make a tick of the same tokens shorter.
        assert!(resolve(
            s,
            &param_words(&["shards=2", "limit=1290001", "max_grab=1000"])
        )
        .is_ok());
    }

    #[test]
    fn every_scenario_value_is_a_valid_param() {
        let specs = specs();
        for s in SCENARIOS {
            for (name, _) in s.params {
                assert!(specs.iter().any(|p| p.name == *name), "{name}");
            }
            resolve(Some(s), &[]).unwrap();
        }
    }
}
