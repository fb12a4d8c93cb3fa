//! The verbs of a suite's binary (`describe`, `run`, `check`), their arguments, the
//! window's seconds, and clap's usage errors as one line with exit 2.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use serde_json::Value as Json;

use crate::events::{self, OnEvent};
use crate::param_values::{find_scenario, BadInput, Scenario};

/// Longest measured window or warm-up accepted, in seconds.
pub const MAX_SECONDS: f64 = 86_400.0;

#[derive(Parser)]
struct Cli<V: Subcommand> {
    #[command(subcommand)]
    command: V,
}

/// What the binary was asked to do.
#[derive(Subcommand)]
pub enum Command {
    /// Print the workload description (strategies, scenarios, parameters, metrics) as JSON.
    Describe,
    /// Run one strategy, print JSON events and the result.
    Run(RunArgs),
    /// Check `run`'s arguments as `run` does (exit 0, or 2 naming the bad input); runs nothing.
    Check(RunArgs),
}

/// A parsed verb: one of the shared three, or one of the suite's own.
pub enum Verb<X> {
    Describe,
    Run(RunArgs),
    Check(RunArgs),
    Own(X),
}

/// A binary's verbs, for [`main_verbs`]: the shared ones (maybe with other help lines) and
/// the suite's own, in the order `--help` lists them.
pub trait Verbs: Subcommand {
    /// The suite's own verbs.
    type Own;
    fn verb(self) -> Verb<Self::Own>;
}

impl Verbs for Command {
    type Own = std::convert::Infallible;
    fn verb(self) -> Verb<Self::Own> {
        match self {
            Command::Describe => Verb::Describe,
            Command::Run(args) => Verb::Run(args),
            Command::Check(args) => Verb::Check(args),
        }
    }
}

/// `run`'s and `check`'s arguments.
#[derive(Args)]
pub struct RunArgs {
    /// Strategy (see `describe`).
    #[arg(long)]
    pub strategy: String,
    /// Scenario (default: the first of `describe`).
    #[arg(long)]
    pub scenario: Option<String>,
    /// Parameter override, repeatable.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Length of the measured window in seconds.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub duration_s: String,
    /// Length of the warm-up in seconds.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub warmup_s: String,
    /// After printing `ready`, wait for one line on stdin before starting.
    #[arg(long)]
    pub gate: bool,
}

impl RunArgs {
    /// The measured window's length (`--duration-s`, > 0).
    pub fn duration(&self) -> Result<Duration, BadInput> {
        seconds("duration-s", &self.duration_s, true)
    }

    /// The warm-up's length (`--warmup-s`, >= 0).
    pub fn warmup(&self) -> Result<Duration, BadInput> {
        seconds("warmup-s", &self.warmup_s, false)
    }
}

/// What `run` and `check` found in `run`'s arguments: a run to do.
pub struct Plan<S, P> {
    pub strategy: S,
    pub scenario: &'static Scenario,
    pub params: P,
    pub warmup: Duration,
    pub duration: Duration,
}

/// Resolves the parameters under a scenario with the `--param` overrides.
pub type Resolve<P> = fn(Option<&Scenario>, &[String]) -> Result<P, BadInput>;

/// A suite's binary, for [`main`] or [`main_verbs`]: its document, how it reads `run`'s
/// arguments and the run.
pub trait Suite {
    type Strategy;
    type Params;
    /// The `describe` document.
    const DESCRIBE: fn() -> Json;
    /// The strategy named by `--strategy`.
    const STRATEGY: fn(&str) -> Result<Self::Strategy, BadInput>;
    /// Every scenario, the default first.
    const SCENARIOS: &'static [Scenario];
    /// The parameters under a scenario with the `--param` overrides, resolved and checked.
    const PARAMS: Resolve<Self::Params>;
    /// Checks of the strategy with the resolved parameters, before the window's seconds are
    /// read (default: none).
    fn check_params(
        _strategy: &Self::Strategy,
        _scenario: &Scenario,
        _params: &Self::Params,
    ) -> Result<(), BadInput> {
        Ok(())
    }
    /// Checks of the plan as a whole, beyond its parts (default: none).
    fn check(_plan: &Plan<Self::Strategy, Self::Params>) -> Result<(), BadInput> {
        Ok(())
    }
    /// Runs the plan, telling `on_event` of the run's moments; the exit code.
    fn run(plan: Plan<Self::Strategy, Self::Params>, on_event: &mut OnEvent) -> ExitCode;
    /// `run`'s verb: [`Suite::run`] with each event printed as it comes ([`events::printer`];
    /// `gate`: wait for stdin's line after `ready`). A suite whose `ready` names more
    /// processes than this one (a server it starts) overrides it.
    fn run_verb(plan: Plan<Self::Strategy, Self::Params>, gate: bool) -> ExitCode {
        Self::run(plan, &mut events::printer(gate))
    }
}

/// The binary `name` of suite `S`: parses the command line and runs its verb (`describe`,
/// `run`, `check`), with the contract's exit codes.
pub fn main<S: Suite>(name: &'static str, version: &'static str, about: &'static str) -> ExitCode {
    main_verbs::<S, Command>(name, version, about, |never| match never {})
}

/// [`main`] for a binary with verbs of its own: `V` lists them all, and `own` runs the
/// suite's own.
pub fn main_verbs<S: Suite, V: Verbs>(
    name: &'static str,
    version: &'static str,
    about: &'static str,
    own: impl FnOnce(V::Own) -> ExitCode,
) -> ExitCode {
    let command = match parse::<V>(name, version, about) {
        Ok(command) => command,
        Err(code) => return code,
    };
    match command.verb() {
        Verb::Describe => {
            println!("{}", (S::DESCRIBE)());
            ExitCode::SUCCESS
        }
        Verb::Run(args) => match plan::<S>(&args) {
            Ok(plan) => S::run_verb(plan, args.gate),
            Err(e) => bad_input(&e),
        },
        Verb::Check(args) => match plan::<S>(&args) {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => bad_input(&e),
        },
        Verb::Own(verb) => own(verb),
    }
}

/// `run`'s checks before anything is set up, shared with `check`.
fn plan<S: Suite>(args: &RunArgs) -> Result<Plan<S::Strategy, S::Params>, BadInput> {
    let strategy = (S::STRATEGY)(&args.strategy)?;
    let scenario = find_scenario(S::SCENARIOS, args.scenario.as_deref())?;
    let params = (S::PARAMS)(Some(scenario), &args.params)?;
    S::check_params(&strategy, scenario, &params)?;
    let plan = Plan {
        strategy,
        scenario,
        params,
        duration: args.duration()?,
        warmup: args.warmup()?,
    };
    S::check(&plan)?;
    Ok(plan)
}

/// Parses the command line of the binary `name` (`about` is its help line): `V` lists its
/// verbs (it may reuse [`RunArgs`]), in the order the missing-command error names them. Help
/// and version are printed and become `Err(0)`; a usage error is one line and `Err(2)`.
fn parse<V: Subcommand>(
    name: &'static str,
    version: &'static str,
    about: &'static str,
) -> Result<V, ExitCode> {
    let command = Cli::<V>::command()
        .name(name)
        .bin_name(name)
        .version(version)
        .about(about);
    let verbs = verb_names(&command);
    command
        .try_get_matches()
        .and_then(|m| Cli::<V>::from_arg_matches(&m))
        .map(|cli| cli.command)
        .map_err(|e| clap_error(e, &verbs))
}

fn verb_names(command: &clap::Command) -> String {
    command
        .get_subcommands()
        .map(|c| c.get_name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Help and version go out as clap prints them; usage errors become one line, exit 2.
fn clap_error(e: clap::Error, verbs: &str) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            eprintln!("error: missing command (valid: {verbs})");
            return ExitCode::from(2);
        }
        _ => {}
    }
    let rendered = e.render().to_string();
    let first_paragraph = rendered.split("\n\n").next().unwrap_or_default();
    eprintln!(
        "{}",
        first_paragraph
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    );
    ExitCode::from(2)
}

/// Seconds of `--flag` in [0, MAX_SECONDS], or (0, MAX_SECONDS] when `min_exclusive`.
pub fn seconds(flag: &str, text: &str, min_exclusive: bool) -> Result<Duration, BadInput> {
    let bad = || {
        let range = if min_exclusive { "(0" } else { "[0" };
        BadInput(format!(
            "bad value '{text}' for --{flag} (valid: seconds in {range}, {MAX_SECONDS}])"
        ))
    };
    let v: f64 = text.trim().parse().map_err(|_| bad())?;
    let low_ok = if min_exclusive { v > 0.0 } else { v >= 0.0 };
    if !v.is_finite() || !low_ok || v > MAX_SECONDS {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(v))
}

/// Bad input: its one line on stderr, exit 2.
pub fn bad_input(e: &BadInput) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(2)
}

/// A failed run: the reason on stderr, exit 1.
pub fn failed(reason: &str) -> ExitCode {
    eprintln!("error: {reason}");
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_are_listed_in_order() {
        assert_eq!(
            verb_names(&Cli::<Command>::command()),
            "describe, run, check"
        );
    }

    /// A suite that refuses the strategy `refused` once its parameters are resolved.
    struct Refusing;

    impl Suite for Refusing {
        type Strategy = String;
        type Params = Vec<String>;
        const DESCRIBE: fn() -> Json = || Json::Null;
        const STRATEGY: fn(&str) -> Result<String, BadInput> = |name| Ok(name.to_string());
        const SCENARIOS: &'static [Scenario] = &[Scenario {
            name: "only",
            help: "the one scenario",
            params: &[],
        }];
        const PARAMS: Resolve<Vec<String>> = |_, overrides| Ok(overrides.to_vec());

        fn check_params(
            strategy: &String,
            scenario: &Scenario,
            params: &Vec<String>,
        ) -> Result<(), BadInput> {
            match strategy.as_str() {
                "refused" => Err(BadInput(format!(
                    "refused under {} with {params:?}",
                    scenario.name
                ))),
                _ => Ok(()),
            }
        }

        fn run(_plan: Plan<String, Vec<String>>, _on_event: &mut OnEvent) -> ExitCode {
            ExitCode::FAILURE
        }
    }

    fn args(strategy: &str, duration_s: &str) -> RunArgs {
        RunArgs {
            strategy: strategy.to_string(),
            scenario: None,
            params: vec!["n=1".to_string()],
            duration_s: duration_s.to_string(),
            warmup_s: "0".to_string(),
            gate: false,
        }
    }

    #[test]
    fn params_are_checked_before_the_seconds() {
        let refused = plan::<Refusing>(&args("refused", "0")).err().unwrap();
        assert_eq!(refused.0, r#"refused under only with ["n=1"]"#);
        let bad_window = plan::<Refusing>(&args("fine", "0")).err().unwrap();
        assert_eq!(
            bad_window.0,
            "bad value '0' for --duration-s (valid: seconds in (0, 86400])"
        );
        let fine = plan::<Refusing>(&args("fine", "1.5")).ok().unwrap();
        assert_eq!(
            (fine.strategy.as_str(), fine.scenario.name, fine.params),
            ("fine", "only", vec!["n=1".to_string()])
        );
    }

    #[test]
    fn seconds_are_checked() {
        assert_eq!(
            seconds("d", "1.5", true).unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(seconds("w", "0", false).unwrap(), Duration::ZERO);
        assert_eq!(
            seconds("d", "0", true).unwrap_err().0,
            "bad value '0' for --d (valid: seconds in (0, 86400])"
        );
        for bad in ["-1", "nan", "inf", "x", "86401"] {
            assert!(seconds("w", bad, false).is_err(), "{bad}");
        }
    }
}
