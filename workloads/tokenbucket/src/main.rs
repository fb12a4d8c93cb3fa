//! `tokenbucket-bench`: seastar's shared token bucket under the load of its perf test,
//! following `docs/workload-contract.md` (`describe`, `run`).
//!
//! Exit codes: 0 = done, 2 = bad input (one line on stderr naming it and the valid choices),
//! 1 = the run failed (the reason on stderr).

mod bench_run;
mod describe;
mod metrics;
mod params;
mod shard_cpu;
mod shard_tasks;

use std::process::ExitCode;

use serde_json::Value as Json;
use suite_cli::cli::{self, Plan, Resolve, Suite};
use suite_cli::events::{self, OnEvent};
use suite_cli::param_values::{BadInput, Scenario};

use crate::params::{Params, Strategy};

struct TokenBucket;

impl Suite for TokenBucket {
    type Strategy = Strategy;
    type Params = Params;
    const DESCRIBE: fn() -> Json = describe::describe;
    const STRATEGY: fn(&str) -> Result<Strategy, BadInput> = params::strategy;
    const SCENARIOS: &'static [Scenario] = params::SCENARIOS;
    const PARAMS: Resolve<Params> = params::resolve;

    fn run(plan: Plan<Strategy, Params>, on_event: &mut OnEvent) -> ExitCode {
        let report = match bench_run::run(&plan, on_event) {
            Ok(report) => report,
            Err(e) => return cli::failed(&e),
        };
        events::result(
            plan.strategy.name(),
            plan.scenario.name,
            plan.params.values(),
            report.metrics_json(),
        );
        // A correctness check: head never passes tail + limit (pure) or the released ceiling.
        let ahead = report.head.wrapping_sub(report.tail) as i64;
        if ahead > plan.params.limit as i64 {
            eprintln!(
                "error: correctness check failed: head is {ahead} tokens ahead of tail, limit {}",
                plan.params.limit
            );
            return ExitCode::FAILURE;
        }
        ExitCode::SUCCESS
    }
}

fn main() -> ExitCode {
    cli::main::<TokenBucket>(
        "tokenbucket-bench",
        env!("CARGO_PKG_VERSION"),
        "seastar's shared token bucket (pure, capped-release, flow monitor) under its perf test's load",
    )
}
