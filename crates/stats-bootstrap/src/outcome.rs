//! One system's result on one task: the input of every table in this crate.

use crate::{Error, Result};
use serde::{Deserialize, Serialize};

/// Trajectory figures of one run (Table 2's right half, App. D.3): the one
/// type of the score records and the run diagnostics (`earthverse-run-schema`).
/// They are reported beside the scores and never enter them (§4.1).
pub use earthverse_run_schema::TrajectoryFigures;

/// Threshold of Strict@95 (paper §4.1): a task counts when `U ≥ 95`.
pub const STRICT_THRESHOLD: f64 = 95.0;

/// One system's scored result on one task (paper §4.1).
///
/// Scores are percentages in 0–100. `answer` is the answer correctness
/// `A = min(H, U)`; build from a holistic judgment with
/// [`TaskOutcome::from_judgment`] so the minimum is taken here. A solver
/// failure is an outcome with every score 0 ([`TaskOutcome::failure`]): it
/// stays in the denominator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskOutcome {
    /// System (model + harness) id.
    pub system: String,
    /// Task id, e.g. `CSX-001_Q1`.
    pub task: String,
    /// Answer correctness `A = min(H, U)`.
    pub answer: f64,
    /// Process-rubric score `P` (points of 20, as a percentage).
    pub process: f64,
    /// Unit accuracy `U`: share of answer units satisfied.
    pub unit_accuracy: f64,
    /// Strict@95 flag; `None` means "compute from `unit_accuracy`".
    pub strict95: Option<bool>,
    /// Capability tags (Table 8's columns; they overlap).
    pub capabilities: Vec<String>,
    /// Difficulty level (`L2`…`L5`).
    pub difficulty: Option<String>,
    /// Hazard family, e.g. `heat_wave_urban_heat`.
    pub hazard_family: Option<String>,
    /// Whether the solver failed (crash, timeout, malformed answer).
    pub failed: bool,
    /// Trajectory figures.
    pub trajectory: TrajectoryFigures,
}

impl TaskOutcome {
    /// An outcome from the judge's holistic answer grade `H`, unit accuracy
    /// `U` and process score `P`; stores `A = min(H, U)` (§4.1, Eq. 2).
    ///
    /// # Errors
    /// [`Error::ScoreOutOfRange`] when a score is not in 0–100.
    pub fn from_judgment(
        system: impl Into<String>,
        task: impl Into<String>,
        holistic: f64,
        unit_accuracy: f64,
        process: f64,
    ) -> Result<Self> {
        let system = system.into();
        let task = task.into();
        for (field, value) in [
            ("holistic", holistic),
            ("unit_accuracy", unit_accuracy),
            ("process", process),
        ] {
            check_score(&system, &task, field, value)?;
        }
        Ok(Self {
            answer: holistic.min(unit_accuracy),
            process,
            unit_accuracy,
            ..Self::empty(system, task)
        })
    }

    /// An outcome from stored scores where `answer` is already `A`.
    ///
    /// # Errors
    /// [`Error::ScoreOutOfRange`] when a score is not in 0–100.
    pub fn from_scores(
        system: impl Into<String>,
        task: impl Into<String>,
        answer: f64,
        process: f64,
        unit_accuracy: f64,
    ) -> Result<Self> {
        let outcome = Self {
            answer,
            process,
            unit_accuracy,
            ..Self::empty(system.into(), task.into())
        };
        outcome.validate()?;
        Ok(outcome)
    }

    /// A solver failure: every score 0, kept in the denominator (§4.1).
    pub fn failure(system: impl Into<String>, task: impl Into<String>) -> Self {
        Self {
            failed: true,
            ..Self::empty(system.into(), task.into())
        }
    }

    fn empty(system: String, task: String) -> Self {
        Self {
            system,
            task,
            answer: 0.0,
            process: 0.0,
            unit_accuracy: 0.0,
            strict95: None,
            capabilities: Vec::new(),
            difficulty: None,
            hazard_family: None,
            failed: false,
            trajectory: TrajectoryFigures::default(),
        }
    }

    /// Checks every score is finite and in 0–100.
    ///
    /// # Errors
    /// [`Error::ScoreOutOfRange`] naming the field.
    pub fn validate(&self) -> Result<()> {
        check_score(&self.system, &self.task, "answer", self.answer)?;
        check_score(&self.system, &self.task, "process", self.process)?;
        check_score(
            &self.system,
            &self.task,
            "unit_accuracy",
            self.unit_accuracy,
        )
    }

    /// Combined Core of this task: `(A + P) / 2` (§4.1, Eq. 2); 0 for a failure.
    pub fn core(&self) -> f64 {
        if self.failed {
            0.0
        } else {
            (self.answer + self.process) / 2.0
        }
    }

    /// Strict@95: the stored flag, or `U ≥ 95` (§4.1); false for a failure.
    pub fn is_strict95(&self) -> bool {
        !self.failed
            && self
                .strict95
                .unwrap_or(self.unit_accuracy >= STRICT_THRESHOLD)
    }

    /// The value of `metric` for this task (0 for a failure).
    pub fn metric(&self, metric: Metric) -> f64 {
        if self.failed {
            return 0.0;
        }
        match metric {
            Metric::Answer => self.answer,
            Metric::Process => self.process,
            Metric::Core => self.core(),
            Metric::UnitAccuracy => self.unit_accuracy,
            Metric::Strict95 => {
                if self.is_strict95() {
                    100.0
                } else {
                    0.0
                }
            }
        }
    }
}

fn check_score(system: &str, task: &str, field: &'static str, value: f64) -> Result<()> {
    if value.is_finite() && (0.0..=100.0).contains(&value) {
        Ok(())
    } else {
        Err(Error::ScoreOutOfRange {
            system: system.to_owned(),
            task: task.to_owned(),
            field,
            value,
        })
    }
}

/// A per-task quality metric, each on 0–100.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Metric {
    /// `A = min(H, U)`.
    Answer,
    /// Process rubric `P`.
    Process,
    /// `(A + P) / 2`.
    Core,
    /// Unit accuracy `U`.
    UnitAccuracy,
    /// 100 when `U ≥ 95`, else 0 (its mean is the Strict@95 percentage).
    Strict95,
}
