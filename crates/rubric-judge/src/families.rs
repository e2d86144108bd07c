//! Run-level failure families of recorded runs (issue #48) and their
//! agreement with the published judge's typed critical errors.
//!
//! [`run_diagnosis`] adapts a [`RunContext`] to
//! `earthverse_evidence_ledger::diagnose_run`: each tool step becomes a
//! [`StepFact`] (its target is a read's `path`; its files those of the
//! ledger's observation), the termination reason and rounds come from the
//! run's diagnostics, and the answer contract from the task's question
//! (else its expert solution). [`kind_agreement`] compares, per
//! [`ErrorKind`], the runs where the published judge names the kind with
//! the runs where our diagnosis does: Cohen's κ, raw agreement, recall
//! and precision with bootstrap intervals (stats-bootstrap).

use crate::evidence::observations;
use crate::input::{RunContext, TaskContext};
use earthverse_evidence_ledger::{
    answer_contract, diagnose_run, Claim, ErrorKind, RunDiagnosis, RunFacts, StepFact, Termination,
    PAPER_TURN_BUDGET,
};
use earthverse_stats_bootstrap::{binary_agreement, BinaryAgreement, BootstrapConfig};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;

/// The answer contract of a task (its question's JSON template, else the
/// expert solution's Final Answer object).
pub fn task_contract(task: &TaskContext) -> Option<Value> {
    answer_contract(&task.question, &task.solution)
}

/// The run's tool steps as the families read them.
pub fn step_facts(run: &RunContext) -> Vec<StepFact> {
    let obs = observations(&run.tool_trace);
    run.tool_trace
        .iter()
        .zip(obs)
        .map(|(s, o)| StepFact {
            step: s.step,
            tool: s.tool.trim().to_owned(),
            ok: s.ok,
            target: s
                .args
                .get("path")
                .and_then(Value::as_str)
                .map(str::to_owned),
            files: o.files,
        })
        .collect()
}

/// The run-level diagnosis of one run, from its claims (one reading of
/// its unit ledger), the task's contract and reference files.
pub fn run_diagnosis(
    run: &RunContext,
    contract: Option<&Value>,
    claims: &[Claim],
    reference_files: &[String],
) -> RunDiagnosis {
    let steps = step_facts(run);
    let reason = run
        .figures
        .termination_reason
        .as_ref()
        .map(|r| r.as_str().to_owned());
    diagnose_run(&RunFacts {
        steps: &steps,
        termination: Termination::from_reason(reason.as_deref()),
        rounds: run.figures.model_rounds,
        turn_budget: PAPER_TURN_BUDGET,
        answer: &run.final_answer,
        contract,
        claims,
        reference_files,
    })
}

/// One row of the agreement table: one kind over the runs compared.
#[derive(Debug, Clone, Serialize)]
pub struct KindAgreement {
    /// The kind.
    pub kind: ErrorKind,
    /// Runs compared.
    pub runs: usize,
    /// Runs where the published judge names the kind.
    pub judge_runs: usize,
    /// Runs where our diagnosis names it.
    pub our_runs: usize,
    /// κ, raw agreement, recall (share of the judge's runs we name too)
    /// and precision; `None` when our diagnosis has no family for the
    /// kind (reasoning).
    pub agreement: Option<BinaryAgreement>,
}

/// Per kind, agreement of our diagnosed kinds with the judge's over the
/// same runs (`(judge, ours)` per run).
///
/// # Errors
/// The statistics' error for no runs or a bad configuration.
pub fn kind_agreement(
    runs: &[(BTreeSet<ErrorKind>, BTreeSet<ErrorKind>)],
    config: &BootstrapConfig,
) -> earthverse_stats_bootstrap::Result<Vec<KindAgreement>> {
    ErrorKind::ALL
        .into_iter()
        .map(|kind| {
            let judge: Vec<bool> = runs.iter().map(|(j, _)| j.contains(&kind)).collect();
            let ours: Vec<bool> = runs.iter().map(|(_, o)| o.contains(&kind)).collect();
            let agreement = match kind.family() {
                Some(_) => Some(binary_agreement(&ours, &judge, config)?),
                None => None,
            };
            Ok(KindAgreement {
                kind,
                runs: runs.len(),
                judge_runs: judge.iter().filter(|&&x| x).count(),
                our_runs: ours.iter().filter(|&&x| x).count(),
                agreement,
            })
        })
        .collect()
}

/// The system families of the paper's Table 2 (§4, Table 2's group rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SystemFamily {
    /// Hosted general-purpose systems.
    Hosted,
    /// Open-weight and Earth-specialized models.
    OpenWeight,
    /// Agent frameworks with their own controllers.
    AgentFramework,
    /// A system Table 2 does not list.
    Other,
}

impl SystemFamily {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            SystemFamily::Hosted => "hosted",
            SystemFamily::OpenWeight => "open_weight",
            SystemFamily::AgentFramework => "agent_framework",
            SystemFamily::Other => "other",
        }
    }

    /// The family of a release system id, by Table 2's groups.
    pub fn of(system: &str) -> Self {
        const OPEN: &[&str] = &[
            "intern-s1-mini",
            "nemotron-nano-9b-v2",
            "mirothinker-8b",
            "geogpt-sft-4b",
            "qwen3-4b",
            "geohazardgpt-8b",
            "qwen3-235b",
        ];
        const FRAMEWORKS: &[&str] = &["openresearcher", "geommagent"];
        const HOSTED: &[&str] = &[
            "gpt-5-6-luna",
            "gpt-4o",
            "minimax-m2-7",
            "gemini-3-1-flash-lite",
            "doubao-seed-2-0-mini",
            "qwen-3-7-plus",
            "claude-haiku-4-5",
            "tencent-hy3",
            "deepseek-v4-flash",
            "kimi-k2-5",
            "claude-sonnet-4-6",
            "gpt-5-5",
            "glm-5-2",
            "gpt-5-6-terra",
            "gpt-5-6-sol",
            "claude-fable-5",
        ];
        if OPEN.contains(&system) {
            SystemFamily::OpenWeight
        } else if FRAMEWORKS.contains(&system) {
            SystemFamily::AgentFramework
        } else if HOSTED.contains(&system) {
            SystemFamily::Hosted
        } else {
            SystemFamily::Other
        }
    }
}

/// The Core band of Fig. 9: below 40, 40–70, 70 and above.
pub fn core_band(core: f64) -> &'static str {
    if core < 40.0 {
        "<40"
    } else if core < 70.0 {
        "40-70"
    } else {
        ">=70"
    }
}

/// The published Core of a recorded run ((A + P)/2 with A = min(H, U)),
/// 0 for a failed run or one without published scores.
pub fn published_core(run: &RunContext) -> f64 {
    let s = run.published_scores.as_ref();
    match (
        run.run_status,
        s.and_then(|s| s.answer),
        s.and_then(|s| s.rubric),
        s.and_then(|s| s.unit_accuracy),
    ) {
        (earthverse_package_model::RunStatus::Ok, Some(a), Some(p), Some(u)) => {
            earthverse_stats_bootstrap::TaskOutcome::from_scores(&run.system, &run.task_id, a, p, u)
                .map_or(0.0, |o| o.core())
        }
        _ => 0.0,
    }
}

/// One run's diagnosis with what the tables need.
#[derive(Debug, Clone, Serialize)]
pub struct FamilyRun {
    /// System id.
    pub system: String,
    /// Task id.
    pub task_id: String,
    /// The system's Table 2 family.
    pub system_family: SystemFamily,
    /// Published Core of the run.
    pub core: f64,
    /// Our diagnosis.
    pub diagnosis: RunDiagnosis,
    /// Kinds the published judge names.
    pub judge_kinds: BTreeSet<ErrorKind>,
    /// Kinds our diagnosis names.
    pub our_kinds: BTreeSet<ErrorKind>,
}

/// The family record of one run from its claims (the judge-like reading
/// of its unit ledger) and its task's reference files.
pub fn family_run(
    task: &TaskContext,
    run: &RunContext,
    claims: &[Claim],
    reference_files: &[String],
) -> FamilyRun {
    let contract = task_contract(task);
    let diagnosis = run_diagnosis(run, contract.as_ref(), claims, reference_files);
    FamilyRun {
        system: run.system.clone(),
        task_id: run.task_id.clone(),
        system_family: SystemFamily::of(&run.system),
        core: published_core(run),
        our_kinds: earthverse_evidence_ledger::diagnosed_kinds(&diagnosis),
        judge_kinds: earthverse_evidence_ledger::judge_kinds(&run.published_critical_errors),
        diagnosis,
    }
}

/// The event of a task id (`CSX-001_Q1` → `CSX-001`).
pub fn event_of(task_id: &str) -> &str {
    task_id.split_once('_').map_or(task_id, |(e, _)| e)
}

/// Within-system Core difference of runs with a family (Fig. 10): for
/// each run with it, its Core minus the mean Core of the same system's
/// runs without it; the mean of these, with a bootstrap interval over the
/// runs with the family. Systems with no run without it are left out.
#[derive(Debug, Clone, Serialize)]
pub struct FamilyEffect {
    /// The family.
    pub family: earthverse_evidence_ledger::RunFamily,
    /// Runs with the family (of systems that also have runs without).
    pub runs_with: usize,
    /// Mean within-system Core difference, points.
    pub delta: earthverse_stats_bootstrap::Estimate,
}

/// Fig. 10's effects of every family.
///
/// # Errors
/// The statistics' error for a bad configuration.
pub fn family_effects(
    runs: &[FamilyRun],
    config: &BootstrapConfig,
) -> earthverse_stats_bootstrap::Result<Vec<FamilyEffect>> {
    use earthverse_evidence_ledger::RunFamily;
    use earthverse_stats_bootstrap::{percentile, Estimate, ResampleMatrix};
    let mut out = Vec::new();
    for family in RunFamily::ALL {
        let mut without: std::collections::BTreeMap<&str, (f64, usize)> = Default::default();
        for r in runs.iter().filter(|r| !r.diagnosis.has(family)) {
            let e = without.entry(r.system.as_str()).or_default();
            e.0 += r.core;
            e.1 += 1;
        }
        let deltas: Vec<f64> = runs
            .iter()
            .filter(|r| r.diagnosis.has(family))
            .filter_map(|r| {
                without
                    .get(r.system.as_str())
                    .map(|(sum, n)| r.core - sum / *n as f64)
            })
            .collect();
        let delta = if deltas.is_empty() {
            Estimate {
                value: None,
                ci_low: None,
                ci_high: None,
            }
        } else {
            let mean = deltas.iter().sum::<f64>() / deltas.len() as f64;
            let matrix = ResampleMatrix::draw(deltas.len(), config.resamples, config.seed)?;
            let mut means = matrix.resampled_means(&deltas)?;
            let tail = (1.0 - config.confidence) / 2.0;
            let lo = percentile(&mut means, tail);
            let hi = percentile(&mut means, 1.0 - tail);
            Estimate {
                value: Some(mean),
                ci_low: Some(lo),
                ci_high: Some(hi),
            }
        };
        out.push(FamilyEffect {
            family,
            runs_with: deltas.len(),
            delta,
        });
    }
    Ok(out)
}

/// Pairs of families found together, with runs and lift
/// (P(both) / (P(a)·P(b))), strongest lift first among pairs seen in at
/// least `min_runs` runs.
pub fn co_occurrences(
    runs: &[FamilyRun],
    min_runs: usize,
) -> Vec<(
    earthverse_evidence_ledger::RunFamily,
    earthverse_evidence_ledger::RunFamily,
    usize,
    f64,
)> {
    use earthverse_evidence_ledger::RunFamily;
    let n = runs.len() as f64;
    let count = |f: &dyn Fn(&FamilyRun) -> bool| runs.iter().filter(|r| f(r)).count();
    let mut out = Vec::new();
    for (i, a) in RunFamily::ALL.into_iter().enumerate() {
        for b in RunFamily::ALL.into_iter().skip(i + 1) {
            let both = count(&|r| r.diagnosis.has(a) && r.diagnosis.has(b));
            let na = count(&|r| r.diagnosis.has(a));
            let nb = count(&|r| r.diagnosis.has(b));
            if both >= min_runs && na > 0 && nb > 0 {
                let lift = (both as f64 / n) / ((na as f64 / n) * (nb as f64 / n));
                out.push((a, b, both, lift));
            }
        }
    }
    out.sort_by(|x, y| y.3.total_cmp(&x.3));
    out
}
