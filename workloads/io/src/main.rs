//! `io-bench`: seastar's io_tester on the harness's scratch file, metered by the shared token
//! bucket, following `docs/workload-contract.md` (`describe`, `run`, `check`).
//!
//! Exit codes: 0 = done, 2 = bad input (one line on stderr naming it and the valid choices;
//! also io_uring refused by the kernel, or no `HARNESS_SCRATCH_FILE` for `run`), 1 = the run
//! failed (O_DIRECT refused, ENOSPC, a short or failed request, a correctness check).

use std::process::ExitCode;
use std::time::Duration;

use io_bench::bench_run::{self, RunEvent};
use io_bench::params::{self, IoEngine, Params, Strategy};
use io_bench::{describe, scratch_file, uring_engine};
use suite_cli::cli::{self, Command, RunArgs};
use suite_cli::events;
use suite_cli::param_values::{BadInput, Scenario};

struct Plan {
    strategy: Strategy,
    scenario: &'static Scenario,
    params: Params,
    warmup: Duration,
    duration: Duration,
}

fn main() -> ExitCode {
    let command = match cli::parse(
        "io-bench",
        env!("CARGO_PKG_VERSION"),
        "seastar's io_tester on a scratch file, metered by the shared token bucket (unlimited, pure, capped-release, flow monitor)",
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

/// `run`'s checks before set-up, shared with `check`.
fn plan(args: &RunArgs) -> Result<Plan, BadInput> {
    let strategy = Strategy::from_name(&args.strategy)?;
    let scenario = params::scenario(args.scenario.as_deref())?;
    let params = params::resolve(Some(scenario), &args.params)?;
    let plan = Plan {
        strategy,
        scenario,
        params,
        duration: args.duration()?,
        warmup: args.warmup()?,
    };
    if plan.params.engine == IoEngine::IoUring {
        if let Some(reason) = uring_engine::unavailable() {
            return Err(BadInput(reason));
        }
    }
    Ok(plan)
}

fn run(args: RunArgs) -> ExitCode {
    let plan = match plan(&args) {
        Ok(plan) => plan,
        Err(e) => return cli::bad_input(&e),
    };
    let path = match scratch_file::path_from_env() {
        Ok(path) => path,
        Err(e) => return cli::bad_input(&BadInput(e)),
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
        &path,
        plan.warmup,
        plan.duration,
        &mut on_event,
    ) {
        Ok(report) => report,
        Err(e) => return cli::failed(&e),
    };
    if let Some(e) = report.failure() {
        return cli::failed(&e);
    }
    events::result(
        plan.strategy.name(),
        plan.scenario.name,
        plan.params.values(),
        report.metrics_json(),
    );
    ExitCode::SUCCESS
}
