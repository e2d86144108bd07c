//! The App. C.5 manifests of `studies/` drawn on the development slice
//! (feature `dev-slice`; data from `EARTHVERSE_DATA`, default
//! `../shared/earthverse-dev/data`): the historically difficult tasks are
//! the lowest mean published Core computed here from the recorded runs'
//! JSON, the rest is drawn over distinct events, the draw is reproducible,
//! and the paired manifest of Tables 4 and 6 is one subset of Table 3's.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use earthverse_package_model::Release;
use earthverse_study::{
    condition_manifests, draw_effort, load_manifest, select_release_tasks, select_tasks,
    TaskHistory,
};
use earthverse_tests::{dev_slice, project_root};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Mean Core per task from the JSON: (answer + rubric) / 2 of an ok run
/// with scores, else 0.
fn mean_core(data: &std::path::Path) -> BTreeMap<String, f64> {
    let mut cores: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let dir = data.join("exploration/trajectories");
    for system in std::fs::read_dir(&dir).unwrap() {
        for file in std::fs::read_dir(system.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let run: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let s = &run["scores"];
            let status = run["diagnostics"]["run_status"].as_str().unwrap_or("");
            let core = match (
                s["answer"].as_f64(),
                s["rubric"].as_f64(),
                s["unit_accuracy"].as_f64(),
            ) {
                (Some(a), Some(p), Some(_)) if status.is_empty() || status == "ok" => (a + p) / 2.0,
                _ => 0.0,
            };
            cores
                .entry(run["task_id"].as_str().unwrap().to_string())
                .or_default()
                .push(core);
        }
    }
    cores
        .into_iter()
        .map(|(t, v)| (t, v.iter().sum::<f64>() / v.len() as f64))
        .collect()
}

#[test]
fn the_effort_and_paired_manifests_draw_as_app_c5_states_on_the_dev_slice() {
    let data = dev_slice();
    let release = Release::load(&data).unwrap();
    let history = TaskHistory::load(&data.join("exploration/trajectories")).unwrap();
    let studies = project_root().join("studies");
    let t3 = load_manifest(&studies.join("table3-answer-mode-effort.toml")).unwrap();
    let effort = t3.tasks.effort.clone().unwrap();
    let draw = draw_effort(&release, &history, &effort).unwrap();
    assert_eq!(draw.tasks.len(), effort.difficult + effort.random);

    // Difficult: the N lowest mean Core, ties by id, computed here.
    let means = mean_core(&data);
    assert_eq!(
        means.len(),
        release.tasks().len(),
        "every slice task has recorded runs"
    );
    let mut ranked: Vec<(f64, &String)> = means.iter().map(|(t, c)| (*c, t)).collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(b.1)));
    let expected: Vec<&String> = ranked
        .iter()
        .take(effort.difficult)
        .map(|(_, t)| *t)
        .collect();
    let got: Vec<&String> = draw.difficult.iter().map(|d| &d.task).collect();
    assert_eq!(got, expected);
    // Every task outside the difficult part has a mean at least as high.
    let worst = draw.difficult.last().unwrap().mean_core;
    for t in &draw.drawn {
        assert!(means[t] >= worst, "{t} is easier than the difficult part");
    }

    // The rest over distinct events: the slice has more events than the
    // draw needs, so every drawn task opens an event new to the manifest.
    let events: BTreeMap<&str, &str> = release
        .tasks()
        .iter()
        .map(|t| (t.task_id.as_str(), t.event_id.as_str()))
        .collect();
    let mut seen: BTreeSet<&str> = got.iter().map(|t| events[t.as_str()]).collect();
    let fresh = events.values().collect::<BTreeSet<_>>().len() - seen.len();
    assert!(
        fresh >= effort.random,
        "{fresh} new events for {} draws",
        effort.random
    );
    for t in &draw.drawn {
        assert!(seen.insert(events[t.as_str()]), "{t} repeats an event");
    }

    // Reproducible; another seed draws other tasks.
    assert_eq!(draw_effort(&release, &history, &effort).unwrap(), draw);
    let mut other = effort.clone();
    other.seed += 1;
    assert_ne!(
        draw_effort(&release, &history, &other).unwrap().drawn,
        draw.drawn
    );

    // Tables 4 and 6: one paired manifest, a subset of Table 3's.
    let mut paired = Vec::new();
    for name in [
        "table4-oracles-presentation.toml",
        "table6-system-ablations.toml",
    ] {
        let m = load_manifest(&studies.join(name)).unwrap();
        let count = m.tasks.paired.as_ref().unwrap().count;
        let d = select_tasks(&release, Some(&history), &m.tasks).unwrap();
        assert_eq!(d.tasks.len(), count);
        assert!(d.tasks.iter().all(|t| draw.tasks.contains(t)), "{name}");
        let distinct: BTreeSet<&str> = d.tasks.iter().map(|t| events[t.as_str()]).collect();
        assert_eq!(distinct.len(), count, "{name}: one task per event");
        paired.push(d.tasks);
    }
    assert_eq!(paired[0], paired[1]);

    // The CI study draws 4 tasks the same way.
    let smoke = load_manifest(&studies.join("dev-smoke.toml")).unwrap();
    let d = select_tasks(&release, Some(&history), &smoke.tasks).unwrap();
    assert_eq!(d.tasks.len(), 4);
    let lowest: Vec<&String> = expected.iter().take(2).copied().collect();
    assert_eq!(
        d.difficult.iter().map(|x| &x.task).collect::<Vec<_>>(),
        lowest
    );
}

/// Table 7's compatible manifests on the slice (App. C.5): the core
/// environments (R climate, Julia, CDO; App. D.6) retain the paired
/// manifest; for every other row each drawn task has a package holding
/// the inputs of one of the environment's operations (scanned here per
/// task), the draw is balanced over the difficulty levels and has the
/// paired manifest's size unless the slice has fewer compatible tasks, and
/// a second draw with the seed gives the same tasks.
#[test]
fn table7_compatible_manifests_on_the_dev_slice() {
    let data = dev_slice();
    let release = Release::load(&data).unwrap();
    let manifest =
        load_manifest(&project_root().join("studies/table7-scientific-environments.toml")).unwrap();
    let paired = select_release_tasks(&release, &data, &manifest.tasks)
        .unwrap()
        .tasks;
    assert_eq!(paired.len(), 20);
    let manifests = condition_manifests(&release, &paired, &manifest.conditions).unwrap();
    assert_eq!(manifests.len(), 13, "every environment row");
    // Each package's series, scanned once here.
    let series = earthverse_environments::coverage::release_series(&release);
    for (name, m) in &manifests {
        let env = earthverse_environments::environment(&m.environment).unwrap();
        let ops =
            |t: &String| earthverse_environments::coverage::compatible_operations(env, &series[t]);
        let compatible = |t: &String| !ops(t).is_empty();
        // The same seed draws the same manifest.
        let c = manifest
            .conditions
            .iter()
            .find(|c| &c.name == name)
            .unwrap();
        let again = earthverse_study::compatible_manifest(
            &release,
            &paired,
            env,
            &earthverse_environments::coverage::compatibility(env, &series),
            c.compatible_manifest.as_ref().unwrap(),
        );
        assert_eq!(&again, m, "{name}: deterministic");
        let paired_ok = paired.iter().filter(|t| compatible(t)).count();
        assert_eq!(m.study_compatible, paired_ok, "{name}");
        assert_eq!(m.retained, !env.is_input_dependent(), "{name}");
        if m.retained {
            assert_eq!(m.tasks, paired, "{name}");
        } else {
            assert!(m.tasks.iter().all(compatible), "{name}: {:?}", m.tasks);
            assert_eq!(m.tasks.len(), 20.min(m.compatible_tasks), "{name}");
        }
        for (a, ca) in &m.levels {
            for (b, cb) in &m.levels {
                if !m.retained && ca.drawn > cb.drawn + 1 {
                    assert_eq!(cb.drawn, cb.compatible, "{name}: {a} vs {b}");
                }
            }
        }
        let levels: Vec<String> = m
            .levels
            .iter()
            .map(|(l, c)| format!("{l} {}/{}", c.drawn, c.compatible))
            .collect();
        eprintln!(
            "{name}: {} tasks ({}; paired compatible {}/20; release compatible {}/{}; {})",
            m.tasks.len(),
            if m.retained { "retained" } else { "drawn" },
            m.study_compatible,
            m.compatible_tasks,
            m.release_tasks,
            levels.join(", ")
        );
    }
}
