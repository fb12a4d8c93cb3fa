//! `io-bench`: seastar's io_tester on the harness's scratch file, metered by the shared token
//! bucket, following `docs/workload-contract.md` (`describe`, `run`, `check`).
//!
//! Exit codes: 0 = done, 2 = bad input (one line on stderr naming it and the valid choices;
//! also io_uring refused by the kernel, or no `HARNESS_SCRATCH_FILE` for `run`), 1 = the run
//! failed (O_DIRECT refused, ENOSPC, a short or failed request, a correctness check).

use std::process::ExitCode;

use io_bench::bench_run;
use io_bench::params::{self, IoEngine, Params, Strategy};
use io_bench::{describe, scratch_file, uring_engine};
use serde_json::Value as Json;
use suite_cli::cli::{self, Plan, Resolve, Suite};
use suite_cli::events::{self, OnEvent};
use suite_cli::param_values::{BadInput, Scenario};

struct Io;

impl Suite for Io {
    type Strategy = Strategy;
    type Params = Params;
    const DESCRIBE: fn() -> Json = describe::describe;
    const STRATEGY: fn(&str) -> Result<Strategy, BadInput> = Strategy::from_name;
    const SCENARIOS: &'static [Scenario] = params::SCENARIOS;
    const PARAMS: Resolve<Params> = params::resolve;

    /// io_uring refused by the kernel is bad input, found before set-up.
    fn check(plan: &Plan<Strategy, Params>) -> Result<(), BadInput> {
        if plan.params.engine == IoEngine::IoUring {
            if let Some(reason) = uring_engine::unavailable() {
                return Err(BadInput(reason));
            }
        }
        Ok(())
    }

    fn run(plan: Plan<Strategy, Params>, on_event: &mut OnEvent) -> ExitCode {
        let path = match scratch_file::path_from_env() {
            Ok(path) => path,
            Err(e) => return cli::bad_input(&BadInput(e)),
        };
        let report = match bench_run::run(&plan, &path, on_event) {
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
}

fn main() -> ExitCode {
    cli::main::<Io>(
        "io-bench",
        env!("CARGO_PKG_VERSION"),
        "seastar's io_tester on a scratch file, metered by the shared token bucket (unlimited, pure, capped-release, flow monitor)",
    )
}
