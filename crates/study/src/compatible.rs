//! The compatible manifests of the professional-environment study (App.
//! C.5: "Core libraries retain the paired manifest; input-dependent
//! environments draw a difficulty-balanced compatible manifest with seed
//! 2026"; Table 7, Table 14).
//!
//! A task is compatible with an environment when its package holds the
//! inputs of at least one of the environment's audited operations, each
//! with at least the record length the method needs
//! (`earthverse_environments::coverage::package_compatible`). Which
//! environments are "core" the paper says in App. D.6 (R climate, Julia and
//! CDO "accept the available time series or grids directly"; the others
//! "require variables, record lengths, or sampling structures"):
//! `Environment::is_input_dependent`. A core environment retains the
//! study's manifest; an input-dependent one draws [`draw_balanced`] from
//! the compatible tasks of the whole release, as many as the study's
//! manifest has unless the condition says otherwise. A release with no
//! compatible task gives an empty manifest: the condition is not run and
//! the report says so.

use crate::error::{Error, Result};
use crate::manifest::CompatibleDraw;
use earthverse_package_model::Release;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Tasks of one difficulty level: compatible in the release, and drawn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelCount {
    /// Compatible tasks of the level in the release.
    pub compatible: usize,
    /// Of those, tasks in the manifest.
    pub drawn: usize,
}

/// The tasks a required-environment condition runs (recorded in the study
/// file under the condition's `compatible_manifest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompatibleManifest {
    /// The environment (command-line spelling, e.g. `pyextremes`).
    pub environment: String,
    /// A core environment (App. C.5, D.6): the study's manifest is
    /// retained.
    pub retained: bool,
    /// The tasks, sorted.
    pub tasks: Vec<String>,
    /// The drawn tasks in draw order (empty when retained).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drawn: Vec<String>,
    /// Tasks of the study's manifest that are compatible.
    pub study_compatible: usize,
    /// Compatible tasks in the release.
    pub compatible_tasks: usize,
    /// Tasks in the release.
    pub release_tasks: usize,
    /// Per difficulty level (`L2`…`L5`, `unlabelled`): compatible and drawn.
    pub levels: BTreeMap<String, LevelCount>,
    /// Tasks asked for.
    pub count: usize,
    /// Seed of the draw.
    pub seed: u64,
}

impl CompatibleManifest {
    /// Tasks asked for that the release could not supply (fewer compatible
    /// tasks than `count`).
    pub fn shortfall(&self) -> usize {
        self.count.saturating_sub(self.tasks.len())
    }
}

/// The difficulty level of each task (`L2`…`L5`, else `unlabelled`).
fn level_of(release: &Release) -> BTreeMap<&str, String> {
    release
        .tasks()
        .iter()
        .map(|t| {
            let level = t
                .difficulty_level()
                .map_or_else(|| "unlabelled".to_string(), |l| l.as_str().to_string());
            (t.task_id.as_str(), level)
        })
        .collect()
}

/// A difficulty-balanced draw of `count` tasks of `pool` (task ids of
/// `release`), in draw order, with the per-level counts.
///
/// The pool is split by difficulty level (levels in order, `unlabelled`
/// last); each level's ids are sorted and shuffled by one ChaCha20 seeded
/// with `seed` (`seed_from_u64`, levels in order), then ordered so that the
/// first task of each event comes before the event's other tasks
/// (preferring distinct events, as the other App. C.5 draws). Tasks are
/// then taken one level at a time in turn until `count` are taken or the
/// pool is spent: levels that still have tasks differ by at most one, and
/// a level that has fewer than its share gives all it has. Ids not in the
/// release are ignored.
pub fn draw_balanced(
    release: &Release,
    pool: &BTreeSet<String>,
    count: usize,
    seed: u64,
) -> (Vec<String>, BTreeMap<String, LevelCount>) {
    let levels = level_of(release);
    let event_of: BTreeMap<&str, &str> = release
        .tasks()
        .iter()
        .map(|t| (t.task_id.as_str(), t.event_id.as_str()))
        .collect();
    let mut by_level: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for id in pool {
        if let Some(level) = levels.get(id.as_str()) {
            by_level.entry(level.clone()).or_default().push(id.as_str());
        }
    }
    // `unlabelled` sorts after `L…` (ASCII), so it is the last level.
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut queues: Vec<(String, std::collections::VecDeque<&str>)> = Vec::new();
    let mut counts: BTreeMap<String, LevelCount> = BTreeMap::new();
    for (level, mut ids) in by_level {
        ids.sort_unstable();
        ids.shuffle(&mut rng);
        let mut seen = BTreeSet::new();
        let (first, repeats): (Vec<&str>, Vec<&str>) = ids
            .iter()
            .partition(|id| seen.insert(event_of.get(*id).copied().unwrap_or(id)));
        counts.insert(
            level.clone(),
            LevelCount {
                compatible: ids.len(),
                drawn: 0,
            },
        );
        queues.push((level, first.into_iter().chain(repeats).collect()));
    }
    let mut drawn = Vec::with_capacity(count);
    while drawn.len() < count {
        let mut progressed = false;
        for (level, queue) in &mut queues {
            if drawn.len() == count {
                break;
            }
            if let Some(id) = queue.pop_front() {
                drawn.push(id.to_string());
                if let Some(c) = counts.get_mut(level) {
                    c.drawn += 1;
                }
                progressed = true;
            }
        }
        if !progressed {
            break;
        }
    }
    (drawn, counts)
}

/// The manifest a condition requiring `environment` runs: the study's
/// `tasks` for a core environment, else [`draw_balanced`] over the
/// release's compatible tasks (`compatibility`: task id → compatible, as
/// `earthverse_environments::coverage::compatibility` gives it); empty
/// when no task of the release is compatible.
pub fn compatible_manifest(
    release: &Release,
    study_tasks: &[String],
    environment: &earthverse_environments::Environment,
    compatibility: &BTreeMap<String, bool>,
    draw: &CompatibleDraw,
) -> CompatibleManifest {
    let compatible: BTreeSet<String> = compatibility
        .iter()
        .filter(|(_, ok)| **ok)
        .map(|(t, _)| t.clone())
        .collect();
    let count = draw.count.unwrap_or(study_tasks.len());
    let study_compatible = study_tasks
        .iter()
        .filter(|t| compatible.contains(*t))
        .count();
    let retained = !environment.is_input_dependent();
    let (tasks, drawn, levels) = if retained {
        let levels_of = level_of(release);
        let mut levels: BTreeMap<String, LevelCount> = BTreeMap::new();
        for t in &compatible {
            if let Some(l) = levels_of.get(t.as_str()) {
                levels.entry(l.clone()).or_default().compatible += 1;
            }
        }
        for t in study_tasks {
            if let Some(l) = levels_of.get(t.as_str()) {
                levels.entry(l.clone()).or_default().drawn += 1;
            }
        }
        (study_tasks.to_vec(), Vec::new(), levels)
    } else {
        let (drawn, levels) = draw_balanced(release, &compatible, count, draw.seed);
        let mut tasks = drawn.clone();
        tasks.sort();
        (tasks, drawn, levels)
    };
    CompatibleManifest {
        environment: environment.slug.to_string(),
        retained,
        tasks,
        drawn,
        study_compatible,
        compatible_tasks: compatible.len(),
        release_tasks: release.tasks().len(),
        levels,
        count,
        seed: draw.seed,
    }
}

/// The compatible manifest of every condition of `conditions` that asks
/// for one (by condition name); the release's packages are scanned once.
///
/// # Errors
/// [`Error::Selection`] for an unknown environment.
pub fn condition_manifests(
    release: &Release,
    study_tasks: &[String],
    conditions: &[crate::manifest::StudyCondition],
) -> Result<BTreeMap<String, CompatibleManifest>> {
    let mut series = None;
    let mut out = BTreeMap::new();
    for c in conditions {
        let (Some(draw), Some(name)) = (&c.compatible_manifest, &c.condition.required_environment)
        else {
            continue;
        };
        let env = earthverse_environments::environment(name).ok_or_else(|| Error::Selection {
            message: format!(
                "condition `{}`: compatible_manifest: unknown environment `{name}`",
                c.name
            ),
        })?;
        let series = series
            .get_or_insert_with(|| earthverse_environments::coverage::release_series(release));
        let compatibility = earthverse_environments::coverage::compatibility(env, series);
        out.insert(
            c.name.clone(),
            compatible_manifest(release, study_tasks, env, &compatibility, draw),
        );
    }
    Ok(out)
}
