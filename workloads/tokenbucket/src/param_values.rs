//! Parameter values as the workload contract spells them (docs/workload-contract.md,
//! "Parameter values"): specs for `describe`, parsing of `--param name=value` texts, and the
//! precedence `--param` > scenario > default. The same rules as
//! `workloads/timers/src/params.rs`. Every rejection is a [`BadInput`] holding one line that
//! names the bad input and the valid choices or range.

use std::fmt;

use serde_json::{json, Map, Value as Json};

/// A parameter's value as given or defaulted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Choice(&'static str),
}

impl Value {
    pub fn to_json(self) -> Json {
        match self {
            Value::Int(v) => json!(v),
            Value::Float(v) => json!(v),
            Value::Choice(v) => json!(v),
        }
    }
}

/// What values a parameter accepts.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Int { min: i64, max: i64 },
    Float { min: f64, max: f64 },
    Choice(&'static [&'static str]),
}

/// One parameter as `describe` lists it.
#[derive(Clone, Debug)]
pub struct ParamSpec {
    pub name: &'static str,
    pub kind: Kind,
    pub default: Value,
    pub help: &'static str,
}

/// A named set of parameter values.
#[derive(Clone, Copy, Debug)]
pub struct Scenario {
    pub name: &'static str,
    pub help: &'static str,
    pub params: &'static [(&'static str, Value)],
}

/// Rejected input; the message is one line without the `error: ` prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

fn names<'a>(items: impl Iterator<Item = &'a str>) -> String {
    items.collect::<Vec<_>>().join(", ")
}

fn range_text(kind: &Kind) -> String {
    match kind {
        Kind::Int { min, max } => format!("an integer in {min}..={max}"),
        Kind::Float { min, max } => format!("a number in {min}..={max}"),
        Kind::Choice(choices) => format!("one of {}", names(choices.iter().copied())),
    }
}

/// Whether `text` is a JSON number (RFC 8259): the spellings of numbers in the workload
/// contract, so no `+`, `0x`, `_`, `.5`, `5.`, `inf` or `nan`.
fn is_json_number(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut at = 0;
    let digits = |at: &mut usize| {
        let start = *at;
        while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
            *at += 1;
        }
        *at > start
    };
    if bytes.first() == Some(&b'-') {
        at += 1;
    }
    match bytes.get(at) {
        Some(b'0') => at += 1,
        Some(b'1'..=b'9') => {
            digits(&mut at);
        }
        _ => return false,
    }
    if bytes.get(at) == Some(&b'.') {
        at += 1;
        if !digits(&mut at) {
            return false;
        }
    }
    if matches!(bytes.get(at), Some(b'e' | b'E')) {
        at += 1;
        if matches!(bytes.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        if !digits(&mut at) {
            return false;
        }
    }
    at == bytes.len()
}

/// Largest integer a double holds exactly: integral values spelt with a fraction or an
/// exponent are read through one.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// An integral value in any JSON-number spelling (`8`, `8.0`, `1e3`); `8.5` is none.
fn parse_int(text: &str) -> Option<i64> {
    if !is_json_number(text) {
        return None;
    }
    if let Ok(v) = text.parse::<i64>() {
        return Some(v);
    }
    let v: f64 = text.parse().ok()?;
    (v.fract() == 0.0 && v.abs() <= MAX_SAFE_INTEGER).then_some(v as i64)
}

/// A finite number in any JSON-number spelling.
fn parse_float(text: &str) -> Option<f64> {
    if !is_json_number(text) {
        return None;
    }
    let v: f64 = text.parse().ok()?;
    v.is_finite().then_some(v)
}

/// Parses `text` as a value of `spec`.
fn parse_value(spec: &ParamSpec, text: &str) -> Result<Value, BadInput> {
    let bad = || {
        BadInput(format!(
            "bad value '{text}' for parameter '{}' (valid: {})",
            spec.name,
            range_text(&spec.kind)
        ))
    };
    match spec.kind {
        Kind::Int { min, max } => {
            let v = parse_int(text.trim()).ok_or_else(bad)?;
            if (min..=max).contains(&v) {
                Ok(Value::Int(v))
            } else {
                Err(bad())
            }
        }
        Kind::Float { min, max } => {
            let v = parse_float(text.trim()).ok_or_else(bad)?;
            if (min..=max).contains(&v) {
                Ok(Value::Float(v))
            } else {
                Err(bad())
            }
        }
        Kind::Choice(choices) => choices
            .iter()
            .find(|c| **c == text.trim())
            .map(|c| Value::Choice(c))
            .ok_or_else(bad),
    }
}

/// Resolves parameter values: `overrides` (`k=v` texts from `--param`) over the scenario's
/// values (if any) over the defaults of `specs`.
pub fn resolve_values(
    specs: &[ParamSpec],
    scenario: Option<&Scenario>,
    overrides: &[String],
) -> Result<Vec<(&'static str, Value)>, BadInput> {
    let mut values: Vec<(&'static str, Value)> =
        specs.iter().map(|s| (s.name, s.default)).collect();
    let mut set = |name: &str, value: Value| {
        let slot = values
            .iter_mut()
            .find(|(n, _)| *n == name)
            .expect("scenario and override names are checked against the specs");
        slot.1 = value;
    };
    for (name, value) in scenario.map_or(&[][..], |s| s.params) {
        set(name, *value);
    }
    for text in overrides {
        let Some((name, raw)) = text.split_once('=') else {
            return Err(BadInput(format!(
                "bad --param '{text}': expected name=value (valid names: {})",
                names(specs.iter().map(|s| s.name))
            )));
        };
        let name = name.trim();
        let spec = specs.iter().find(|s| s.name == name).ok_or_else(|| {
            BadInput(format!(
                "unknown parameter '{name}' (valid: {})",
                names(specs.iter().map(|s| s.name))
            ))
        })?;
        set(spec.name, parse_value(spec, raw)?);
    }
    Ok(values)
}

/// Looks a scenario up by name in `scenarios` (`None` = the first one).
pub fn find_scenario<'a>(
    scenarios: &'a [Scenario],
    name: Option<&str>,
) -> Result<&'a Scenario, BadInput> {
    let Some(name) = name else {
        return Ok(&scenarios[0]);
    };
    scenarios.iter().find(|s| s.name == name).ok_or_else(|| {
        BadInput(format!(
            "unknown scenario '{name}' (valid: {})",
            names(scenarios.iter().map(|s| s.name))
        ))
    })
}

/// The specs as `describe`'s `params` list.
pub fn specs_json(specs: &[ParamSpec]) -> Vec<Json> {
    specs
        .iter()
        .map(|s| {
            let mut p = json!({
                "name": s.name,
                "default": s.default.to_json(),
                "help": s.help,
            });
            let obj = p.as_object_mut().expect("object literal");
            match s.kind {
                Kind::Int { min, max } => {
                    obj.insert("type".into(), json!("int"));
                    obj.insert("min".into(), json!(min));
                    obj.insert("max".into(), json!(max));
                }
                Kind::Float { min, max } => {
                    obj.insert("type".into(), json!("float"));
                    obj.insert("min".into(), json!(min));
                    obj.insert("max".into(), json!(max));
                }
                Kind::Choice(choices) => {
                    obj.insert("type".into(), json!("choice"));
                    obj.insert("choices".into(), json!(choices));
                }
            }
            p
        })
        .collect()
}

/// The scenarios as `describe`'s `scenarios` list.
pub fn scenarios_json(scenarios: &[Scenario]) -> Vec<Json> {
    scenarios
        .iter()
        .map(|s| {
            let params: Map<String, Json> = s
                .params
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_json()))
                .collect();
            json!({"name": s.name, "help": s.help, "params": params})
        })
        .collect()
}

/// Resolved values as a JSON object, for the result line.
pub fn values_json(values: &[(&'static str, Value)]) -> Json {
    Json::Object(
        values
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_json()))
            .collect(),
    )
}
