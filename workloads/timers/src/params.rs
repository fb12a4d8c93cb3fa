//! The workload's parameters and scenarios: their specs for `describe`, and their typed,
//! resolved form [`Params`] (values checked and resolved by [`suite_cli::param_values`]).

use std::time::Duration;

use crate::strategy::StrategyKind;

use suite_cli::param_values::{
    choice, find_scenario, float, int, resolve_values, BadInput, Kind, ParamSpec, Scenario, Value,
};

/// Every scenario, the default first.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "steady",
        help: "cql-stress-like write load, every request answered at once (the scylla PR's run)",
        params: &[
            ("mode", Value::Choice("write")),
            ("slow_fraction", Value::Float(0.0)),
        ],
    },
    Scenario {
        name: "slow-tail",
        help: "1% of requests answered after 300 ms with a 100 ms timeout: exactly those time out",
        params: &[
            ("slow_fraction", Value::Float(0.01)),
            ("slow_delay_ms", Value::Int(300)),
            ("timeout_ms", Value::Int(100)),
        ],
    },
    Scenario {
        name: "timer-ops",
        help: "timer micro-costs in process, no network: tasks arm the strategy's timeout, a partner task completes the op after service_time_us (0: a yield), the timeout is cancelled; ops_per_sec and cpu_ns_per_op count the completed ops (not timed out) as the served scenarios count answered requests, ns_per_op is CPU per op completed or timed out (the scylla-driver strategies do not run it)",
        params: &[
            ("concurrency", Value::Int(64)),
            ("service_time_us", Value::Int(0)),
        ],
    },
];

/// Request payloads, as cql-stress sizes a write or a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Key + value sent, empty reply.
    Write,
    /// Key sent, value returned.
    Read,
}

/// How the server's service time is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServiceDist {
    /// Always `service_time_us`.
    Fixed,
    /// Exponential with mean `service_time_us`, capped at ten times the mean.
    Exp,
}

/// Fully resolved, typed parameters of one run.
#[derive(Clone, Debug)]
pub struct Params {
    pub threads: usize,
    /// Already resolved: never 0.
    pub connections: usize,
    pub concurrency: usize,
    /// Ops/s for the open loop; 0 = closed loop.
    pub max_rate: u64,
    pub partition_count: u64,
    pub mode: Mode,
    pub value_bytes: u32,
    pub timeout: Duration,
    pub service_time: Duration,
    pub service_dist: ServiceDist,
    pub slow_fraction: f64,
    pub slow_delay: Duration,
    pub server_threads: usize,
    pub executor_threads: usize,
    pub computation_threads: usize,
    pub tick: Duration,
    pub wheel_size: usize,
    pub seed: u64,
    values: Vec<(&'static str, Value)>,
}

/// Number of logical CPUs, the default for thread counts.
pub fn logical_cpus() -> i64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as i64)
}

/// The parameter specs, with machine-dependent defaults resolved.
pub fn specs() -> Vec<ParamSpec> {
    let cpus = logical_cpus();
    let int = |min, max| Kind::Int { min, max };
    let spec = |name, kind, default, help| ParamSpec {
        name,
        kind,
        default,
        help,
    };
    vec![
        spec("threads", int(1, 1024), Value::Int(cpus),
            "client tokio worker threads (default: logical CPUs)"),
        spec("connections", int(0, 10_000), Value::Int(0),
            "client connections to the server; 0 = one per client thread"),
        spec("concurrency", int(1, 1_000_000), Value::Int(4096),
            "requests in flight in total, spread over the connections"),
        spec("max_rate", int(0, 100_000_000), Value::Int(0),
            "0 = closed loop; > 0 = open loop at this many ops/s, latency from the intended send time"),
        spec("partition_count", int(1, 1_000_000_000_000), Value::Int(10_000),
            "number of distinct keys, drawn uniformly"),
        spec("mode", Kind::Choice(&["write", "read"]), Value::Choice("write"),
            "write: key + value sent, empty reply; read: key sent, value returned"),
        spec("value_bytes", int(0, 1 << 20), Value::Int(100),
            "value size in bytes"),
        spec("timeout_ms", int(1, 3_600_000), Value::Int(5000),
            "client-side request timeout (ignored by strategy none)"),
        spec("service_time_us", int(0, 10_000_000), Value::Int(0),
            "server service time before answering (tokio timer, 1 ms resolution; 0 = answer at once)"),
        spec("service_dist", Kind::Choice(&["fixed", "exp"]), Value::Choice("fixed"),
            "service time distribution: fixed, or exponential with that mean (capped at 10x)"),
        spec("slow_fraction", Kind::Float { min: 0.0, max: 1.0 }, Value::Float(0.0),
            "fraction of requests the server answers only after slow_delay_ms"),
        spec("slow_delay_ms", int(0, 3_600_000), Value::Int(1000),
            "delay of the slow requests"),
        spec("server_threads", int(1, 1024), Value::Int(cpus),
            "server tokio worker threads (default: logical CPUs)"),
        spec("executor_threads", int(1, 1024), Value::Int(2),
            "scheduled-executor: worker threads (Java ScheduledThreadPoolExecutor core pool size)"),
        spec("computation_threads", int(1, 64), Value::Int(2),
            "event-executor and hashed-wheel-offload: executors (threads) in lettuce's event executor group; lettuce's computationThreadPoolSize, at least 2, the CPU count by default"),
        spec("tick_ms", int(1, 60_000), Value::Int(100),
            "hashed-wheel tick"),
        spec("wheel_size", int(1, 1 << 20), Value::Int(512),
            "hashed-wheel buckets"),
        spec("seed", int(0, (1 << 53) - 1), Value::Int(1),
            "seed of keys, slow requests and service times"),
    ]
}

/// Looks a scenario up by name (`None` = the default scenario).
pub fn scenario(name: Option<&str>) -> Result<&'static Scenario, BadInput> {
    find_scenario(SCENARIOS, name)
}

/// Resolves the parameters of a run: `overrides` (`k=v` texts from `--param`) over the
/// scenario's values (if any) over the defaults.
pub fn resolve(scenario: Option<&Scenario>, overrides: &[String]) -> Result<Params, BadInput> {
    resolve_values(&specs(), scenario, overrides).map(Params::from_values)
}

impl Params {
    /// Whether exactly the slow requests should time out under `strategy`: it has a timeout,
    /// some requests are slow, and the timeout is shorter than their delay.
    pub fn slow_tail_expected(&self, strategy: StrategyKind) -> bool {
        strategy.has_timeout() && self.slow_fraction > 0.0 && self.timeout < self.slow_delay
    }

    fn from_values(mut values: Vec<(&'static str, Value)>) -> Params {
        let int = |name: &str| u64::try_from(int(&values, name)).expect("int params have min >= 0");
        let float = |name: &str| float(&values, name);
        let choice = |name: &str| choice(&values, name);
        let threads = int("threads") as usize;
        let connections = match int("connections") as usize {
            0 => threads,
            n => n,
        };
        let params = Params {
            threads,
            connections,
            concurrency: int("concurrency") as usize,
            max_rate: int("max_rate"),
            partition_count: int("partition_count"),
            mode: if choice("mode") == "read" {
                Mode::Read
            } else {
                Mode::Write
            },
            value_bytes: int("value_bytes") as u32,
            timeout: Duration::from_millis(int("timeout_ms")),
            service_time: Duration::from_micros(int("service_time_us")),
            service_dist: if choice("service_dist") == "exp" {
                ServiceDist::Exp
            } else {
                ServiceDist::Fixed
            },
            slow_fraction: float("slow_fraction"),
            slow_delay: Duration::from_millis(int("slow_delay_ms")),
            server_threads: int("server_threads") as usize,
            executor_threads: int("executor_threads") as usize,
            computation_threads: int("computation_threads") as usize,
            tick: Duration::from_millis(int("tick_ms")),
            wheel_size: int("wheel_size") as usize,
            seed: int("seed"),
            values: Vec::new(),
        };
        // Report the connection count actually used.
        if let Some(slot) = values.iter_mut().find(|(n, _)| *n == "connections") {
            slot.1 = Value::Int(connections as i64);
        }
        Params { values, ..params }
    }

    /// The resolved values, in spec order.
    pub fn values(&self) -> &[(&'static str, Value)] {
        &self.values
    }

    /// `name=value` texts for the parameters in `names`, as `--param` takes them.
    pub fn overrides_for(&self, names: &[&str]) -> Vec<String> {
        self.values
            .iter()
            .filter(|(name, _)| names.contains(name))
            .map(|(name, value)| format!("{name}={value}"))
            .collect()
    }

    /// Longest delay the server adds to an answer that is not slow.
    pub fn max_service_time(&self) -> Duration {
        match self.service_dist {
            ServiceDist::Fixed => self.service_time,
            ServiceDist::Exp => self.service_time * 10,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use suite_cli::param_values::values_json;

    fn overrides(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn precedence_is_param_over_scenario_over_default() {
        let slow = scenario(Some("slow-tail")).unwrap();
        let p = resolve(Some(slow), &[]).unwrap();
        assert_eq!(p.timeout, Duration::from_millis(100));
        assert_eq!(p.slow_fraction, 0.01);
        assert_eq!(p.concurrency, 4096);
        let p = resolve(Some(slow), &overrides(&["timeout_ms=250", "concurrency=8"])).unwrap();
        assert_eq!(p.timeout, Duration::from_millis(250));
        assert_eq!(p.concurrency, 8);
        assert_eq!(p.slow_delay, Duration::from_millis(300));
    }

    #[test]
    fn connections_zero_means_one_per_thread() {
        let steady = scenario(None).unwrap();
        let p = resolve(Some(steady), &overrides(&["threads=3"])).unwrap();
        assert_eq!(p.connections, 3);
        assert_eq!(values_json(p.values())["connections"], 3);
        let p = resolve(Some(steady), &overrides(&["threads=3", "connections=5"])).unwrap();
        assert_eq!(p.connections, 5);
    }

    #[test]
    fn bad_input_is_named_with_the_valid_choices() {
        let steady = scenario(None).unwrap();
        let err = |o: &[&str]| resolve(Some(steady), &overrides(o)).unwrap_err().0;
        let e = err(&["nope=1"]);
        assert!(
            e.starts_with("unknown parameter 'nope' (valid: threads, "),
            "{e}"
        );
        let e = err(&["threads=0"]);
        assert_eq!(
            e,
            "bad value '0' for parameter 'threads' (valid: an integer in 1..=1024)"
        );
        let e = err(&["mode=scan"]);
        assert_eq!(
            e,
            "bad value 'scan' for parameter 'mode' (valid: one of write, read)"
        );
        assert!(err(&["slow_fraction=1.5"]).contains("a number in 0..=1"));
        assert!(err(&["slow_fraction=NaN"]).contains("'slow_fraction'"));
        assert!(err(&["concurrency"]).starts_with("bad --param 'concurrency'"));
        let e = scenario(Some("burst")).unwrap_err().0;
        assert_eq!(
            e,
            "unknown scenario 'burst' (valid: steady, slow-tail, timer-ops)"
        );
    }

    #[test]
    fn overrides_reproduce_the_params() {
        let slow = scenario(Some("slow-tail")).unwrap();
        let p = resolve(Some(slow), &overrides(&["mode=read", "slow_fraction=0.25"])).unwrap();
        let names = ["mode", "slow_fraction", "slow_delay_ms", "timeout_ms"];
        let again = resolve(None, &p.overrides_for(&names)).unwrap();
        assert_eq!(again.mode, Mode::Read);
        assert_eq!(again.slow_fraction, 0.25);
        assert_eq!(again.slow_delay, Duration::from_millis(300));
        assert_eq!(again.timeout, Duration::from_millis(100));
        assert_eq!(p.overrides_for(&["seed"]), vec!["seed=1".to_string()]);
    }

    #[test]
    fn every_scenario_value_is_a_valid_param() {
        for s in SCENARIOS {
            let p = resolve(Some(s), &[]).unwrap();
            for (name, value) in s.params {
                let (_, resolved) = p.values().iter().find(|(n, _)| n == name).unwrap();
                assert_eq!(resolved, value, "{}: {name}", s.name);
            }
        }
    }
}
