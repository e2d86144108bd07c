//! Agreement of the deterministic unit scorer with the published judge on a
//! release's recorded runs, split into the tuning and held-out event halves.
//!
//! `cargo run -p earthverse-answer-units --example agreement -- <release-root> [rows.tsv]`
//!
//! `RULES="label_polarity=false,short_answer_max_tokens=0"` switches rule
//! constants off or changes them (names as in `Rules`), for the variant
//! log; `SHOW_HELD=1` also prints the held-out half; `NO_SOLUTION=1`
//! scores the judge-like reading against `primary_gt` only (the reading
//! before the expert solution's Final Answer was used).
//!
//! (The `earthverse units <root> --runs DIR` command reports the same
//! figures through the package model; this example reads the JSON directly.)

use earthverse_answer_units::{
    agreement, extract_label_aliases, extract_tolerances, is_tuning_event, score_task, shown,
    system_gap_noise, Agreement, Rules, RunPair, ScoringContext,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let root = PathBuf::from(
        args.next()
            .ok_or("usage: agreement <release-root> [rows.tsv]")?,
    );
    let rows_out = args.next();
    let mut tasks: BTreeMap<String, (Value, ScoringContext, String)> = BTreeMap::new();
    for entry in std::fs::read_dir(root.join("tasks"))? {
        let path = entry?.path();
        let task: Value = serde_json::from_slice(&std::fs::read(&path)?)?;
        let id = task["task_id"].as_str().unwrap_or_default().to_owned();
        let event = task["event_id"].as_str().unwrap_or_default().to_owned();
        let gt = &task["ground_truth"];
        let mut ctx = ScoringContext::new(task["question"].as_str().unwrap_or_default())
            .with_tolerances(extract_tolerances(gt))?
            .with_label_aliases(extract_label_aliases(gt));
        ctx.rules = rules_from_env()?;
        if std::env::var_os("NO_SOLUTION").is_none() {
            ctx = ctx.with_solution(task["solution"].as_str().unwrap_or_default());
        }
        tasks.insert(id, (gt["primary_gt"].clone(), ctx, event));
    }
    let mut sets: [Vec<RunPair>; 3] = Default::default();
    let mut all_reading = Vec::new();
    let mut grouped: [Vec<RunPair>; 3] = Default::default();
    let mut held_out_tasks = Vec::new();
    let mut rows = String::new();
    let traj = root.join("exploration").join("trajectories");
    let mut systems: Vec<_> = std::fs::read_dir(&traj)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    systems.sort();
    for system_dir in systems {
        let system = system_dir
            .file_name()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        let mut files: Vec<_> = std::fs::read_dir(&system_dir)?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .collect();
        files.sort();
        for file in files {
            let run: Value = serde_json::from_slice(&std::fs::read(&file)?)?;
            let task_id = run["task_id"].as_str().unwrap_or_default();
            let Some((gt, ctx, event)) = tasks.get(task_id) else {
                continue;
            };
            let Some(published) = run["scores"]["unit_accuracy"].as_f64() else {
                continue;
            };
            let task_score = score_task(gt, &run["final_answer"], ctx);
            let u_judge = task_score.u_judge();
            let judge = task_score.judge_score();
            let score = &task_score.units;
            let pair = RunPair {
                system: system.clone(),
                ours: u_judge,
                published,
            };
            all_reading.push(RunPair {
                system: system.clone(),
                ours: score.u_all,
                published,
            });
            let half = if is_tuning_event(event) { 0 } else { 1 };
            let count = |req: bool, matched: bool| {
                score
                    .ledger
                    .iter()
                    .filter(|e| !e.meta && e.required == req && (!matched || e.matched))
                    .count()
            };
            let (nr, mr, no, mo) = (
                count(true, false),
                count(true, true),
                count(false, false),
                count(false, true),
            );
            rows.push_str(&format!(
                "{}\t{}\t{}\t{:.2}\t{:.2}\t{:.2}\t{}\t{}\t{}\t{}\t{nr}\t{mr}\t{no}\t{mo}\t{:?}\t{}\t{}\t{}\t{}\n",
                if half == 0 { "tune" } else { "held" },
                system,
                task_id,
                u_judge,
                score.u_all,
                published,
                score.groups_counted,
                run["scores"]["answer_units_total"].as_f64().unwrap_or(-1.0),
                score.units_total,
                run["scores"]["answer_units_correct"]
                    .as_f64()
                    .unwrap_or(-1.0),
                score.parse.shape,
                judge.groups_counted,
                judge.units_counted,
                judge.units_counted_matched,
                judge
                    .ledger
                    .iter()
                    .map(|e| match (e.counted, e.matched) {
                        (false, _) => '-',
                        (true, true) => '1',
                        (true, false) => '0',
                    })
                    .collect::<String>(),
            ));
            let gp = RunPair {
                system: system.clone(),
                ours: score.u_required,
                published,
            };
            if half == 1 {
                held_out_tasks.push(task_id.to_owned());
            }
            grouped[half].push(gp.clone());
            grouped[2].push(gp);
            sets[half].push(pair.clone());
            sets[2].push(pair);
        }
    }
    let show = |name: &str, a: &Agreement| {
        println!(
            "{name:>9}: runs {:4} MAE {:5.2} bias {:+5.2} pearson {:.3} spearman {:.3} within5 {:5.1}% within10 {:5.1}% max-system-gap {:4.2} system-r {:.3}",
            a.runs, shown(a.mae), shown(a.bias), shown(a.pearson), shown(a.spearman), shown(a.within5), shown(a.within10), shown(a.max_system_gap), shown(a.system_pearson)
        );
    };
    show("tune", &agreement(&sets[0]));
    let held = agreement(&sets[1]);
    let show_held = std::env::var_os("SHOW_HELD").is_some();
    if show_held {
        show("held-out", &held);
    }
    show("all", &agreement(&sets[2]));
    show("u_all/all", &agreement(&all_reading));
    show("gt/tune", &agreement(&grouped[0]));
    if show_held {
        show("gt/held", &agreement(&grouped[1]));
    }
    show("gt/all", &agreement(&grouped[2]));
    for s in held.per_system.iter().filter(|_| show_held) {
        println!(
            "  held {:<24} {:3} ours {:6.2} published {:6.2} Δ {:+6.2}",
            s.system,
            s.runs,
            s.ours,
            s.published,
            s.ours - s.published
        );
    }
    if show_held {
        // The noise floor of the held-out per-system gaps, and what it
        // would be with every per-run difference scaled down.
        for scale in [1.0, 0.8, 0.6, 0.5, 0.4] {
            let scaled: Vec<RunPair> = sets[1]
                .iter()
                .map(|p| RunPair {
                    ours: p.published + scale * (p.ours - p.published),
                    ..p.clone()
                })
                .collect();
            let mae = shown(agreement(&scaled).mae);
            let noise = system_gap_noise(&scaled, &held_out_tasks, 3.0, 5000, 2026);
            println!(
                "  noise x{scale:.1}: MAE {mae:5.2} largest gap median {:5.2} p90 {:5.2} all within 3 in {:5.1}% observed {:5.2} reached in {:5.1}%",
                shown(noise.median_max_gap),
                shown(noise.p90_max_gap),
                shown(noise.share_all_within.map(|s| 100.0 * s)),
                shown(noise.observed_max_gap),
                shown(noise.share_at_least_observed.map(|s| 100.0 * s))
            );
        }
    }
    if let Some(path) = rows_out {
        let mut f = std::fs::File::create(path)?;
        f.write_all(b"half\tsystem\ttask\tours\tu_all\tpublished\tcounted\tjudge_total\tleaves\tjudge_correct\tnr\tmr\tno\tmo\tshape\tj_groups\tj_counted\tj_counted_matched\tj_pattern\n")?;
        f.write_all(rows.as_bytes())?;
    }
    Ok(())
}

/// The default rules with the `RULES` environment overrides applied.
fn rules_from_env() -> Result<Rules, Box<dyn std::error::Error>> {
    let mut rules = Rules::default();
    let spec = std::env::var("RULES").unwrap_or_default();
    for item in spec.split(',').filter(|s| !s.trim().is_empty()) {
        let (name, value) = item.split_once('=').ok_or("RULES: name=value")?;
        let value = value.trim();
        match name.trim() {
            "long_text_min_recall" => rules.long_text_min_recall = value.parse()?,
            "label_min_recall" => rules.label_min_recall = value.parse()?,
            "identifier_min_jaccard" => rules.identifier_min_jaccard = value.parse()?,
            "loose_required" => rules.loose_required = value.parse()?,
            "fuzzy_keys" => rules.fuzzy_keys = value.parse()?,
            "short_answer_max_tokens" => rules.short_answer_max_tokens = value.parse()?,
            "short_answer_min_recall" => rules.short_answer_min_recall = value.parse()?,
            "label_polarity" => rules.label_polarity = value.parse()?,
            "skip_given_row_labels" => rules.skip_given_row_labels = value.parse()?,
            "min_counted_share" => rules.min_counted_share = value.parse()?,
            "identifiers_are_labels" => rules.identifiers_are_labels = value.parse()?,
            "label_leads_answer" => rules.label_leads_answer = value.parse()?,
            "merge_repeated_units" => rules.merge_repeated_units = value.parse()?,
            "long_text_needs_shared_token" => rules.long_text_needs_shared_token = value.parse()?,
            "answer_from_template_keys" => rules.answer_from_template_keys = value.parse()?,
            "group_depth" => rules.group_depth = value.parse()?,
            "canonical_labels_exact" => rules.canonical_labels_exact = value.parse()?,
            "template_keys_from_gt" => rules.template_keys_from_gt = value.parse()?,
            "key_word_subset" => rules.key_word_subset = value.parse()?,
            "prose_numbers_by_key" => rules.prose_numbers_by_key = value.parse()?,
            other => return Err(format!("RULES: unknown rule {other}").into()),
        }
    }
    Ok(rules)
}
