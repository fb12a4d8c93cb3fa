//! What the Rust suites' command lines share (the `timers`, `tokenbucket` and `io` suites),
//! following `docs/workload-contract.md`:
//!
//! - [`param_values`]: parameter specs, the contract's value spellings, the precedence
//!   `--param` > scenario > default, and describe's `params`/`scenarios` lists.
//! - [`cli`]: the `describe` / `run` / `check` verbs (beside a suite's own, as timers'
//!   `serve`), their arguments, the window's seconds and the one-line usage errors (exit 2).
//! - [`describe`]: the `describe` document's common keys and its `metrics` entries.
//! - [`events`]: the `ready` (with the gate), `measure_start`, `measure_end` and `result`
//!   lines on stdout.

pub mod cli;
pub mod describe;
pub mod events;
pub mod param_values;
