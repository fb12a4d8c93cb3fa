//! The suite's strategies, scenarios and parameters, and their typed, checked form.

use std::borrow::Cow;
use std::time::Duration;

use suite_cli::param_values::{
    boolean, choice, find_named, find_scenario, float, int, logical_cpus, resolve_values, spec,
    BadInput, Kind, ParamSpec, Scenario, Value,
};
use token_bucket::reactor::seastar_idle_poll_us;
use token_bucket::BucketStrategy;

use crate::engine::Submit;

/// How dispatch is metered: not at all (the baseline), or by one of the bucket strategies
/// of the tokenbucket suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// No bucket: every queued request is dispatched at once.
    Unlimited,
    /// The shared bucket at `iops_limit` (capped-release: a request's tokens come back on
    /// completion, seastar's io_queue before #1766).
    Bucket(BucketStrategy),
}

impl Strategy {
    pub const ALL: [Strategy; 4] = [
        Strategy::Unlimited,
        Strategy::Bucket(BucketStrategy::Pure),
        Strategy::Bucket(BucketStrategy::CappedRelease),
        Strategy::Bucket(BucketStrategy::FlowMonitor),
    ];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::Unlimited => "unlimited",
            Strategy::Bucket(bucket) => bucket.name(),
        }
    }

    pub fn help(self) -> &'static str {
        match self {
            Strategy::Unlimited => "no bucket: requests are dispatched as soon as a fiber issues them",
            Strategy::Bucket(BucketStrategy::Pure) => {
                "shared_token_bucket<capped_release::no> at iops_limit, replenished by time (seastar's io_queue today)"
            }
            Strategy::Bucket(BucketStrategy::CappedRelease) => {
                "shared_token_bucket<capped_release::yes> at iops_limit: a request's tokens are released when its completion is reaped (seastar's io_queue before #1766)"
            }
            Strategy::Bucket(BucketStrategy::FlowMonitor) => {
                "pure bucket + #1766's flow monitor: above flow_threshold a request costs its tokens x the dispatched/completed EMA"
            }
        }
    }

    pub fn from_name(name: &str) -> Result<Strategy, BadInput> {
        find_named("strategy", &Strategy::ALL, Strategy::name, name)
    }

    /// The bucket strategy, `None` for unlimited.
    pub fn bucket(self) -> Option<BucketStrategy> {
        match self {
            Strategy::Unlimited => None,
            Strategy::Bucket(bucket) => Some(bucket),
        }
    }
}

/// What the requests do and where (io_tester's `type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    RandRead,
    SeqRead,
    RandWrite,
    SeqWrite,
}

impl Op {
    const NAMES: &'static [&'static str] = &["randread", "seqread", "randwrite", "seqwrite"];

    fn from_name(name: &str) -> Op {
        match name {
            "randread" => Op::RandRead,
            "seqread" => Op::SeqRead,
            "randwrite" => Op::RandWrite,
            _ => Op::SeqWrite,
        }
    }

    pub fn is_write(self) -> bool {
        matches!(self, Op::RandWrite | Op::SeqWrite)
    }

    pub fn is_random(self) -> bool {
        matches!(self, Op::RandRead | Op::RandWrite)
    }
}

/// The submission interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoEngine {
    /// pread/pwrite from `parallelism` threads per shard (fio's psync with that many jobs).
    Psync,
    /// One io_uring per shard, `parallelism` requests in it.
    IoUring,
}

/// Every scenario, the default first.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "randread",
        help: "random reads of reqsize at reqsize-aligned offsets (io_tester type: randread)",
        params: &[("op", Value::Choice("randread")), ("hog", Value::Bool(false))],
    },
    Scenario {
        name: "seqread",
        help: "sequential reads, each shard from its own part of the file, wrapping at its end",
        params: &[("op", Value::Choice("seqread")), ("hog", Value::Bool(false))],
    },
    Scenario {
        name: "randwrite",
        help: "random writes of reqsize at reqsize-aligned offsets",
        params: &[("op", Value::Choice("randwrite")), ("hog", Value::Bool(false))],
    },
    Scenario {
        name: "seqwrite",
        help: "sequential writes, each shard from its own part of the file, wrapping at its end",
        params: &[("op", Value::Choice("seqwrite")), ("hog", Value::Bool(false))],
    },
    Scenario {
        name: "stall",
        help: "randread with a CPU hog task on every shard (sleep Exp(hog_rest_us), spin Exp(hog_busy_us) without yielding): the reactor stalls of seastar #1766",
        params: &[("op", Value::Choice("randread")), ("hog", Value::Bool(true))],
    },
];

/// Bucket tokens per request: seastar meters in fixed point; a request is one token of
/// `REQUEST_TOKENS` units, so that the flow monitor's ratio scales its cost smoothly.
pub const REQUEST_TOKENS: u64 = 1_000;

/// The parameter specs, with machine-dependent defaults resolved.
pub fn specs() -> Vec<ParamSpec> {
    let (int, float) = (Kind::int, Kind::float);
    vec![
        spec("shards", int(1, 256), Value::Int(logical_cpus()),
            "shards (threads, each a cooperative reactor with its dispatcher) sharing the bucket; pinned one per CPU when there are enough (default: logical CPUs)"),
        spec("parallelism", int(1, 1024), Value::Int(16),
            "fibers per shard, each with one request at a time (io_tester parallelism): the shard's queue depth"),
        spec("reqsize", int(1, 16 << 20), Value::Int(4096),
            "bytes per request (io_tester reqsize); a multiple of 512 with direct"),
        spec("op", Kind::Choice(Op::NAMES), Value::Choice("randread"),
            "what the requests do (set by the scenario)"),
        spec("ioengine", Kind::Choice(&["psync", "io_uring"]), Value::Choice("psync"),
            "psync: pread/pwrite from parallelism threads per shard; io_uring: one ring per shard (the io-uring crate)"),
        spec("direct", Kind::Bool, Value::Bool(false),
            "open the file with O_DIRECT (bypassing the page cache) where the filesystem allows it"),
        spec("rps", int(0, 10_000_000), Value::Int(0),
            "0: closed loop; else open loop, each fiber issuing rps requests/s (io_tester's rps: a shard offers parallelism x rps), latency counted from the intended issue time"),
        spec("think_time_us", int(0, 10_000_000), Value::Int(0),
            "closed loop: a fiber pauses this long after each completion (io_tester think_time)"),
        spec("iops_limit", int(1, 100_000_000), Value::Int(5_000),
            "the bucket's rate in requests/s, all shards together (not used by unlimited)"),
        spec("bucket_ms", float(0.01, 10_000.0), Value::Float(1.0),
            "the bucket's limit as time at iops_limit (seastar's rate_limit_duration, 1 ms), at least one request"),
        spec("flow_threshold", float(0.0, 1000.0), Value::Float(1.1),
            "flow-monitor: costs grow while the ratio exceeds this (seastar --io-flow-rate-threshold)"),
        spec("flow_smoothing", float(0.0, 1.0), Value::Float(0.95),
            "flow-monitor: EMA factor of the ratio (flow_ratio_ema_factor)"),
        spec("flow_period_us", int(100, 60_000_000), Value::Int(75_000),
            "flow-monitor: ratio update period (io_latency_goal 0.75 ms x averaging_decay_ticks 100)"),
        spec("hog", Kind::Bool, Value::Bool(false),
            "a CPU hog task on every shard (the tokenbucket suite's; set by the scenario)"),
        spec("hog_busy_us", int(1, 1_000_000), Value::Int(300),
            "hog: mean of the exponential busy spin (no yield)"),
        spec("hog_rest_us", int(1, 1_000_000), Value::Int(100),
            "hog: mean of the exponential sleep between spins"),
        spec("file_size_mb", int(1, 256), Value::Int(64),
            "size of the scratch file in MiB (the harness creates it; offsets stay below it)"),
        spec("dir", Kind::Text, Value::Text(Cow::Borrowed("")),
            "folder of the scratch file; \"\" = <results>/scratch/ (read by the harness)"),
        spec("idle_poll_us", int(0, 1_000_000), Value::Int(seastar_idle_poll_us() as i64),
            "a shard polls for completions (and its timers) this long without work before it waits in the kernel (seastar --idle-poll-time-us; default reactor::calculate_poll_time: 2000 if /sys/hypervisor/type exists, else 200)"),
        spec("submit", Kind::Choice(&["poll", "each"]), Value::Choice("poll"),
            "io_uring: when dispatched requests reach the kernel: poll = all of a poll's in one io_uring_enter at its end (seastar's kernel_submit_work), each = every request as it is dispatched (fio's default iodepth_batch_submit=1); psync enters every request anyway"),
        spec("pin", Kind::Choice(&["auto", "off"]), Value::Choice("auto"),
            "auto: pin shard i to the i-th allowed CPU when there are at least as many CPUs as shards (as seastar pins reactors); off: let the kernel place them"),
        spec("seed", int(0, (1 << 53) - 1), Value::Int(1),
            "seed of the random offsets and hog periods"),
    ]
}

/// Fully resolved, typed and cross-checked parameters of one run.
#[derive(Clone, Debug)]
pub struct Params {
    pub shards: usize,
    pub parallelism: usize,
    pub reqsize: usize,
    pub op: Op,
    pub engine: IoEngine,
    pub direct: bool,
    /// Requests/s of each fiber (0 = closed loop).
    pub rps: u64,
    pub think_time: Duration,
    pub iops_limit: u64,
    pub bucket: Duration,
    pub flow_threshold: f64,
    pub flow_smoothing: f64,
    pub flow_period: Duration,
    pub hog: bool,
    pub hog_busy: Duration,
    pub hog_rest: Duration,
    pub file_size: u64,
    pub idle_poll: Duration,
    pub submit: Submit,
    pub pin: bool,
    pub seed: u64,
    values: Vec<(&'static str, Value)>,
}

/// Looks a scenario up by name (`None` = the default scenario).
pub fn scenario(name: Option<&str>) -> Result<&'static Scenario, BadInput> {
    find_scenario(SCENARIOS, name)
}

/// Resolves and checks the parameters of a run.
pub fn resolve(scenario: Option<&Scenario>, overrides: &[String]) -> Result<Params, BadInput> {
    Params::from_values(resolve_values(&specs(), scenario, overrides)?)
}

impl Params {
    fn from_values(values: Vec<(&'static str, Value)>) -> Result<Params, BadInput> {
        let int = |name: &str| u64::try_from(int(&values, name)).expect("int params have min >= 0");
        let us = |name: &str| Duration::from_micros(int(name));
        let reqsize = int("reqsize") as usize;
        let direct = boolean(&values, "direct");
        if direct && !reqsize.is_multiple_of(512) {
            return Err(BadInput(format!(
                "bad value '{reqsize}' for parameter 'reqsize' (valid: a multiple of 512 with direct=true)"
            )));
        }
        let file_size = int("file_size_mb") << 20;
        if reqsize as u64 > file_size {
            return Err(BadInput(format!(
                "bad value '{reqsize}' for parameter 'reqsize' (valid: at most file_size_mb = {} bytes)",
                file_size
            )));
        }
        let rps = int("rps");
        let think_time = us("think_time_us");
        if rps > 0 && !think_time.is_zero() {
            return Err(BadInput(format!(
                "bad value '{}' for parameter 'think_time_us' (valid: 0 with rps > 0: think time is the closed loop's, as in io_tester)",
                think_time.as_micros()
            )));
        }
        Ok(Params {
            shards: int("shards") as usize,
            parallelism: int("parallelism") as usize,
            reqsize,
            op: Op::from_name(choice(&values, "op")),
            engine: if choice(&values, "ioengine") == "io_uring" {
                IoEngine::IoUring
            } else {
                IoEngine::Psync
            },
            direct,
            rps,
            think_time,
            iops_limit: int("iops_limit"),
            bucket: Duration::from_secs_f64(float(&values, "bucket_ms") / 1e3),
            flow_threshold: float(&values, "flow_threshold"),
            flow_smoothing: float(&values, "flow_smoothing"),
            flow_period: us("flow_period_us"),
            hog: boolean(&values, "hog"),
            hog_busy: us("hog_busy_us"),
            hog_rest: us("hog_rest_us"),
            file_size,
            idle_poll: us("idle_poll_us"),
            submit: if choice(&values, "submit") == "each" {
                Submit::Each
            } else {
                Submit::Poll
            },
            pin: choice(&values, "pin") == "auto",
            seed: int("seed"),
            values: values.clone(),
        })
    }

    /// The bucket's rate in units per second.
    pub fn bucket_rate(&self) -> u64 {
        self.iops_limit * REQUEST_TOKENS
    }

    /// The bucket's limit in units: `bucket_ms` worth of the rate, at least one request.
    pub fn bucket_limit(&self) -> u64 {
        let worth = (self.bucket_rate() as f64 * self.bucket.as_secs_f64()).round() as u64;
        worth.max(REQUEST_TOKENS)
    }

    /// The most a shard reserves ahead (seastar's per_tick_grab_threshold): limit / shards.
    pub fn per_tick_threshold(&self) -> u64 {
        (self.bucket_limit() / self.shards as u64).max(1)
    }

    /// The resolved values, in spec order.
    pub fn values(&self) -> &[(&'static str, Value)] {
        &self.values
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use suite_cli::param_values::param_words;

    #[test]
    fn scenarios_set_op_and_hog() {
        let p = resolve(Some(scenario(None).unwrap()), &[]).unwrap();
        assert_eq!((p.op, p.hog), (Op::RandRead, false));
        let p = resolve(Some(scenario(Some("stall")).unwrap()), &[]).unwrap();
        assert_eq!((p.op, p.hog), (Op::RandRead, true));
        let p = resolve(Some(scenario(Some("seqwrite")).unwrap()), &[]).unwrap();
        assert!(p.op.is_write() && !p.op.is_random());
        for s in SCENARIOS {
            resolve(Some(s), &[]).unwrap();
        }
    }

    #[test]
    fn bad_values_name_the_rule() {
        let s = Some(scenario(None).unwrap());
        let err = |o: &[&str]| resolve(s, &param_words(o)).unwrap_err().0;
        assert_eq!(
            err(&["iops_limit=-1"]),
            "bad value '-1' for parameter 'iops_limit' (valid: an integer in 1..=100000000)"
        );
        assert!(err(&["reqsize=0"]).starts_with("bad value '0' for parameter 'reqsize'"));
        assert_eq!(
            err(&["direct=true", "reqsize=1000"]),
            "bad value '1000' for parameter 'reqsize' (valid: a multiple of 512 with direct=true)"
        );
        assert!(resolve(s, &param_words(&["direct=true", "reqsize=1536"])).is_ok());
        assert!(err(&["file_size_mb=1", "reqsize=2097152"]).contains("at most file_size_mb"));
        assert!(err(&["rps=10", "think_time_us=5"]).contains("think_time_us"));
        assert!(err(&["file_size_mb=257"]).contains("1..=256"));
        assert!(Strategy::from_name("capped")
            .unwrap_err()
            .0
            .contains("(valid: unlimited, pure, capped-release, flow-monitor)"));
    }

    #[test]
    fn bucket_is_a_millisecond_of_the_rate_at_least_a_request() {
        let s = Some(scenario(None).unwrap());
        let p = resolve(s, &param_words(&["iops_limit=2000", "shards=2"])).unwrap();
        assert_eq!(p.bucket_rate(), 2_000_000);
        assert_eq!(p.bucket_limit(), 2_000);
        assert_eq!(p.per_tick_threshold(), 1_000);
        let p = resolve(s, &param_words(&["iops_limit=10"])).unwrap();
        assert_eq!(p.bucket_limit(), REQUEST_TOKENS);
    }
}
