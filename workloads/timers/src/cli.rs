//! The command line of `timers-bench` (and of `timers-bench-legacy` and
//! `timers-bench-sharded`, the same program built against tokio 1.37 and 1.44): `describe`,
//! `check`, `run` and `serve`, following `docs/workload-contract.md`.
//!
//! Exit codes: 0 = done, 2 = bad input (one line on stderr naming it and the valid choices),
//! 1 = the run failed (the reason on stderr).

use std::marker::PhantomData;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::Value as Json;
use suite_cli::cli::{self, bad_input, failed, Resolve, RunArgs, Suite, Verb, Verbs};
use suite_cli::events::{self, OnEvent};
use suite_cli::param_values::{BadInput, Scenario};

use crate::client::{Bench, RunEvent};
use crate::describe::describe;
use crate::params::{self, Params};
use crate::process::{self, ServerProcess};
use crate::server::{Protocol, Server, ServerConfig};
use crate::strategy::StrategyKind;
use crate::timer_ops;

/// Parameters the server takes from the run.
const SERVER_PARAMS: &[&str] = &[
    "server_threads",
    "slow_fraction",
    "slow_delay_ms",
    "service_time_us",
    "service_dist",
    "seed",
];

/// Which build this is: `timers-bench` on the current tokio, or one built in its own crate
/// against an older tokio, which runs only its one strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// `timers-bench`: the current tokio; hands the older builds' strategies to them.
    Current,
    /// `timers-bench-legacy` (`legacy/`): tokio 1.37, one timer wheel under one lock.
    Legacy,
    /// `timers-bench-sharded` (`sharded/`): tokio 1.44, the sharded timer wheel.
    Sharded,
}

impl Flavor {
    const OLDER: [Flavor; 2] = [Flavor::Legacy, Flavor::Sharded];

    /// The executable's name.
    pub fn bin(self) -> &'static str {
        match self {
            Flavor::Current => "timers-bench",
            Flavor::Legacy => "timers-bench-legacy",
            Flavor::Sharded => "timers-bench-sharded",
        }
    }

    /// The one strategy an older build runs (`None`: the current build runs the others).
    fn only(self) -> Option<StrategyKind> {
        match self {
            Flavor::Current => None,
            Flavor::Legacy => Some(StrategyKind::TokioTimeoutLegacy),
            Flavor::Sharded => Some(StrategyKind::TokioTimeoutSharded),
        }
    }

    /// The build that runs `kind`.
    fn running(kind: StrategyKind) -> Flavor {
        Flavor::OLDER
            .into_iter()
            .find(|f| f.only() == Some(kind))
            .unwrap_or(Flavor::Current)
    }

    /// The crate directory of an older build, under `workloads/timers`.
    fn crate_dir(self) -> &'static str {
        match self {
            Flavor::Current => ".",
            Flavor::Legacy => "legacy",
            Flavor::Sharded => "sharded",
        }
    }
}

/// A build as a type, for [`Suite`]'s functions: its [`Flavor`].
trait Build {
    const FLAVOR: Flavor;
}

struct CurrentBuild;
struct LegacyBuild;
struct ShardedBuild;

impl Build for CurrentBuild {
    const FLAVOR: Flavor = Flavor::Current;
}

impl Build for LegacyBuild {
    const FLAVOR: Flavor = Flavor::Legacy;
}

impl Build for ShardedBuild {
    const FLAVOR: Flavor = Flavor::Sharded;
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
struct ServeArgs {
    /// Port to bind on 127.0.0.1 (0 = any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Parameter (server_threads, slow_fraction, slow_delay_ms, service_time_us,
    /// service_dist, seed), repeatable.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    params: Vec<String>,
    /// The protocol to speak: timers (ours), or cql (native protocol v4, for the scylla
    /// driver strategies).
    #[arg(long, value_enum, default_value_t = Protocol::Timers)]
    protocol: Protocol,
}

impl Verbs for Command {
    type Own = ServeArgs;
    fn verb(self) -> Verb<ServeArgs> {
        match self {
            Command::Describe => Verb::Describe,
            Command::Check(args) => Verb::Check(args),
            Command::Run(args) => Verb::Run(args),
            Command::Serve(args) => Verb::Own(args),
        }
    }
}

/// A validated `run` request.
type Plan = cli::Plan<StrategyKind, Params>;

/// The suite as built for `B`.
struct Timers<B>(PhantomData<B>);

impl<B: Build> Suite for Timers<B> {
    type Strategy = StrategyKind;
    type Params = Params;
    const DESCRIBE: fn() -> Json = describe;
    const STRATEGY: fn(&str) -> Result<StrategyKind, BadInput> = strategy::<B>;
    const SCENARIOS: &'static [Scenario] = params::SCENARIOS;
    const PARAMS: Resolve<Params> = params::resolve;

    /// The scylla driver strategies' refusals, and connections beyond the descriptor limit
    /// (a served scenario's client and server each hold one per connection; the driver's
    /// control connection is one more).
    fn check_params(
        kind: &StrategyKind,
        scenario: &Scenario,
        params: &Params,
    ) -> Result<(), BadInput> {
        #[cfg(feature = "cql")]
        if let Some(reason) = crate::strategy::scylla_driver::unsupported(*kind, scenario, params) {
            return Err(BadInput(reason));
        }
        if scenario.name != timer_ops::SCENARIO {
            let extra = u64::from(kind.is_driver());
            process::check_descriptors(
                params.connections as u64,
                extra,
                process::descriptor_limit(),
            )
            .map_err(BadInput)?;
        }
        Ok(())
    }

    /// The `timer-ops` scenario: one process, no server.
    fn run(plan: Plan, on_event: &mut OnEvent) -> ExitCode {
        exit(execute_timer_ops(&plan, on_event))
    }

    /// Hands the run to the build that runs its strategy; the served scenarios' `ready`
    /// names the server too.
    fn run_verb(plan: Plan, gate: bool) -> ExitCode {
        let runs_it = Flavor::running(plan.strategy);
        if B::FLAVOR != runs_it {
            return exec_older(runs_it, plan.strategy);
        }
        if plan.scenario.name == timer_ops::SCENARIO {
            return Self::run(plan, &mut events::printer(gate));
        }
        exit(execute(&plan, gate))
    }
}

/// Runs the command line of `flavor`.
pub fn main(flavor: Flavor) -> ExitCode {
    match flavor {
        Flavor::Current => main_of::<CurrentBuild>(),
        Flavor::Legacy => main_of::<LegacyBuild>(),
        Flavor::Sharded => main_of::<ShardedBuild>(),
    }
}

fn main_of<B: Build>() -> ExitCode {
    cli::main_verbs::<Timers<B>, Command>(
        B::FLAVOR.bin(),
        env!("CARGO_PKG_VERSION"),
        "Timer strategies for request timeouts under a cql-stress-like load",
        serve,
    )
}

/// The strategy named `name`, if this build runs it.
fn strategy<B: Build>(name: &str) -> Result<StrategyKind, BadInput> {
    let kind = StrategyKind::from_name(name).ok_or_else(|| {
        BadInput(format!(
            "unknown strategy '{name}' (valid: {})",
            StrategyKind::names()
        ))
    })?;
    let flavor = B::FLAVOR;
    if let Some(only) = flavor.only().filter(|&only| only != kind) {
        return Err(BadInput(format!(
            "{} runs only strategy '{}', not '{}' (valid: {}; run the others with timers-bench)",
            flavor.bin(),
            only.name(),
            kind.name(),
            only.name()
        )));
    }
    Ok(kind)
}

/// A run's exit code: its correctness violations (on stderr) fail it, as does its error.
fn exit(outcome: Result<Vec<String>, String>) -> ExitCode {
    match outcome {
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

/// Hands the run of `kind` over to `older`'s binary next to this one, with the same
/// arguments.
fn exec_older(older: Flavor, kind: StrategyKind) -> ExitCode {
    let path = match process::sibling(older.bin()) {
        Ok(path) => path,
        Err(e) => return failed(&format!("cannot locate this executable: {e}")),
    };
    let err = process::exec(&path, std::env::args_os().skip(1));
    failed(&format!(
        "strategy '{}' runs in {}, which cannot be started: {err} (build it with the same \
         profile: cargo build --release --manifest-path workloads/timers/{}/Cargo.toml)",
        kind.name(),
        path.display(),
        older.crate_dir()
    ))
}

fn phase_event(event: RunEvent) {
    match event {
        RunEvent::MeasureStart => events::measure_start(),
        RunEvent::MeasureEnd => events::measure_end(),
    }
}

/// Runs the `timer-ops` scenario, telling `on_event` of its moments.
fn execute_timer_ops(plan: &Plan, on_event: &mut OnEvent) -> Result<Vec<String>, String> {
    let params = &plan.params;
    let runtime = plan.strategy.build_runtime(params.threads)?;
    on_event(events::RunEvent::Ready)?;
    // The window's moments come from inside the run; the first failure to tell one fails it.
    let mut told = Ok(());
    let report = timer_ops::run(
        &runtime,
        plan.strategy,
        params,
        plan.warmup,
        plan.duration,
        |event| {
            let event = match event {
                RunEvent::MeasureStart => events::RunEvent::MeasureStart,
                RunEvent::MeasureEnd => events::RunEvent::MeasureEnd,
            };
            if told.is_ok() {
                told = on_event(event);
            }
        },
    )?;
    told?;
    events::result(
        plan.strategy.name(),
        plan.scenario.name,
        params.values(),
        report.metrics_json(),
    );
    Ok(report.violations())
}

/// Runs a validated plan against a server; returns the correctness violations (empty =
/// sound).
fn execute(plan: &Plan, gate: bool) -> Result<Vec<String>, String> {
    let params = &plan.params;
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate this executable: {e}"))?;
    #[cfg(feature = "cql")]
    if plan.strategy.is_driver() {
        return crate::strategy::scylla_driver::execute(
            plan.strategy,
            plan.scenario.name,
            params,
            (plan.warmup, plan.duration),
            gate,
            (&exe, &server_args(params)),
        );
    }
    // Spawned from the main thread, which lives as long as the process (see spawn).
    let server = ServerProcess::spawn(&exe, &server_args(params))?;
    let runtime = plan.strategy.build_runtime(params.threads)?;
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], server.port()));
    let mut bench = runtime.block_on(Bench::connect(plan.strategy, params, addr, None))?;
    bench.measure_server_cpu(server.pid());
    events::ready(&[std::process::id(), server.pid()], gate)?;
    let report = runtime.block_on(bench.run(plan.warmup, plan.duration, phase_event))?;
    events::result(
        plan.strategy.name(),
        plan.scenario.name,
        params.values(),
        report.metrics_json(),
    );
    // Tasks first, then the engine threads (with the bench), then the server.
    drop(runtime);
    drop(bench);
    drop(server);
    report.note_timeouts_beyond_slow(params.slow_tail_expected(plan.strategy));
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
        Err(e) => return bad_input(&e),
    };
    let config = ServerConfig::from_params(&params);
    let server = match Server::start_protocol(config, args.port, args.protocol) {
        Ok(server) => server,
        Err(e) => return failed(&format!("cannot serve on 127.0.0.1:{}: {e}", args.port)),
    };
    println!("{}", server.addr().port());
    match server.wait() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => failed(&format!("server failed: {e}")),
    }
}
