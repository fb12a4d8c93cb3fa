//! The JSON lines a run prints on stdout (docs/workload-contract.md, `<bin> run`).

use std::io::BufRead;

use serde_json::{json, Map, Value as Json};

use crate::param_values::{values_json, Value};

/// Prints one event line.
pub fn emit(line: &Json) {
    println!("{line}");
}

/// `ready` with the processes worth probing (the measured client first); with `gate`, then
/// waits for one line on stdin.
pub fn ready(pids: &[u32], gate: bool) -> Result<(), String> {
    emit(&json!({"event": "ready", "pids": pids}));
    if gate {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map_err(|e| format!("cannot read the gate line from stdin: {e}"))?;
    }
    Ok(())
}

/// The moments of a run a suite reports as they happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEvent {
    Ready,
    MeasureStart,
    MeasureEnd,
}

/// What a run tells of its moments (it may block after `Ready`: the gate).
pub type OnEvent<'a> = dyn FnMut(RunEvent) -> Result<(), String> + 'a;

/// Prints each event as its line: `ready` names this process and, with `gate`, then waits
/// for stdin's line.
pub fn printer(gate: bool) -> impl FnMut(RunEvent) -> Result<(), String> {
    move |event| {
        match event {
            RunEvent::Ready => ready(&[std::process::id()], gate)?,
            RunEvent::MeasureStart => measure_start(),
            RunEvent::MeasureEnd => measure_end(),
        }
        Ok(())
    }
}

pub fn measure_start() {
    emit(&json!({"event": "measure_start"}));
}

pub fn measure_end() {
    emit(&json!({"event": "measure_end"}));
}

/// The `result` line: `metrics` plus `strategy`, `scenario` and the resolved `params`.
pub fn result(
    strategy: &str,
    scenario: &str,
    params: &[(&'static str, Value)],
    metrics: Map<String, Json>,
) {
    let mut line = json!({
        "event": "result",
        "strategy": strategy,
        "scenario": scenario,
        "params": values_json(params),
    });
    line.as_object_mut()
        .expect("object literal")
        .extend(metrics);
    emit(&line);
}
