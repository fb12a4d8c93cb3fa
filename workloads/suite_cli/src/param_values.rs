//! Parameter values as the workload contract spells them (docs/workload-contract.md,
//! "Parameter values"): specs for `describe`, parsing of `--param name=value` texts, and the
//! precedence `--param` > scenario > default, shared by the `timers`, `tokenbucket` and `io`
//! suites. Every rejection is a [`BadInput`] holding one line that names the bad input and the
//! valid choices or range.

use std::borrow::Cow;
use std::fmt;

use serde_json::{json, Map, Value as Json};

/// A parameter's value as given or defaulted.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Choice(&'static str),
    Bool(bool),
    /// A `string` parameter's text (borrowed in specs and scenarios, owned from `--param`).
    Text(Cow<'static, str>),
}

impl Value {
    pub fn to_json(&self) -> Json {
        match self {
            Value::Int(v) => json!(v),
            Value::Float(v) => json!(v),
            Value::Choice(v) => json!(v),
            Value::Bool(v) => json!(v),
            Value::Text(v) => json!(v),
        }
    }
}

/// The value as `--param name=value` takes it.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Choice(v) => f.write_str(v),
            Value::Bool(v) => write!(f, "{v}"),
            Value::Text(v) => f.write_str(v),
        }
    }
}

/// What values a parameter accepts.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Int {
        min: i64,
        max: i64,
    },
    Float {
        min: f64,
        max: f64,
    },
    Choice(&'static [&'static str]),
    /// `true` or `false`.
    Bool,
    /// Any text (the workload may check it further).
    Text,
}

/// One parameter as `describe` lists it.
#[derive(Clone, Debug)]
pub struct ParamSpec {
    pub name: &'static str,
    pub kind: Kind,
    pub default: Value,
    pub help: &'static str,
}

impl Kind {
    pub fn int(min: i64, max: i64) -> Kind {
        Kind::Int { min, max }
    }

    pub fn float(min: f64, max: f64) -> Kind {
        Kind::Float { min, max }
    }
}

/// A parameter's spec, for lists of them.
pub fn spec(name: &'static str, kind: Kind, default: Value, help: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        kind,
        default,
        help,
    }
}

/// Number of logical CPUs, the suites' default shard count.
pub fn logical_cpus() -> i64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as i64)
}

/// `--param` words as owned strings, as `RunArgs` holds them.
pub fn param_words(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
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

/// The item of `all` that `name_of` names `name`, or bad input naming `what` and the valid
/// names ("unknown strategy 'x' (valid: a, b)").
pub fn find_named<T: Copy>(
    what: &str,
    all: &[T],
    name_of: impl Fn(T) -> &'static str,
    name: &str,
) -> Result<T, BadInput> {
    all.iter()
        .copied()
        .find(|&item| name_of(item) == name)
        .ok_or_else(|| {
            BadInput(format!(
                "unknown {what} '{name}' (valid: {})",
                names(all.iter().map(|&item| name_of(item)))
            ))
        })
}

fn names<'a>(items: impl Iterator<Item = &'a str>) -> String {
    items.collect::<Vec<_>>().join(", ")
}

fn range_text(kind: &Kind) -> String {
    match kind {
        Kind::Int { min, max } => format!("an integer in {min}..={max}"),
        Kind::Float { min, max } => format!("a number in {min}..={max}"),
        Kind::Choice(choices) => format!("one of {}", names(choices.iter().copied())),
        Kind::Bool => "true or false".to_string(),
        Kind::Text => "any text".to_string(),
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
        Kind::Bool => match text.trim() {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(bad()),
        },
        Kind::Text => Ok(Value::Text(Cow::Owned(text.to_string()))),
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
        specs.iter().map(|s| (s.name, s.default.clone())).collect();
    let mut set = |name: &str, value: Value| {
        let slot = values
            .iter_mut()
            .find(|(n, _)| *n == name)
            .expect("scenario and override names are checked against the specs");
        slot.1 = value;
    };
    for (name, value) in scenario.map_or(&[][..], |s| s.params) {
        set(name, value.clone());
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
                Kind::Bool => {
                    obj.insert("type".into(), json!("bool"));
                }
                Kind::Text => {
                    obj.insert("type".into(), json!("string"));
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

/// The value of `name` among resolved `values` (every spec has one).
fn get<'a>(values: &'a [(&'static str, Value)], name: &str) -> &'a Value {
    values
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no parameter {name}"))
}

/// The resolved value of int parameter `name`.
pub fn int(values: &[(&'static str, Value)], name: &str) -> i64 {
    match get(values, name) {
        Value::Int(v) => *v,
        other => panic!("parameter {name} is an int, got {other:?}"),
    }
}

/// The resolved value of float parameter `name`.
pub fn float(values: &[(&'static str, Value)], name: &str) -> f64 {
    match get(values, name) {
        Value::Float(v) => *v,
        other => panic!("parameter {name} is a float, got {other:?}"),
    }
}

/// The resolved value of choice parameter `name`.
pub fn choice(values: &[(&'static str, Value)], name: &str) -> &'static str {
    match get(values, name) {
        Value::Choice(v) => v,
        other => panic!("parameter {name} is a choice, got {other:?}"),
    }
}

/// The resolved value of bool parameter `name`.
pub fn boolean(values: &[(&'static str, Value)], name: &str) -> bool {
    match get(values, name) {
        Value::Bool(v) => *v,
        other => panic!("parameter {name} is a bool, got {other:?}"),
    }
}

/// The resolved value of string parameter `name`.
pub fn text<'a>(values: &'a [(&'static str, Value)], name: &str) -> &'a str {
    match get(values, name) {
        Value::Text(v) => v,
        other => panic!("parameter {name} is a string, got {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[ParamSpec] = &[
        ParamSpec {
            name: "n",
            kind: Kind::Int {
                min: -5,
                max: 1 << 60,
            },
            default: Value::Int(8),
            help: "an int",
        },
        ParamSpec {
            name: "x",
            kind: Kind::Float {
                min: 0.0,
                max: 10.0,
            },
            default: Value::Float(0.5),
            help: "a float",
        },
        ParamSpec {
            name: "mode",
            kind: Kind::Choice(&["a", "b"]),
            default: Value::Choice("a"),
            help: "a choice",
        },
        ParamSpec {
            name: "on",
            kind: Kind::Bool,
            default: Value::Bool(false),
            help: "a bool",
        },
        ParamSpec {
            name: "dir",
            kind: Kind::Text,
            default: Value::Text(Cow::Borrowed("")),
            help: "a string",
        },
    ];

    fn one(text: &str) -> Result<Vec<(&'static str, Value)>, BadInput> {
        resolve_values(SPECS, None, &[text.to_string()])
    }

    #[test]
    fn ints_take_every_integral_json_number_and_nothing_else() {
        for (text, want) in [
            ("8", 8),
            ("8.0", 8),
            ("1e1", 10),
            ("0.8e1", 8),
            ("-0", 0),
            (" 3 ", 3),
        ] {
            assert_eq!(
                int(&one(&format!("n={text}")).unwrap(), "n"),
                want,
                "{text}"
            );
        }
        for text in [
            "8.5", "+8", "08", "0x10", "1_000", "8.", ".5", "inf", "", "-6",
        ] {
            let e = one(&format!("n={text}")).unwrap_err().0;
            assert_eq!(
                e,
                format!("bad value '{text}' for parameter 'n' (valid: an integer in -5..=1152921504606846976)")
            );
        }
        // Beyond 2^53 only plain digits.
        assert_eq!(
            int(&one("n=9007199254740993").unwrap(), "n"),
            9007199254740993
        );
        assert!(one("n=9007199254740993.0").is_err());
    }

    #[test]
    fn floats_take_json_numbers_in_range() {
        for (text, want) in [
            ("1", 1.0),
            ("0.25", 0.25),
            ("2.5e-1", 0.25),
            ("25E-2", 0.25),
        ] {
            assert_eq!(
                float(&one(&format!("x={text}")).unwrap(), "x"),
                want,
                "{text}"
            );
        }
        for text in [".5", "1.", "+1", "nan", "inf", "0x1p-2", "1e400", "11"] {
            assert!(one(&format!("x={text}")).is_err(), "{text}");
        }
    }

    #[test]
    fn choices_and_strings() {
        assert_eq!(choice(&one("mode=b").unwrap(), "mode"), "b");
        assert_eq!(
            one("mode=c").unwrap_err().0,
            "bad value 'c' for parameter 'mode' (valid: one of a, b)"
        );
        assert_eq!(text(&one("dir=/tmp/x y").unwrap(), "dir"), "/tmp/x y");
        assert!(boolean(&one("on=true").unwrap(), "on"));
        for bad in ["yes", "1", "True"] {
            assert_eq!(
                one(&format!("on={bad}")).unwrap_err().0,
                format!("bad value '{bad}' for parameter 'on' (valid: true or false)")
            );
        }
        assert_eq!(text(&resolve_values(SPECS, None, &[]).unwrap(), "dir"), "");
    }

    #[test]
    fn precedence_and_unknown_names() {
        const S: Scenario = Scenario {
            name: "s",
            help: "",
            params: &[("n", Value::Int(1)), ("x", Value::Float(2.0))],
        };
        let v = resolve_values(SPECS, Some(&S), &["x=3".to_string()]).unwrap();
        assert_eq!(int(&v, "n"), 1);
        assert_eq!(float(&v, "x"), 3.0);
        assert_eq!(
            one("zz=1").unwrap_err().0,
            "unknown parameter 'zz' (valid: n, x, mode, on, dir)"
        );
        assert!(one("n")
            .unwrap_err()
            .0
            .starts_with("bad --param 'n': expected name=value"));
        assert_eq!(
            find_scenario(&[S], Some("t")).unwrap_err().0,
            "unknown scenario 't' (valid: s)"
        );
        assert_eq!(param_words(&["n=1", "x=2"]), ["n=1", "x=2"]);
        assert_eq!(spec("n", Kind::int(0, 9), Value::Int(1), "h").name, "n");
        assert!(
            matches!(Kind::float(0.5, 1.0), Kind::Float { min, max } if min == 0.5 && max == 1.0)
        );
        let name = |n: u8| ["zero", "one"][usize::from(n)];
        assert_eq!(find_named("number", &[0, 1], name, "one").unwrap(), 1);
        assert_eq!(
            find_named("number", &[0, 1], name, "two").unwrap_err().0,
            "unknown number 'two' (valid: zero, one)"
        );
    }

    #[test]
    fn displayed_values_parse_back() {
        let given = ["n=-3", "x=0.25", "mode=b", "on=true", "dir=a b"];
        let values = resolve_values(SPECS, None, &given.map(String::from)).unwrap();
        let shown: Vec<String> = values.iter().map(|(n, v)| format!("{n}={v}")).collect();
        assert_eq!(shown, given);
        assert_eq!(resolve_values(SPECS, None, &shown).unwrap(), values);
    }

    #[test]
    fn describe_lists_types() {
        let j = specs_json(SPECS);
        let types: Vec<&str> = j.iter().map(|p| p["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["int", "float", "choice", "bool", "string"]);
        assert_eq!(j[4]["default"], "");
        assert_eq!(
            values_json(&resolve_values(SPECS, None, &[]).unwrap())["mode"],
            "a"
        );
    }
}
