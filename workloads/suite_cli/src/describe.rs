//! The `describe` document's common keys (docs/workload-contract.md, `<bin> describe`).

use serde_json::{json, Value as Json};

use crate::param_values::{scenarios_json, specs_json, ParamSpec, Scenario};

/// The document up to `metrics`; the suite then adds its own keys (`plots`, `needs`).
/// The first scenario is the default.
pub fn document<'a>(
    suite: &str,
    baseline: &str,
    strategies: impl IntoIterator<Item = (&'a str, &'a str)>,
    scenarios: &[Scenario],
    specs: &[ParamSpec],
    metrics: Vec<Json>,
) -> Json {
    let strategies: Vec<Json> = strategies
        .into_iter()
        .map(|(name, help)| json!({"name": name, "help": help}))
        .collect();
    json!({
        "suite": suite,
        "contract_version": 2,
        "baseline": baseline,
        "strategies": strategies,
        "default_scenario": scenarios[0].name,
        "scenarios": scenarios_json(scenarios),
        "params": specs_json(specs),
        "metrics": metrics,
    })
}

/// One entry of `metrics`, with `"headline": true` only if `headline`.
pub fn metric(name: &str, unit: &str, better: &str, label: &str, headline: bool) -> Json {
    let mut m = json!({"name": name, "unit": unit, "better": better, "label": label});
    if headline {
        m["headline"] = json!(true);
    }
    m
}

/// A metric entry per row of (name, unit, better, label, headline), as [`metric`] makes it.
pub fn metrics(rows: &[(&str, &str, &str, &str, bool)]) -> Vec<Json> {
    rows.iter()
        .map(|&(name, unit, better, label, headline)| metric(name, unit, better, label, headline))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::param_values::{Kind, Value};

    #[test]
    fn document_keys_keep_their_order_and_the_suite_appends_its_own() {
        let specs = [ParamSpec {
            name: "n",
            kind: Kind::Int { min: 0, max: 9 },
            default: Value::Int(1),
            help: "an int",
        }];
        let scenarios = [
            Scenario {
                name: "first",
                help: "the default",
                params: &[],
            },
            Scenario {
                name: "second",
                help: "another",
                params: &[("n", Value::Int(2))],
            },
        ];
        let mut d = document(
            "s",
            "a",
            [("a", "strategy a"), ("b", "strategy b")],
            &scenarios,
            &specs,
            vec![json!({"name": "m"})],
        );
        d["needs"] = json!({});
        let keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "suite",
                "contract_version",
                "baseline",
                "strategies",
                "default_scenario",
                "scenarios",
                "params",
                "metrics",
                "needs"
            ]
        );
        assert_eq!(
            d["strategies"].to_string(),
            r#"[{"name":"a","help":"strategy a"},{"name":"b","help":"strategy b"}]"#
        );
        assert_eq!(d["default_scenario"], "first");
        assert_eq!(d["scenarios"], json!(scenarios_json(&scenarios)));
        assert_eq!(d["params"], json!(specs_json(&specs)));
    }

    #[test]
    fn metric_has_headline_only_when_asked() {
        assert_eq!(
            metric("iops", "req/s", "higher", "IOPS", true).to_string(),
            r#"{"name":"iops","unit":"req/s","better":"higher","label":"IOPS","headline":true}"#
        );
        assert_eq!(
            metric("max", "ns", "lower", "max", false).to_string(),
            r#"{"name":"max","unit":"ns","better":"lower","label":"max"}"#
        );
        let rows = [
            ("a", "x", "higher", "A", true),
            ("b", "s", "lower", "B", false),
        ];
        assert_eq!(
            metrics(&rows),
            [
                metric("a", "x", "higher", "A", true),
                metric("b", "s", "lower", "B", false)
            ]
        );
    }
}
