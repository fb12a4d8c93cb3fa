//! `tokenbucket-bench`: seastar's shared token bucket under the load of its perf test,
//! following `docs/workload-contract.md` (`describe`, `run`).
//!
//! Exit codes: 0 = done, 2 = bad input (one line on stderr naming it and the valid choices),
//! 1 = the run failed (the reason on stderr).

mod bench_run;
mod cpu_pinning;
mod describe;
mod measure_window;
mod metrics;
mod param_values;
mod params;
mod shard_tasks;

use std::io::BufRead;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use serde_json::{json, Value as Json};

use crate::bench_run::RunEvent;
use crate::param_values::{values_json, BadInput, Scenario};
use crate::params::{Params, Strategy};

/// Longest measured window or warm-up accepted, in seconds.
const MAX_SECONDS: f64 = 86_400.0;

#[derive(Parser)]
#[command(
    name = "tokenbucket-bench",
    version,
    about = "seastar's shared token bucket (pure, capped-release, flow monitor) under its perf test's load"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the workload description (strategies, scenarios, parameters, metrics) as JSON.
    Describe,
    /// Run one strategy, print JSON events and the result.
    Run(RunArgs),
    /// Check `run`'s arguments as `run` does (exit 0, or 2 naming the bad input); runs nothing.
    Check(RunArgs),
}

#[derive(Args)]
struct RunArgs {
    /// Strategy (see `describe`).
    #[arg(long)]
    strategy: String,
    /// Scenario (default: sleeping).
    #[arg(long)]
    scenario: Option<String>,
    /// Parameter override, repeatable.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    params: Vec<String>,
    /// Length of the measured window in seconds.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    duration_s: String,
    /// Length of the warm-up in seconds.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    warmup_s: String,
    /// After printing `ready`, wait for one line on stdin before starting.
    #[arg(long)]
    gate: bool,
}

struct Plan {
    strategy: Strategy,
    scenario: &'static Scenario,
    params: Params,
    warmup: Duration,
    duration: Duration,
}

fn main() -> ExitCode {
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => return clap_error(e),
    };
    match cli.command {
        Command::Describe => {
            println!("{}", describe::describe());
            ExitCode::SUCCESS
        }
        Command::Run(args) => run(args),
        Command::Check(args) => check(&args),
    }
}

/// Help and version go out as clap prints them; usage errors become one line, exit 2.
fn clap_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            eprintln!("error: missing command (valid: describe, run, check)");
            return ExitCode::from(2);
        }
        _ => {}
    }
    let rendered = e.render().to_string();
    let first_paragraph = rendered.split("\n\n").next().unwrap_or_default();
    eprintln!(
        "{}",
        first_paragraph
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    );
    ExitCode::from(2)
}

fn seconds(flag: &str, text: &str, min_exclusive: bool) -> Result<Duration, BadInput> {
    let bad = || {
        let range = if min_exclusive { "(0" } else { "[0" };
        BadInput(format!(
            "bad value '{text}' for --{flag} (valid: seconds in {range}, {MAX_SECONDS}])"
        ))
    };
    let v: f64 = text.trim().parse().map_err(|_| bad())?;
    let low_ok = if min_exclusive { v > 0.0 } else { v >= 0.0 };
    if !v.is_finite() || !low_ok || v > MAX_SECONDS {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(v))
}

fn plan(args: &RunArgs) -> Result<Plan, BadInput> {
    let strategy = Strategy::from_name(&args.strategy)?;
    let scenario = params::scenario(args.scenario.as_deref())?;
    let params = params::resolve(Some(scenario), &args.params)?;
    Ok(Plan {
        strategy,
        scenario,
        params,
        duration: seconds("duration-s", &args.duration_s, true)?,
        warmup: seconds("warmup-s", &args.warmup_s, false)?,
    })
}

fn check(args: &RunArgs) -> ExitCode {
    match plan(args) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn emit(line: &Json) {
    println!("{line}");
}

fn run(args: RunArgs) -> ExitCode {
    let plan = match plan(&args) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let gate = args.gate;
    let mut on_event = |event: RunEvent| -> Result<(), String> {
        match event {
            RunEvent::Ready => {
                emit(&json!({"event": "ready", "pids": [std::process::id()]}));
                if gate {
                    let mut line = String::new();
                    std::io::stdin()
                        .lock()
                        .read_line(&mut line)
                        .map_err(|e| format!("cannot read the gate line from stdin: {e}"))?;
                }
            }
            RunEvent::MeasureStart => emit(&json!({"event": "measure_start"})),
            RunEvent::MeasureEnd => emit(&json!({"event": "measure_end"})),
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
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut result = json!({
        "event": "result",
        "strategy": plan.strategy.name(),
        "scenario": plan.scenario.name,
        "params": values_json(plan.params.values()),
    });
    result
        .as_object_mut()
        .expect("object literal")
        .extend(report.metrics_json());
    emit(&result);
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
