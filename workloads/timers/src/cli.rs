//! The command line of `timers-bench` (and of `timers-bench-legacy`, the same program built
//! against tokio 1.37): `describe`, `check`, `run` and `serve`, following
//! `docs/workload-contract.md`.
//!
//! Exit codes: 0 = done, 2 = bad input (one line on stderr naming it and the valid choices),
//! 1 = the run failed (the reason on stderr).

use std::io::BufRead;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use serde_json::{json, Value as Json};

use crate::client::{Bench, RunEvent};
use crate::params::{self, BadInput, Params, Scenario};
use crate::process::{self, ServerProcess};
use crate::server::{Server, ServerConfig};
use crate::strategy::StrategyKind;
use crate::timer_ops;

/// Name of the binary built against tokio 1.37.
pub const LEGACY_BIN: &str = "timers-bench-legacy";
/// The only strategy the legacy binary runs.
const LEGACY_STRATEGY: StrategyKind = StrategyKind::TokioTimeoutLegacy;
/// Parameters the server takes from the run.
const SERVER_PARAMS: &[&str] = &[
    "server_threads",
    "slow_fraction",
    "slow_delay_ms",
    "service_time_us",
    "service_dist",
    "seed",
];
/// Longest measured window or warm-up accepted, in seconds.
const MAX_SECONDS: f64 = 86_400.0;

/// Which build this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// `timers-bench`: the current tokio; hands `tokio-timeout-legacy` to the legacy binary.
    Current,
    /// `timers-bench-legacy`: tokio 1.37; runs only `tokio-timeout-legacy`.
    Legacy,
}

#[derive(Parser)]
#[command(
    name = "timers-bench",
    version,
    about = "Timer strategies for request timeouts under a cql-stress-like load"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the workload description (strategies, scenarios, parameters, metrics) as JSON.
    Describe,
    /// Check the arguments of `run` as `run` does, without running: exit 0, or 2 with one line.
    Check(RunArgs),
    /// Start a server, run one strategy against it, print JSON events and the result.
    Run(RunArgs),
    /// Serve requests on 127.0.0.1 (started by `run`); prints the bound port on stdout.
    Serve(ServeArgs),
}

#[derive(Args)]
struct RunArgs {
    /// Timeout strategy (see `describe`).
    #[arg(long)]
    strategy: String,
    /// Scenario (default: steady).
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

#[derive(Args)]
struct ServeArgs {
    /// Port to bind on 127.0.0.1 (0 = any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Parameter (server_threads, slow_fraction, slow_delay_ms, service_time_us,
    /// service_dist, seed), repeatable.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    params: Vec<String>,
}

/// A validated `run` request.
struct Plan {
    kind: StrategyKind,
    scenario: &'static Scenario,
    params: Params,
    warmup: Duration,
    duration: Duration,
}

/// Runs the command line of `flavor`.
pub fn main(flavor: Flavor) -> ExitCode {
    let name = match flavor {
        Flavor::Current => "timers-bench",
        Flavor::Legacy => LEGACY_BIN,
    };
    let parsed = Cli::command()
        .name(name)
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => return clap_error(e),
    };
    match cli.command {
        Command::Describe => {
            println!("{}", params::describe());
            ExitCode::SUCCESS
        }
        Command::Serve(args) => serve(args),
        Command::Check(args) => match plan(flavor, &args) {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => bad_input(e),
        },
        Command::Run(args) => run(flavor, args),
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
            eprintln!("error: missing command (valid: describe, check, run, serve)");
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

fn bad_input(e: BadInput) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(2)
}

fn failed(reason: &str) -> ExitCode {
    eprintln!("error: {reason}");
    ExitCode::FAILURE
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

fn plan(flavor: Flavor, args: &RunArgs) -> Result<Plan, BadInput> {
    let kind = StrategyKind::from_name(&args.strategy).ok_or_else(|| {
        BadInput(format!(
            "unknown strategy '{}' (valid: {})",
            args.strategy,
            StrategyKind::names()
        ))
    })?;
    if flavor == Flavor::Legacy && kind != LEGACY_STRATEGY {
        return Err(BadInput(format!(
            "{LEGACY_BIN} runs only strategy '{}', not '{}' (valid: {}; run the others with timers-bench)",
            LEGACY_STRATEGY.name(),
            kind.name(),
            LEGACY_STRATEGY.name()
        )));
    }
    let scenario = params::scenario(args.scenario.as_deref())?;
    let params = params::resolve(Some(scenario), &args.params)?;
    if scenario.name == timer_ops::SCENARIO {
        if let Some(reason) = timer_ops::unsupported(kind) {
            return Err(BadInput(reason));
        }
    }
    Ok(Plan {
        kind,
        scenario,
        params,
        duration: seconds("duration-s", &args.duration_s, true)?,
        warmup: seconds("warmup-s", &args.warmup_s, false)?,
    })
}

fn run(flavor: Flavor, args: RunArgs) -> ExitCode {
    let plan = match plan(flavor, &args) {
        Ok(plan) => plan,
        Err(e) => return bad_input(e),
    };
    if flavor == Flavor::Current && plan.kind == LEGACY_STRATEGY {
        return exec_legacy();
    }
    match execute(&plan, args.gate) {
        Ok(violations) if violations.is_empty() => ExitCode::SUCCESS,
        Ok(violations) => {
            for v in &violations {
                eprintln!("error: correctness check failed: {v}");
            }
            ExitCode::FAILURE
        }
        Err(reason) => failed(&reason),
    }
}

/// Hands the run over to the legacy binary next to this one, with the same arguments.
fn exec_legacy() -> ExitCode {
    let path = match process::sibling(LEGACY_BIN) {
        Ok(path) => path,
        Err(e) => return failed(&format!("cannot locate this executable: {e}")),
    };
    let err = process::exec(&path, std::env::args_os().skip(1));
    failed(&format!(
        "strategy '{}' runs in {}, which cannot be started: {err} (build it with the same \
         profile: cargo build --release --manifest-path workloads/timers/legacy/Cargo.toml)",
        LEGACY_STRATEGY.name(),
        path.display()
    ))
}

fn emit(line: &Json) {
    println!("{line}");
}

fn wait_for_gate(gate: bool) -> Result<(), String> {
    if gate {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map_err(|e| format!("cannot read the gate line from stdin: {e}"))?;
    }
    Ok(())
}

fn phase_event(event: RunEvent) {
    emit(&match event {
        RunEvent::MeasureStart => json!({"event": "measure_start"}),
        RunEvent::MeasureEnd => json!({"event": "measure_end"}),
    })
}

/// Runs the `timer-ops` scenario: one process, no server.
fn execute_timer_ops(plan: &Plan, gate: bool) -> Result<Vec<String>, String> {
    let params = &plan.params;
    let runtime = plan.kind.build_runtime(params.threads)?;
    emit(&json!({"event": "ready", "pids": [std::process::id()]}));
    wait_for_gate(gate)?;
    let report = timer_ops::run(
        &runtime,
        plan.kind,
        params,
        plan.warmup,
        plan.duration,
        phase_event,
    )?;
    let mut result = json!({
        "event": "result",
        "strategy": plan.kind.name(),
        "scenario": plan.scenario.name,
        "params": params.to_json(),
    });
    result
        .as_object_mut()
        .expect("object literal")
        .extend(report.metrics_json());
    emit(&result);
    Ok(report.violations())
}

/// Runs a validated plan; returns the correctness violations (empty = sound).
fn execute(plan: &Plan, gate: bool) -> Result<Vec<String>, String> {
    if plan.scenario.name == timer_ops::SCENARIO {
        return execute_timer_ops(plan, gate);
    }
    let params = &plan.params;
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate this executable: {e}"))?;
    // Spawned from the main thread, which lives as long as the process (see spawn).
    let server = ServerProcess::spawn(&exe, &server_args(params))?;
    let runtime = plan.kind.build_runtime(params.threads)?;
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], server.port()));
    let mut bench = runtime.block_on(Bench::connect(plan.kind, params, addr, None))?;
    bench.measure_server_cpu(server.pid());
    emit(&json!({"event": "ready", "pids": [std::process::id(), server.pid()]}));
    wait_for_gate(gate)?;
    let report = runtime.block_on(bench.run(plan.warmup, plan.duration, phase_event))?;
    let mut result = json!({
        "event": "result",
        "strategy": plan.kind.name(),
        "scenario": plan.scenario.name,
        "params": params.to_json(),
    });
    result
        .as_object_mut()
        .expect("object literal")
        .extend(report.metrics_json());
    emit(&result);
    // Tasks first, then the engine threads (with the bench), then the server.
    drop(runtime);
    drop(bench);
    drop(server);
    if plan.kind.has_timeout() && params.slow_fraction > 0.0 && params.timeout < params.slow_delay {
        let s = &report.stats;
        if s.timeouts != report.server_slow {
            eprintln!(
                "note: {} requests timed out but the server made {} slow: requests other than \
                 the slow ones took longer than timeout_ms (overload), or slow ones beat it",
                s.timeouts, report.server_slow
            );
        }
    }
    Ok(report.violations())
}

fn server_args(params: &Params) -> Vec<String> {
    params
        .overrides_for(SERVER_PARAMS)
        .into_iter()
        .flat_map(|p| ["--param".to_string(), p])
        .collect()
}

fn serve(args: ServeArgs) -> ExitCode {
    let params = match params::resolve(None, &args.params) {
        Ok(params) => params,
        Err(e) => return bad_input(e),
    };
    let server = match Server::start(ServerConfig::from_params(&params), args.port) {
        Ok(server) => server,
        Err(e) => return failed(&format!("cannot serve on 127.0.0.1:{}: {e}", args.port)),
    };
    println!("{}", server.addr().port());
    match server.wait() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => failed(&format!("server failed: {e}")),
    }
}
