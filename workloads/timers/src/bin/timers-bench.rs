//! `timers-bench`: the timers workload's executable (see `docs/workload-contract.md`).

use std::process::ExitCode;

fn main() -> ExitCode {
    timers::cli::main(timers::cli::Flavor::Current)
}
