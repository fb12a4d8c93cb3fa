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
use std::time::Duration;

use suite_cli::cli::{self, Command, RunArgs};
use suite_cli::events;
use suite_cli::param_values::{BadInput, Scenario};

use crate::bench_run::RunEvent;
use crate::params::{Params, Strategy};

struct Plan {
    strategy: Strategy,
    scenario: &'static Scenario,
    params: Params,
    warmup: Duration,
    duration: Duration,
}

fn main() -> ExitCode {
    let command = match cli::parse(
        "tokenbucket-bench",
        env!("CARGO_PKG_VERSION"),
        "seastar's shared token bucket (pure, capped-release, flow monitor) under its perf test's load",
    ) {
        Ok(command) => command,
        Err(code) => return code,
    };
    match command {
        Command::Describe => {
            println!("{}", describe::describe());
            ExitCode::SUCCESS
        }
        Command::Run(args) => run(args),
        Command::Check(args) => match plan(&args) {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => cli::bad_input(&e),
        },
    }
}

fn plan(args: &RunArgs) -> Result<Plan, BadInput> {
    let strategy = Strategy::from_name(&args.strategy)?;
    let scenario = params::scenario(args.scenario.as_deref())?;
    let params = params::resolve(Some(scenario), &args.params)?;
    Ok(Plan {
        strategy,
        scenario,
        params,
        duration: args.duration()?,
        warmup: args.warmup()?,
    })
}

fn run(args: RunArgs) -> ExitCode {
    let plan = match plan(&args) {
        Ok(plan) => plan,
        Err(e) => return cli::bad_input(&e),
    };
    let gate = args.gate;
    let mut on_event = |event: RunEvent| -> Result<(), String> {
        match event {
            RunEvent::Ready => events::ready(&[std::process::id()], gate)?,
            RunEvent::MeasureStart => events::measure_start(),
            RunEvent::MeasureEnd => events::measure_end(),
        }
        Ok(())
    };
    let report = match bench_run::run(
        plan.strategy,
        &plan.params,
        plan.warmup,
        plan.duration,
        &mut on_event,
    ) {
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
