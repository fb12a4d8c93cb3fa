//! `timers-bench-sharded`: `timers-bench` built against tokio 1.44, the last release with
//! the sharded timer wheel (one wheel per worker, tokio #6534 in 1.38; reverted by #7226 in
//! 1.45). It runs only `tokio-timeout-sharded`, which `timers-bench` hands over to it with
//! the same arguments.

use std::process::ExitCode;

fn main() -> ExitCode {
    timers::cli::main(timers::cli::Flavor::Sharded)
}
