//! The workload's parameters and scenarios: their specs for `describe`, and the validation
//! and precedence (`--param` > scenario > default) that turn command-line text into a typed
//! [`Params`]. Every rejection is a [`BadInput`] holding one line that names the bad input
//! and the valid choices or range.

use std::fmt;
use std::time::Duration;

use serde_json::{json, Map, Value as Json};

use crate::strategy::StrategyKind;

/// A parameter's value as given or defaulted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Choice(&'static str),
}

impl Value {
    fn to_json(self) -> Json {
        match self {
            Value::Int(v) => json!(v),
            Value::Float(v) => json!(v),
            Value::Choice(v) => json!(v),
        }
    }
}

/// What values a parameter accepts.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Int { min: i64, max: i64 },
    Float { min: f64, max: f64 },
    Choice(&'static [&'static str]),
}

/// One parameter as `describe` lists it.
#[derive(Clone, Debug)]
pub struct ParamSpec {
    pub name: &'static str,
    pub kind: Kind,
    pub default: Value,
    pub help: &'static str,
}

/// A named set of parameter values.
#[derive(Clone, Copy, Debug)]
pub struct Scenario {
    pub name: &'static str,
    pub help: &'static str,
    pub params: &'static [(&'static str, Value)],
}

/// The scenario used when `--scenario` is absent.
pub const DEFAULT_SCENARIO: &str = "steady";

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
        help: "timer micro-costs in process, no network: tasks arm the strategy's timeout, a partner task completes the op after service_time_us (0: a yield), the timeout is cancelled; ns_per_op is CPU per op (deadline-tracker does not run it)",
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

/// Rejected input; the message is one line without the `error: ` prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

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

fn names<'a>(items: impl Iterator<Item = &'a str>) -> String {
    items.collect::<Vec<_>>().join(", ")
}

/// Looks a scenario up by name (`None` = the default scenario).
pub fn scenario(name: Option<&str>) -> Result<&'static Scenario, BadInput> {
    let name = name.unwrap_or(DEFAULT_SCENARIO);
    SCENARIOS.iter().find(|s| s.name == name).ok_or_else(|| {
        BadInput(format!(
            "unknown scenario '{name}' (valid: {})",
            names(SCENARIOS.iter().map(|s| s.name))
        ))
    })
}

fn range_text(kind: &Kind) -> String {
    match kind {
        Kind::Int { min, max } => format!("an integer in {min}..={max}"),
        Kind::Float { min, max } => format!("a number in {min}..={max}"),
        Kind::Choice(choices) => format!("one of {}", names(choices.iter().copied())),
    }
}

/// Whether `text` is a JSON number (RFC 8259): the spellings of numbers in the workload
/// contract, so no `+`, `0x`, `_`, `.5`, `5.`, `inf` or `nan`.
fn is_json_number(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut at = 0;
    let digits = |at: &mut usize| {
        let start = *at;
        while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
            *at += 1;
        }
        *at > start
    };
    if bytes.first() == Some(&b'-') {
        at += 1;
    }
    match bytes.get(at) {
        Some(b'0') => at += 1,
        Some(b'1'..=b'9') => {
            digits(&mut at);
        }
        _ => return false,
    }
    if bytes.get(at) == Some(&b'.') {
        at += 1;
        if !digits(&mut at) {
            return false;
        }
    }
    if matches!(bytes.get(at), Some(b'e' | b'E')) {
        at += 1;
        if matches!(bytes.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        if !digits(&mut at) {
            return false;
        }
    }
    at == bytes.len()
}

/// Largest integer a double holds exactly: integral values spelt with a fraction or an
/// exponent are read through one.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// An integral value in any JSON-number spelling (`8`, `8.0`, `1e3`); `8.5` is none.
fn parse_int(text: &str) -> Option<i64> {
    if !is_json_number(text) {
        return None;
    }
    if let Ok(v) = text.parse::<i64>() {
        return Some(v);
    }
    let v: f64 = text.parse().ok()?;
    (v.fract() == 0.0 && v.abs() <= MAX_SAFE_INTEGER).then_some(v as i64)
}

/// A finite number in any JSON-number spelling.
fn parse_float(text: &str) -> Option<f64> {
    if !is_json_number(text) {
        return None;
    }
    let v: f64 = text.parse().ok()?;
    v.is_finite().then_some(v)
}

/// Parses `text` as a value of `spec`.
fn parse_value(spec: &ParamSpec, text: &str) -> Result<Value, BadInput> {
    let bad = || {
        BadInput(format!(
            "bad value '{text}' for parameter '{}' (valid: {})",
            spec.name,
            range_text(&spec.kind)
        ))
    };
    match spec.kind {
        Kind::Int { min, max } => {
            let v = parse_int(text.trim()).ok_or_else(bad)?;
            if (min..=max).contains(&v) {
                Ok(Value::Int(v))
            } else {
                Err(bad())
            }
        }
        Kind::Float { min, max } => {
            let v = parse_float(text.trim()).ok_or_else(bad)?;
            if (min..=max).contains(&v) {
                Ok(Value::Float(v))
            } else {
                Err(bad())
            }
        }
        Kind::Choice(choices) => choices
            .iter()
            .find(|c| **c == text.trim())
            .map(|c| Value::Choice(c))
            .ok_or_else(bad),
    }
}

/// Resolves the parameters of a run: `overrides` (`k=v` texts from `--param`) over the
/// scenario's values (if any) over the defaults.
pub fn resolve(scenario: Option<&Scenario>, overrides: &[String]) -> Result<Params, BadInput> {
    let specs = specs();
    let mut values: Vec<(&'static str, Value)> =
        specs.iter().map(|s| (s.name, s.default)).collect();
    let mut set = |name: &str, value: Value| {
        let slot = values
            .iter_mut()
            .find(|(n, _)| *n == name)
            .expect("scenario and override names are checked against the specs");
        slot.1 = value;
    };
    for (name, value) in scenario.map_or(&[][..], |s| s.params) {
        set(name, *value);
    }
    for text in overrides {
        let Some((name, raw)) = text.split_once('=') else {
            return Err(BadInput(format!(
                "bad --param '{text}': expected name=value (valid names: {})",
                names(specs.iter().map(|s| s.name))
            )));
        };
        let name = name.trim();
        let spec = specs.iter().find(|s| s.name == name).ok_or_else(|| {
            BadInput(format!(
                "unknown parameter '{name}' (valid: {})",
                names(specs.iter().map(|s| s.name))
            ))
        })?;
        set(spec.name, parse_value(spec, raw)?);
    }
    Ok(Params::from_values(values))
}

impl Params {
    fn from_values(values: Vec<(&'static str, Value)>) -> Params {
        let get = |name: &str| {
            values
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| *v)
                .expect("every spec has a value")
        };
        let int = |name: &str| match get(name) {
            Value::Int(v) => u64::try_from(v).expect("int params have min >= 0"),
            other => unreachable!("parameter {name} is an int, got {other:?}"),
        };
        let float = |name: &str| match get(name) {
            Value::Float(v) => v,
            other => unreachable!("parameter {name} is a float, got {other:?}"),
        };
        let choice = |name: &str| match get(name) {
            Value::Choice(v) => v,
            other => unreachable!("parameter {name} is a choice, got {other:?}"),
        };
        let threads = int("threads") as usize;
        let connections = match int("connections") as usize {
            0 => threads,
            n => n,
        };
        let mut params = Params {
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
            values,
        };
        // Report the connection count actually used.
        if let Some(slot) = params.values.iter_mut().find(|(n, _)| *n == "connections") {
            slot.1 = Value::Int(connections as i64);
        }
        params
    }

    /// The resolved values as a JSON object, for the result line.
    pub fn to_json(&self) -> Json {
        let map: Map<String, Json> = self
            .values
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_json()))
            .collect();
        Json::Object(map)
    }

    /// `name=value` texts for the parameters in `names`, as `--param` takes them.
    pub fn overrides_for(&self, names: &[&str]) -> Vec<String> {
        self.values
            .iter()
            .filter(|(name, _)| names.contains(name))
            .map(|(name, value)| match value {
                Value::Int(v) => format!("{name}={v}"),
                Value::Float(v) => format!("{name}={v}"),
                Value::Choice(v) => format!("{name}={v}"),
            })
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

/// The `describe` document.
pub fn describe() -> Json {
    let params: Vec<Json> = specs()
        .iter()
        .map(|s| {
            let mut p = json!({
                "name": s.name,
                "default": s.default.to_json(),
                "help": s.help,
            });
            let obj = p.as_object_mut().expect("object literal");
            match s.kind {
                Kind::Int { min, max } => {
                    obj.insert("type".into(), json!("int"));
                    obj.insert("min".into(), json!(min));
                    obj.insert("max".into(), json!(max));
                }
                Kind::Float { min, max } => {
                    obj.insert("type".into(), json!("float"));
                    obj.insert("min".into(), json!(min));
                    obj.insert("max".into(), json!(max));
                }
                Kind::Choice(choices) => {
                    obj.insert("type".into(), json!("choice"));
                    obj.insert("choices".into(), json!(choices));
                }
            }
            p
        })
        .collect();
    let scenarios: Vec<Json> = SCENARIOS
        .iter()
        .map(|s| {
            let params: Map<String, Json> = s
                .params
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_json()))
                .collect();
            json!({"name": s.name, "help": s.help, "params": params})
        })
        .collect();
    let strategies: Vec<Json> = StrategyKind::ALL
        .iter()
        .map(|s| json!({"name": s.name(), "help": s.help()}))
        .collect();
    let mut metrics = vec![json!({"name": "ops_per_sec", "unit": "ops/s", "better": "higher"})];
    // CPU per op of every process of the run (timer-ops: its one process; else client and
    // server together).
    metrics.push(json!({"name": "cpu_ns_per_op", "unit": "ns", "better": "lower"}));
    for p in ["p50", "p90", "p99", "p999", "max", "mean"] {
        metrics.push(json!({"name": format!("latency_ns.{p}"), "unit": "ns", "better": "lower"}));
    }
    for role in ["client", "server"] {
        metrics.push(
            json!({"name": format!("{role}_cpu_ns_per_op"), "unit": "ns", "better": "lower"}),
        );
    }
    for (name, unit) in [
        ("timeouts", "requests"),
        ("errors", "requests"),
        ("unresolved", "requests"),
        ("handlers_left", "handlers"),
    ] {
        metrics.push(json!({"name": name, "unit": unit, "better": "lower"}));
    }
    json!({
        "suite": "timers",
        "contract_version": 1,
        "baseline": StrategyKind::None.name(),
        "strategies": strategies,
        "default_scenario": DEFAULT_SCENARIO,
        "scenarios": scenarios,
        "params": params,
        "metrics": metrics,
        "needs": needs(),
    })
}

/// What one run needs, as expressions the harness evaluates before it starts anything
/// (docs/workload-contract.md, `needs`): an upper bound, every request in flight at once.
fn needs() -> Json {
    json!({
        "in_flight": "concurrency",
        "threads_total": "threads + server_threads + executor_threads + computation_threads",
        "memory_bytes": "48e6 + in_flight * (1024 + 2 * value_bytes) \
            + threads_total * 2097152 + connections * 262144",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(p.to_json()["connections"], json!(3));
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
    fn numbers_take_every_json_spelling_and_no_other() {
        let steady = scenario(None).unwrap();
        let value = |name: &str, text: &str| {
            let p = resolve(Some(steady), &overrides(&[&format!("{name}={text}")]));
            p.map(|p| p.to_json()[name].clone())
        };
        for (text, want) in [
            ("8", 8),
            ("8.0", 8),
            ("1e3", 1000),
            ("1E+3", 1000),
            ("0.8e1", 8),
        ] {
            assert_eq!(value("concurrency", text), Ok(json!(want)), "{text}");
        }
        assert_eq!(value("seed", "-0"), Ok(json!(0)));
        assert_eq!(
            value("seed", "9007199254740991"),
            Ok(json!(9_007_199_254_740_991_i64))
        );
        for text in [
            "8.5",
            "+8",
            "08",
            "0x10",
            "1_000",
            "8.",
            ".8e1",
            "8e",
            "inf",
            "",
            "1e400",
            "9007199254740993.0",
        ] {
            let e = value("concurrency", text).unwrap_err().0;
            assert!(e.starts_with("bad value '"), "{text}: {e}");
        }
        for (text, want) in [
            ("1", 1.0),
            ("0.25", 0.25),
            ("2.5e-1", 0.25),
            ("25E-2", 0.25),
        ] {
            assert_eq!(value("slow_fraction", text), Ok(json!(want)), "{text}");
        }
        for text in ["NaN", "inf", ".5", "1.", "+0.5", "0x1p-1", "0_5", "0.5f"] {
            let e = value("slow_fraction", text).unwrap_err().0;
            assert!(e.contains("'slow_fraction'"), "{text}: {e}");
        }
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
    fn describe_lists_every_param_and_scenario() {
        let d = describe();
        let params = d["params"].as_array().unwrap();
        assert_eq!(params.len(), specs().len());
        for p in params {
            let ty = p["type"].as_str().unwrap();
            assert!(["int", "float", "choice"].contains(&ty), "{p}");
        }
        // Every scenario value names a real parameter and passes its validation.
        for s in SCENARIOS {
            for (name, value) in s.params {
                let spec = specs().into_iter().find(|p| p.name == *name).unwrap();
                let text = match value {
                    Value::Int(v) => v.to_string(),
                    Value::Float(v) => v.to_string(),
                    Value::Choice(v) => v.to_string(),
                };
                assert_eq!(parse_value(&spec, &text).unwrap(), *value);
            }
        }
    }
}
