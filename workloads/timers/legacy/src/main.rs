//! `timers-bench-legacy`: `timers-bench` built against tokio 1.37, the last release before
//! tokio sharded its timer wheel (1.38, #6534; 1.45 reverted it, #7226, so today's tokio has
//! one wheel under one lock again). It runs only `tokio-timeout-legacy`, which `timers-bench`
//! hands over to it with the same arguments.

use std::process::ExitCode;

fn main() -> ExitCode {
    timers::cli::main(timers::cli::Flavor::Legacy)
}
