//! Run-level failure families (paper §D.2, Figs. 8–10; issue #48): what
//! went wrong with a run as a whole, each with the steps that show it.
//!
//! The unit ledger says why each answer value is wrong; the paper's
//! diagnosis is wider: the largest Core losses come with failures of the
//! research loop itself (premature stopping, failed recovery, tool
//! failure, exhausted budgets), with missing required outputs and with
//! answers that break the task's answer contract. [`diagnose_run`] reads
//! them from a run's steps, its termination, its answer against the
//! [`answer_contract`](crate::answer_contract) and its claims.
//!
//! ## Rules (general; none names a task, system or key)
//! - **budget exhaustion**: the run ended on its turn or time budget
//!   (`round_limit`, `research_time_limit` and their `_fallback` forms;
//!   App. C.2). Evidence: the last step (0 when there was none).
//! - **premature stopping**: the model finalised with budget left
//!   (fewer turns than the budget) and either read none of the reference
//!   analysis' files (when they are known) or left at least half of the
//!   contract's leaves absent, empty or placeholders, or made no tool call.
//!   Evidence: the last step (0, the prompt, when there was none).
//! - **tool failure**: a failed call whose line of work was abandoned: no
//!   later call of the same tool succeeded (a failed read of a guessed
//!   path followed by a good read is a recovered error, not a failure).
//!   Evidence: those steps.
//! - **failed recovery**: the run saw the expected value of a unit and
//!   replaced it by a wrong one (the claim's [`Replaced`](crate::Replaced)
//!   values), or its last call failed and it finalised right after.
//!   Evidence: the replaced value's step, or the failed last step.
//! - **schema error**: the answer breaks its contract other than by
//!   leaving fields out ([`check_contract`]): not a JSON object, code or a
//!   tool call instead of the answer, a field of the wrong type (an array
//!   for an object, an object for a string, no number where a number is
//!   asked), a renamed key, a placeholder left as a value.
//! - **missing output**: a counted unit with no value
//!   ([`ErrorFamily::Missing`]), or a contract field absent or empty.
//! - **numeric error**: a counted numeric unit with a wrong number (unit
//!   families arithmetic, wrong source, window, rounding, unsupported,
//!   other). Evidence: the claims' source steps.
//! - **label error**: a counted unit with [`ErrorFamily::LabelMismatch`]
//!   whose expected value is a canonical identifier (no whitespace) or a
//!   boolean; wrong free text is not carried up as a label error.
//! - **unit error**: a counted unit with [`ErrorFamily::UnitOrScale`].
//!
//! ## Primary family
//! The first family present in [`RunFamily::ALL`]'s order: loop failures
//! first (budget, premature stop, tool failure, failed recovery: the paper
//! finds they cost most), then contract failures (schema, missing), then
//! the unit-level errors (numeric, label, unit). All families found are
//! kept as co-occurring.

use crate::contract::{check_contract, BreachKind};
use crate::model::{Claim, ErrorFamily};
use crate::values::same_file;
use earthverse_answer_units::matching::number_matches;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A run-level failure family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunFamily {
    /// The turn or time budget ran out.
    BudgetExhaustion,
    /// Finalised early: required evidence unread or fields unfilled.
    PrematureStop,
    /// A failed call ended a line of work.
    ToolFailure,
    /// An error or right value seen and not repaired before the answer.
    FailedRecovery,
    /// The answer breaks the task's answer contract.
    SchemaError,
    /// A required output is missing.
    MissingOutput,
    /// A wrong number.
    NumericError,
    /// A wrong label, decision or text.
    LabelError,
    /// A unit or scale slip.
    UnitError,
}

impl RunFamily {
    /// Every family in precedence order (the first present is primary).
    pub const ALL: [RunFamily; 9] = [
        RunFamily::BudgetExhaustion,
        RunFamily::PrematureStop,
        RunFamily::ToolFailure,
        RunFamily::FailedRecovery,
        RunFamily::SchemaError,
        RunFamily::MissingOutput,
        RunFamily::NumericError,
        RunFamily::LabelError,
        RunFamily::UnitError,
    ];

    /// The snake_case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            RunFamily::BudgetExhaustion => "budget_exhaustion",
            RunFamily::PrematureStop => "premature_stop",
            RunFamily::ToolFailure => "tool_failure",
            RunFamily::FailedRecovery => "failed_recovery",
            RunFamily::SchemaError => "schema_error",
            RunFamily::MissingOutput => "missing_output",
            RunFamily::NumericError => "numeric_error",
            RunFamily::LabelError => "label_error",
            RunFamily::UnitError => "unit_error",
        }
    }

    /// Reads a name written by [`RunFamily::as_str`].
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == name)
    }

    /// A failure of the research loop itself (not of the answer's values).
    pub fn is_loop_failure(self) -> bool {
        matches!(
            self,
            RunFamily::BudgetExhaustion
                | RunFamily::PrematureStop
                | RunFamily::ToolFailure
                | RunFamily::FailedRecovery
        )
    }
}

/// How a run ended, as far as the families go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Termination {
    /// The model gave its final answer.
    Final,
    /// The turn or time budget ran out.
    Budget,
    /// Anything else (errors, unknown).
    Other,
}

impl Termination {
    /// Reads a recorded termination reason name (`model_final`,
    /// `round_limit`, `research_time_limit`, `*_fallback`, ...).
    pub fn from_reason(reason: Option<&str>) -> Self {
        match reason {
            Some("model_final" | "completed") => Termination::Final,
            Some(r) if r.starts_with("round_limit") || r.starts_with("research_time_limit") => {
                Termination::Budget
            }
            // The public records without a reason finalised normally.
            None => Termination::Final,
            Some(_) => Termination::Other,
        }
    }
}

/// One tool call, as the families need it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepFact {
    /// Step number (1-based).
    pub step: u64,
    /// Tool name.
    pub tool: String,
    /// The call succeeded.
    pub ok: bool,
    /// Its target (a read's `path`), if any.
    pub target: Option<String>,
    /// Package files the step read (reads and computations).
    pub files: Vec<String>,
}

/// Everything [`diagnose_run`] reads of one run.
#[derive(Debug, Clone, Copy)]
pub struct RunFacts<'a> {
    /// The tool calls in order.
    pub steps: &'a [StepFact],
    /// How the run ended.
    pub termination: Termination,
    /// Model rounds used, when known.
    pub rounds: Option<u64>,
    /// The turn budget (48 in the paper, App. C.2).
    pub turn_budget: u64,
    /// The final answer as submitted.
    pub answer: &'a Value,
    /// The task's answer contract, when known.
    pub contract: Option<&'a Value>,
    /// The run's claims (one reading of its unit ledger).
    pub claims: &'a [Claim],
    /// The reference analysis' files of the task.
    pub reference_files: &'a [String],
}

/// The turn budget of the paper's runs (App. C.2: 48 research turns).
pub const PAPER_TURN_BUDGET: u64 = 48;

/// One family found in a run, with the evidence that triggered it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FamilyHit {
    /// The family.
    pub family: RunFamily,
    /// Steps that show it (empty when the evidence is the answer itself).
    pub steps: Vec<u64>,
    /// Fields or units involved, and what happened.
    pub detail: Vec<String>,
}

/// The run-level diagnosis of one run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunDiagnosis {
    /// The first family present in precedence order; `None` for a run
    /// with no failure found.
    pub primary: Option<RunFamily>,
    /// Every family found, in precedence order.
    pub families: Vec<FamilyHit>,
}

impl RunDiagnosis {
    /// Whether `family` was found.
    pub fn has(&self, family: RunFamily) -> bool {
        self.families.iter().any(|h| h.family == family)
    }
}

/// Diagnoses one run (rules in the module docs).
pub fn diagnose_run(facts: &RunFacts<'_>) -> RunDiagnosis {
    let mut hits: Vec<FamilyHit> = Vec::new();
    let last_step = facts.steps.last().map(|s| s.step);
    let hit = |family, steps: Vec<u64>, detail: Vec<String>| FamilyHit {
        family,
        steps,
        detail,
    };

    if facts.termination == Termination::Budget {
        hits.push(hit(
            RunFamily::BudgetExhaustion,
            vec![last_step.unwrap_or(0)],
            vec![format!("rounds {}", facts.rounds.unwrap_or(0))],
        ));
    }

    let breaches = facts
        .contract
        .map(|c| check_contract(c, facts.answer))
        .unwrap_or_default();
    let leaves = facts.contract.map_or(0, count_leaves);
    let unfilled = breaches
        .iter()
        .filter(|b| matches!(b.problem, BreachKind::Absent | BreachKind::Placeholder))
        .count();

    if facts.termination == Termination::Final && facts.rounds.is_none_or(|r| r < facts.turn_budget)
    {
        let read_reference = facts.reference_files.is_empty()
            || facts.steps.iter().any(|s| {
                s.ok && s
                    .files
                    .iter()
                    .any(|f| facts.reference_files.iter().any(|r| same_file(r, f)))
            });
        let mut why = Vec::new();
        if facts.steps.is_empty() {
            why.push("no tool call".to_owned());
        } else if !read_reference {
            why.push("no reference file read".to_owned());
        }
        if leaves > 0 && 2 * unfilled >= leaves {
            why.push(format!("{unfilled} of {leaves} contract fields unfilled"));
        }
        if !why.is_empty() {
            // A run with no tool call finalised at the prompt (step 0).
            hits.push(hit(
                RunFamily::PrematureStop,
                vec![last_step.unwrap_or(0)],
                why,
            ));
        }
    }

    let abandoned: Vec<u64> = facts
        .steps
        .iter()
        .enumerate()
        .filter(|(i, s)| {
            !s.ok
                && !facts.steps[i + 1..]
                    .iter()
                    .any(|later| later.ok && later.tool == s.tool)
        })
        .map(|(_, s)| s.step)
        .collect();
    if !abandoned.is_empty() {
        hits.push(hit(RunFamily::ToolFailure, abandoned, Vec::new()));
    }

    let mut recovery_steps = Vec::new();
    let mut recovery_detail = Vec::new();
    for c in facts.claims.iter().filter(|c| c.counted && !c.satisfied) {
        let Some(expected) = c.expected.as_f64() else {
            continue;
        };
        if let Some(r) = c
            .replaced
            .iter()
            .find(|r| number_matches(expected, r.value, 0.0))
        {
            recovery_steps.push(r.step);
            recovery_detail.push(format!("{}: right value {} replaced", c.unit, r.value));
        }
    }
    if let Some(last) = facts.steps.last().filter(|s| !s.ok) {
        if facts.termination == Termination::Final {
            recovery_steps.push(last.step);
            recovery_detail.push("last call failed, then finalised".to_owned());
        }
    }
    if !recovery_steps.is_empty() {
        recovery_steps.sort_unstable();
        recovery_steps.dedup();
        hits.push(hit(
            RunFamily::FailedRecovery,
            recovery_steps,
            recovery_detail,
        ));
    }

    let schema: Vec<String> = breaches
        .iter()
        .filter(|b| !matches!(b.problem, BreachKind::Absent))
        .map(|b| format!("{}: {:?}", b.path, b.problem))
        .collect();
    if !schema.is_empty() {
        hits.push(hit(RunFamily::SchemaError, Vec::new(), schema));
    }

    let mut missing: Vec<String> = breaches
        .iter()
        .filter(|b| b.problem == BreachKind::Absent)
        .map(|b| b.path.clone())
        .collect();
    missing.extend(
        facts
            .claims
            .iter()
            .filter(|c| c.error_family == Some(ErrorFamily::Missing))
            .map(|c| c.unit.clone()),
    );
    if !missing.is_empty() {
        missing.dedup();
        hits.push(hit(RunFamily::MissingOutput, Vec::new(), missing));
    }

    for (family, wanted) in [
        (
            RunFamily::NumericError,
            numeric_unit_family as fn(&Claim) -> bool,
        ),
        (RunFamily::LabelError, label_unit_family),
        (RunFamily::UnitError, |c: &Claim| {
            c.error_family == Some(ErrorFamily::UnitOrScale)
        }),
    ] {
        let claims: Vec<&Claim> = facts.claims.iter().filter(|c| wanted(c)).collect();
        if !claims.is_empty() {
            let mut steps: Vec<u64> = claims
                .iter()
                .filter_map(|c| c.source.as_ref().map(|s| s.step))
                .collect();
            steps.sort_unstable();
            steps.dedup();
            hits.push(hit(
                family,
                steps,
                claims.iter().map(|c| c.unit.clone()).collect(),
            ));
        }
    }

    hits.sort_by_key(|h| h.family);
    RunDiagnosis {
        primary: hits.first().map(|h| h.family),
        families: hits,
    }
}

/// A counted numeric unit given a wrong number.
fn numeric_unit_family(c: &Claim) -> bool {
    c.expected.is_number()
        && matches!(
            c.error_family,
            Some(
                ErrorFamily::Arithmetic
                    | ErrorFamily::WrongSource
                    | ErrorFamily::WindowOrSubset
                    | ErrorFamily::RoundingOrPrecision
                    | ErrorFamily::Unsupported
                    | ErrorFamily::Other
            )
        )
}

/// A counted label unit with a wrong label: the expected value is a
/// canonical identifier (no whitespace) or a boolean decision. Free text
/// (a sentence the matcher reads by presence) is not carried up.
fn label_unit_family(c: &Claim) -> bool {
    c.error_family == Some(ErrorFamily::LabelMismatch)
        && match &c.expected {
            Value::Bool(_) => true,
            Value::String(s) => !s.trim().contains(char::is_whitespace),
            _ => false,
        }
}

fn count_leaves(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.values().map(count_leaves).sum(),
        Value::Array(a) => a.first().map_or(1, |f| count_leaves(f).max(1)),
        _ => 1,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::{ClaimStatus, Replaced};
    use serde_json::json;

    fn step(step: u64, tool: &str, ok: bool, file: &str) -> StepFact {
        StepFact {
            step,
            tool: tool.into(),
            ok,
            target: (!file.is_empty()).then(|| file.to_owned()),
            files: if file.is_empty() {
                Vec::new()
            } else {
                vec![file.to_owned()]
            },
        }
    }

    fn claim(unit: &str, expected: Value, value: Value, family: Option<ErrorFamily>) -> Claim {
        Claim {
            unit: unit.into(),
            value: Some(value),
            expected,
            status: ClaimStatus::Computed,
            satisfied: family.is_none(),
            counted: true,
            strength: None,
            source: None,
            error_family: family,
            replaced: Vec::new(),
        }
    }

    fn diagnose(
        steps: &[StepFact],
        termination: Termination,
        answer: &Value,
        claims: &[Claim],
    ) -> RunDiagnosis {
        let contract = json!({"peak_c": "<number>", "label": "<label>"});
        let reference = vec!["data/a.json".to_owned()];
        diagnose_run(&RunFacts {
            steps,
            termination,
            rounds: Some(steps.len() as u64 + 1),
            turn_budget: PAPER_TURN_BUDGET,
            answer,
            contract: Some(&contract),
            claims,
            reference_files: &reference,
        })
    }

    #[test]
    fn a_clean_run_has_no_family() {
        let steps = [step(1, "read_text_file", true, "data/a.json")];
        let answer = json!({"peak_c": 41.4, "label": "hot"});
        let d = diagnose(&steps, Termination::Final, &answer, &[]);
        assert_eq!(d, RunDiagnosis::default());
    }

    #[test]
    fn loop_failures_come_first_with_their_steps() {
        // Failed read of a guessed path, recovered by a good read: no failure.
        let recovered = [
            step(1, "read_text_file", false, "data/guess.json"),
            step(2, "read_text_file", true, "data/a.json"),
        ];
        let answer = json!({"peak_c": 41.4, "label": "hot"});
        let d = diagnose(&recovered, Termination::Final, &answer, &[]);
        assert!(!d.has(RunFamily::ToolFailure), "{d:?}");

        // Python failed and was never run again, then a wrong number.
        let abandoned = [
            step(1, "read_text_file", true, "data/a.json"),
            step(2, "python_exec", false, ""),
            step(3, "read_text_file", true, "data/a.json"),
        ];
        let wrong = [claim(
            "peak_c",
            json!(41.4),
            json!(38.0),
            Some(ErrorFamily::Arithmetic),
        )];
        let answer = json!({"peak_c": 38.0, "label": "hot"});
        let d = diagnose(&abandoned, Termination::Final, &answer, &wrong);
        assert_eq!(d.primary, Some(RunFamily::ToolFailure));
        assert_eq!(d.families[0].steps, vec![2]);
        assert!(d.has(RunFamily::NumericError));

        // The budget ran out: primary whatever else happened.
        let d = diagnose(&abandoned, Termination::Budget, &answer, &wrong);
        assert_eq!(d.primary, Some(RunFamily::BudgetExhaustion));
        assert_eq!(d.families[0].steps, vec![3]);
    }

    #[test]
    fn premature_stop_and_failed_recovery() {
        // Finalised without reading the reference file, fields unfilled.
        let steps = [step(1, "list_package_files", true, "")];
        let answer = json!({"peak_c": "<number>"});
        let d = diagnose(&steps, Termination::Final, &answer, &[]);
        assert_eq!(d.primary, Some(RunFamily::PrematureStop));
        assert!(d.has(RunFamily::SchemaError) && d.has(RunFamily::MissingOutput));

        // The right value was printed at step 2 and replaced.
        let mut c = claim(
            "peak_c",
            json!(41.4),
            json!(38.0),
            Some(ErrorFamily::Arithmetic),
        );
        c.replaced = vec![Replaced {
            step: 2,
            value: 41.4,
        }];
        let steps = [
            step(1, "read_text_file", true, "data/a.json"),
            step(2, "python_exec", true, "data/a.json"),
        ];
        let answer = json!({"peak_c": 38.0, "label": "hot"});
        let d = diagnose(&steps, Termination::Final, &answer, &[c]);
        assert_eq!(d.primary, Some(RunFamily::FailedRecovery));
        assert_eq!(d.families[0].steps, vec![2]);
    }

    #[test]
    fn labels_are_identifiers_not_sentences() {
        let steps = [step(1, "read_text_file", true, "data/a.json")];
        let answer = json!({"peak_c": 41.4, "label": "x"});
        let sentence = claim(
            "why",
            json!("heat drove the losses"),
            json!("x"),
            Some(ErrorFamily::LabelMismatch),
        );
        let d = diagnose(&steps, Termination::Final, &answer, &[sentence]);
        assert!(!d.has(RunFamily::LabelError));
        let canonical = claim(
            "label",
            json!("compound_heat_drought"),
            json!("x"),
            Some(ErrorFamily::LabelMismatch),
        );
        let d = diagnose(&steps, Termination::Final, &answer, &[canonical]);
        assert_eq!(d.primary, Some(RunFamily::LabelError));
    }
}
