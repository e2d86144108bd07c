//! Replaying recorded tool calls: every call of the recorded runs is run
//! again against the packages of the release and its observable result is
//! compared with the recorded output (`earthverse tools replay`).
//!
//! Criteria (issue "tools replay"): same file list and sizes; same text up
//! to `max_chars`; same set of matching files and snippets; same JSON shape
//! and numeric summaries; same image size and format with RGB means within
//! 0.5. Recorded outputs are previews: text longer than 1,720 characters was
//! cut and ends with `...[TRUNCATED]...`; a preview is compared as a prefix
//! of our rendered output. `python_exec` calls are recorded only as
//! previews (code and output cut) and are skipped with that reason.

use crate::registry::{normalise_args, TRUNCATION_MARKER};
use crate::render::render_output_text;
use crate::research::{self, ReadMode};
use crate::tool::{Tool, ToolContext, ToolOutput};
use earthverse_package_model::RecordedToolCall;
use earthverse_package_model::{RELEASE_PACKAGES_DIR, TASK_PACKAGES_DIR};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The five file tools replay re-executes.
pub const FILE_TOOLS: [&str; 5] = [
    "list_package_files",
    "read_text_file",
    "search_package_files",
    "summarize_table_or_json",
    "inspect_image",
];

/// One call that gave a different observable result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// System (folder of the recorded run).
    pub system: String,
    /// Task id.
    pub task: String,
    /// Step of the call.
    pub step: Option<u64>,
    /// Tool.
    pub tool: String,
    /// Arguments as recorded.
    pub args: Value,
    /// Category of the explanation (`package_changed`, `path_outside`, ...).
    pub category: String,
    /// What differs and why.
    pub reason: String,
}

/// One call that was not compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    /// System.
    pub system: String,
    /// Task id.
    pub task: String,
    /// Step.
    pub step: Option<u64>,
    /// Tool.
    pub tool: String,
    /// Why it was not compared.
    pub reason: String,
}

/// Per-tool counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolTally {
    /// Calls seen.
    pub calls: usize,
    /// Calls compared.
    pub compared: usize,
    /// Identical results.
    pub identical: usize,
    /// Seconds spent executing this tool (memoised repeats excluded).
    pub seconds: f64,
}

/// The replay report `{calls, compared, identical, differing[], skipped[]}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplayReport {
    /// Recorded runs read.
    pub runs: usize,
    /// Recorded tool calls seen.
    pub calls: usize,
    /// Calls re-executed and compared.
    pub compared: usize,
    /// Compared calls with the same observable result.
    pub identical: usize,
    /// Compared calls that differ, each with a reason.
    pub differing: Vec<Difference>,
    /// Calls not compared, each with a reason.
    pub skipped: Vec<Skipped>,
    /// Counts per tool.
    pub by_tool: BTreeMap<String, ToolTally>,
}

impl ReplayReport {
    /// `identical / compared`.
    pub fn identical_fraction(&self) -> f64 {
        if self.compared == 0 {
            0.0
        } else {
            self.identical as f64 / self.compared as f64
        }
    }

    /// Compared calls whose inputs the public release did not change (not
    /// `package_changed`): the denominator of the identical share that
    /// measures the tools, not the release.
    pub fn comparable(&self) -> usize {
        let changed = self
            .differing
            .iter()
            .filter(|d| d.category.starts_with("package_changed"))
            .count();
        self.compared - changed
    }

    /// Counts of differences per category.
    pub fn difference_categories(&self) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for d in &self.differing {
            *m.entry(d.category.clone()).or_insert(0) += 1;
        }
        m
    }

    /// Counts of skipped calls per reason.
    pub fn skip_reasons(&self) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for s in &self.skipped {
            *m.entry(s.reason.clone()).or_insert(0) += 1;
        }
        m
    }
}

enum Verdict {
    Identical,
    Differs { category: String, reason: String },
    Skip(String),
}

/// Replays every recorded run under `runs_dir` (default
/// `<release>/exploration/trajectories`) against the packages of
/// `release_root`, with the reference-compatible tools.
pub fn replay(release_root: &Path, runs_dir: Option<&Path>) -> crate::Result<ReplayReport> {
    let runs_dir = runs_dir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| release_root.join("exploration").join("trajectories"));
    let entries =
        earthverse_package_model::load_recorded_runs(&runs_dir).map_err(|e| crate::Error::Io {
            path: runs_dir.clone(),
            source: std::io::Error::other(e.to_string()),
        })?;
    let inventories = load_inventories(&release_root.join("tasks"));
    for entry in &entries {
        let (package_root, inventory_key) = package_of(release_root, &entry.task_id);
        if let Some(inventory) = inventories.get(&inventory_key) {
            ensure_readable(&package_root, inventory)?;
        }
    }
    let tools: Vec<std::sync::Arc<dyn Tool>> =
        research::file_tools(&research::ResearchToolsConfig {
            read_mode: ReadMode::Reference,
            ..Default::default()
        });
    let schemas: BTreeMap<String, Value> = tools
        .iter()
        .map(|t| (t.name().to_string(), t.parameters_schema()))
        .collect();
    let results: Vec<(String, String, &RecordedToolCall, Verdict)> = entries
        .par_iter()
        .flat_map_iter(|entry| {
            let (package_root, inventory_key) = package_of(release_root, &entry.task_id);
            let ctx = ToolContext::new(package_root, std::env::temp_dir());
            let schemas = &schemas;
            let inventory = inventories.get(&inventory_key);
            entry.run.tool_calls.iter().map(move |call| {
                let verdict = replay_call(&ctx, schemas, inventory, call);
                (
                    entry.system_id.clone(),
                    entry.task_id.clone(),
                    call,
                    verdict,
                )
            })
        })
        .collect();
    let mut report = ReplayReport {
        runs: entries.len(),
        ..Default::default()
    };
    if let Ok(t) = timings().lock() {
        for (tool, secs) in t.iter() {
            report.by_tool.entry(tool.clone()).or_default().seconds = *secs;
        }
    }
    for (system, task, call, verdict) in results {
        report.calls += 1;
        let tally = report.by_tool.entry(call.tool.clone()).or_default();
        tally.calls += 1;
        match verdict {
            Verdict::Identical => {
                tally.compared += 1;
                tally.identical += 1;
                report.compared += 1;
                report.identical += 1;
            }
            Verdict::Differs { category, reason } => {
                tally.compared += 1;
                report.compared += 1;
                report.differing.push(Difference {
                    system,
                    task,
                    step: call.step,
                    tool: call.tool.clone(),
                    args: call.args.clone(),
                    category,
                    reason,
                });
            }
            Verdict::Skip(reason) => report.skipped.push(Skipped {
                system,
                task,
                step: call.step,
                tool: call.tool.clone(),
                reason,
            }),
        }
    }
    Ok(report)
}

/// Runs one of the five file tools synchronously.
fn execute(ctx: &ToolContext, tool: &str, args: &Value) -> ToolOutput {
    let s = |k: &str| {
        args.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let n = |k: &str, d: usize| research::usize_arg(args, k, d);
    match tool {
        "list_package_files" => research::list::list(ctx, &s("subdir"), n("max_files", 120)),
        "read_text_file" => {
            research::read::read(ctx, ReadMode::Reference, &s("path"), n("max_chars", 12_000))
        }
        "search_package_files" => research::search_package(
            ctx,
            &research::SearchRequest {
                query: s("query"),
                glob: args
                    .get("glob")
                    .and_then(Value::as_str)
                    .unwrap_or("**/*")
                    .to_string(),
                max_matches: n("max_matches", 40),
            },
            ReadMode::Reference,
        ),
        "summarize_table_or_json" => research::summarize::summarize(ctx, &s("path")),
        "inspect_image" => research::image::inspect(ctx, &s("path")),
        other => ToolOutput::error(format!("unknown tool: {other}")),
    }
}

/// The recorded package's inventory: package-relative path → (bytes, sha256
/// prefix), from the tasks' `event_files`.
pub(crate) type Inventory = BTreeMap<String, (Option<u64>, Option<String>)>;

pub(crate) fn load_inventories(tasks_dir: &Path) -> BTreeMap<String, Inventory> {
    let mut out: BTreeMap<String, Inventory> = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir(tasks_dir) else {
        return out;
    };
    for entry in dir.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let Ok(task) =
            earthverse_package_model::read_json_record::<earthverse_package_model::Task>(&path)
        else {
            continue;
        };
        // By event (every task's inventory of the event's package), and
        // by task (for a task that has a package of its own).
        let id = task.task_id.split('_').next().unwrap_or("").to_string();
        for key in [id, task.task_id.clone()] {
            let inv = out.entry(key).or_default();
            for f in &task.event_files {
                inv.insert(f.relative_path.clone(), (f.bytes, f.sha256_16.clone()));
            }
        }
    }
    out
}

/// Opens every inventoried file present under `package_root`
/// (package-model's `first_unopenable`): one that does not open (permission
/// denied) or whose symlink leads out of the package is an error naming it, not a change
/// of the package (its hash read as that of no bytes, and the calls that
/// read it were counted as `package_changed`). An absent file is a change.
fn ensure_readable(package_root: &Path, inventory: &Inventory) -> crate::Result<()> {
    match earthverse_package_model::evidence::first_unopenable(
        package_root,
        inventory.keys().map(String::as_str),
    ) {
        None => Ok(()),
        Some((path, source)) => Err(crate::Error::Io { path, source }),
    }
}

/// How a file of the recorded package differs in the public package.
pub(crate) fn file_change(
    package_root: &Path,
    inventory: &Inventory,
    rel: &str,
    deep: bool,
) -> Option<String> {
    let (bytes, sha) = inventory.get(rel)?;
    let path = package_root.join(rel);
    let Ok(meta) = std::fs::metadata(&path) else {
        return Some(format!("{rel} is absent from the public package"));
    };
    if let Some(b) = bytes {
        if *b != meta.len() {
            return Some(format!(
                "{rel} had {b} bytes when recorded, {} now",
                meta.len()
            ));
        }
    }
    if let (Some(sha), true) = (sha, deep) {
        use sha2::Digest;
        let now = std::fs::read(&path)
            .map(|d| hex::encode(sha2::Sha256::digest(&d)))
            .unwrap_or_default();
        if !now.starts_with(sha.as_str()) {
            return Some(format!(
                "{rel} changed content since recording (sha256 {sha} → {})",
                &now[..16.min(now.len())]
            ));
        }
    }
    None
}

/// Files of the recorded package a call depended on that changed.
fn changed_inputs(
    ctx: &ToolContext,
    inventory: Option<&Inventory>,
    tool: &str,
    args: &Value,
) -> Vec<String> {
    let Some(inventory) = inventory else {
        return Vec::new();
    };
    match tool {
        "read_text_file" | "summarize_table_or_json" | "inspect_image" => {
            let path = args.get("path").and_then(Value::as_str).unwrap_or("");
            let rel = match earthverse_package_model::evidence::resolve(&ctx.package_root, path) {
                Ok(r) => r.package_relative,
                Err(_) => {
                    // Absent now: find it in the inventory by its tail.
                    let norm = path.replace('\\', "/");
                    match inventory.keys().find(|k| norm.ends_with(k.as_str())) {
                        Some(k) => k.clone(),
                        None => return Vec::new(),
                    }
                }
            };
            file_change(&ctx.package_root, inventory, &rel, true)
                .into_iter()
                .collect()
        }
        "list_package_files" | "search_package_files" => {
            let raw = args.get("subdir").and_then(Value::as_str).unwrap_or(".");
            let subdir_owned = earthverse_package_model::evidence::resolve(&ctx.package_root, raw)
                .map(|r| r.package_relative)
                .unwrap_or_else(|_| raw.trim_matches('/').trim_start_matches("./").to_string());
            let subdir = subdir_owned.as_str();
            inventory
                .keys()
                .filter(|k| {
                    tool == "search_package_files"
                        || subdir.is_empty()
                        || subdir == "."
                        || k.starts_with(&format!("{subdir}/"))
                })
                .filter(|k| {
                    tool == "list_package_files"
                        || research::text::is_text_suffix(&research::suffix_of(k))
                })
                .filter_map(|k| file_change(&ctx.package_root, inventory, k, false))
                .collect()
        }
        _ => Vec::new(),
    }
}

fn timings() -> &'static std::sync::Mutex<BTreeMap<String, f64>> {
    static T: std::sync::OnceLock<std::sync::Mutex<BTreeMap<String, f64>>> =
        std::sync::OnceLock::new();
    T.get_or_init(|| std::sync::Mutex::new(BTreeMap::new()))
}

/// Tool calls are deterministic: identical calls on one package (many
/// runs repeat them) are executed once per replay.
fn memoised_execute(ctx: &ToolContext, tool: &str, args: &Value) -> ToolOutput {
    use std::sync::{Mutex, OnceLock};
    static MEMO: OnceLock<Mutex<std::collections::HashMap<String, ToolOutput>>> = OnceLock::new();
    let memo = MEMO.get_or_init(|| Mutex::new(std::collections::HashMap::new()));
    let key = format!("{}\u{0}{tool}\u{0}{args}", ctx.package_root.display());
    if let Some(hit) = memo.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return hit;
    }
    let clock = std::time::Instant::now();
    let out = execute(ctx, tool, args);
    if let Ok(mut t) = timings().lock() {
        *t.entry(tool.to_string()).or_insert(0.0) += clock.elapsed().as_secs_f64();
    }
    if let Ok(mut m) = memo.lock() {
        m.insert(key, out.clone());
    }
    out
}

fn replay_call(
    ctx: &ToolContext,
    schemas: &BTreeMap<String, Value>,
    inventory: Option<&Inventory>,
    call: &RecordedToolCall,
) -> Verdict {
    if call.tool == "python_exec" {
        return Verdict::Skip(
            "python_exec is recorded only as previews (code and output cut); not re-executable"
                .into(),
        );
    }
    let Some(schema) = schemas.get(&call.tool) else {
        return Verdict::Skip("not one of the six research tools".into());
    };
    let Some(recorded) = call.output_text() else {
        return Verdict::Skip("no recorded output text".into());
    };
    if recorded.is_empty() {
        return Verdict::Skip("recorded output text is empty".into());
    }
    if !ctx.package_root.is_dir() {
        return Verdict::Skip(format!("package {} is not in this release", ctx.package_id));
    }
    let args = normalise_args(schema, call.args.clone());
    let ours = memoised_execute(ctx, &call.tool, &args);
    let ours_text = render_output_text(&ours.output);
    let recorded_ok = call.ok.unwrap_or(true);
    match compare(
        ctx,
        &call.tool,
        &args,
        recorded_ok,
        recorded,
        &ours,
        &ours_text,
    ) {
        Verdict::Differs { category, reason }
            if category == "unexplained" || category == "package_changed" =>
        {
            let mut changed = changed_inputs(ctx, inventory, &call.tool, &args);
            if call.tool == "search_package_files" && recorded_ok && ours.ok {
                // Only the file where the outputs first diverge explains a
                // search difference.
                match divergent_match_file(ctx, recorded, &ours_text) {
                    Some(rel) => {
                        let absent = !ctx.package_root.join(&rel).exists();
                        changed.retain(|c| c.starts_with(&format!("{rel} ")));
                        if changed.is_empty() && absent {
                            changed.push(format!("{rel} is absent from the public package"));
                        }
                    }
                    None => {
                        // The visible matches agree; the counts differ in
                        // matches the recorded preview does not show.
                        if !changed.is_empty() {
                            return differs(
                                "package_changed_beyond_preview",
                                format!(
                                    "matches shown in the recorded preview agree; the remaining ones are cut from the preview and \
                                     {} text file(s) of the package changed in the public release ({}); {reason}",
                                    changed.len(),
                                    changed[0]
                                ),
                            );
                        }
                    }
                }
            }
            if changed.is_empty() {
                Verdict::Differs { category, reason }
            } else {
                differs(
                    "package_changed",
                    format!(
                        "{} input file(s) changed in the public release ({}); {reason}",
                        changed.len(),
                        changed[0]
                    ),
                )
            }
        }
        other => other,
    }
}

/// The package-relative path of the match where a recorded search output
/// and ours first diverge.
fn divergent_match_file(ctx: &ToolContext, recorded: &str, ours: &str) -> Option<String> {
    let at = recorded
        .char_indices()
        .zip(ours.chars())
        .find(|((_, a), b)| a != b)
        .map(|((i, _), _)| i)
        .unwrap_or_else(|| recorded.len().min(ours.len()));
    let prefix = format!("\"path\": \"{}/", ctx.release_prefix);
    // The match block holding the divergence: the last path opened before it
    // in either output, or the next one if the divergence is in a path line.
    let find_path = |text: &str, upto: usize| -> Option<String> {
        let head = &text[..upto.min(text.len())];
        let start = head.rfind(&prefix)? + prefix.len();
        let tail = &text[start..];
        Some(tail[..tail.find('"')?].to_string())
    };
    let paths = |text: &str| -> Vec<String> {
        text.match_indices(&prefix)
            .filter_map(|(i, _)| {
                let tail = &text[i + prefix.len()..];
                tail.find('"').map(|end| tail[..end].to_string())
            })
            .collect()
    };
    if !recorded[..at].contains(&prefix) {
        // Diverged in the header (match_count): the first differing match
        // path among those the preview shows explains it.
        let (rec, our) = (paths(recorded), paths(ours));
        return match rec.iter().zip(&our).find(|(a, b)| a != b) {
            Some((a, b)) => Some(if ctx.package_root.join(a).exists() {
                b.clone()
            } else {
                a.clone()
            }),
            None if rec.len() > our.len() => rec.get(our.len()).cloned(),
            None if our.len() > rec.len() && !recorded.ends_with(TRUNCATION_MARKER) => {
                our.get(rec.len()).cloned()
            }
            None => None,
        };
    }
    let line_start = recorded[..at].rfind('\n').map(|i| i + 1).unwrap_or(0);
    if recorded[line_start..].trim_start().starts_with("\"path\"") {
        // The paths themselves differ: take ours if it is absent from the
        // recording, else the recorded one.
        let ours_at = ours[line_start.min(ours.len())..]
            .find(&prefix)
            .map(|i| i + line_start);
        let rec_path = find_path(
            recorded,
            recorded[line_start..]
                .find('\n')
                .map(|i| i + line_start)
                .unwrap_or(recorded.len()),
        );
        let our_path = ours_at.and_then(|i| {
            find_path(
                ours,
                ours[i..].find('\n').map(|j| j + i).unwrap_or(ours.len()),
            )
        });
        return rec_path.or(our_path);
    }
    find_path(recorded, at).or_else(|| find_path(ours, at))
}

/// The prefix of a recorded preview, when it was cut.
fn preview_prefix(recorded: &str) -> Option<&str> {
    recorded
        .strip_suffix(TRUNCATION_MARKER)
        .map(|p| p.strip_suffix('\n').unwrap_or(p))
}

fn differs(category: &str, reason: impl Into<String>) -> Verdict {
    Verdict::Differs {
        category: category.into(),
        reason: reason.into(),
    }
}

fn compare(
    ctx: &ToolContext,
    tool: &str,
    args: &Value,
    recorded_ok: bool,
    recorded: &str,
    ours: &ToolOutput,
    ours_text: &str,
) -> Verdict {
    // Exact text or exact preview prefix.
    if recorded_ok == ours.ok {
        if recorded == ours_text {
            return Verdict::Identical;
        }
        if let Some(prefix) = preview_prefix(recorded) {
            if recorded.chars().count() >= 1_700 && ours_text.starts_with(prefix) {
                return Verdict::Identical;
            }
        }
    }
    // Semantic comparison of complete JSON outputs.
    if recorded_ok && ours.ok {
        if let Ok(rec) = serde_json::from_str::<Value>(recorded) {
            if let Some(reason) = semantic_difference(tool, &rec, &ours.output) {
                return explain(ctx, tool, args, recorded, ours, reason);
            }
            return Verdict::Identical;
        }
        // A cut preview whose prefix differs.
        if let Some(prefix) = preview_prefix(recorded) {
            let at = common_prefix_chars(prefix, ours_text);
            let context: String = prefix
                .chars()
                .skip(at.saturating_sub(40))
                .take(100)
                .collect();
            return explain(
                ctx,
                tool,
                args,
                recorded,
                ours,
                format!("preview differs at character {at}: recorded …{context}…"),
            );
        }
    }
    explain(
        ctx,
        tool,
        args,
        recorded,
        ours,
        format!(
            "recorded ok={recorded_ok}: {:?}; ours ok={}: {:?}",
            cut(recorded, 160),
            ours.ok,
            cut(ours_text, 160)
        ),
    )
}

fn cut(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

fn common_prefix_chars(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

/// Finds why a difference happened: files absent from the public package,
/// paths the reference refused differently, and so on.
fn explain(
    ctx: &ToolContext,
    tool: &str,
    args: &Value,
    recorded: &str,
    ours: &ToolOutput,
    detail: String,
) -> Verdict {
    // Files the recorded output names that the public package lacks.
    let prefix = format!("{}/", ctx.release_prefix);
    let mut absent = Vec::new();
    for piece in recorded.split('"') {
        if let Some(rel) = piece.strip_prefix(&prefix) {
            if !rel.is_empty()
                && !rel.contains(' ')
                && !ctx.package_root.join(rel).exists()
                && !absent.contains(&rel.to_string())
            {
                absent.push(rel.to_string());
            }
        }
    }
    if !absent.is_empty() {
        return differs(
            "package_changed",
            format!(
                "the recorded package had {} file(s) absent from the public package (e.g. {}); {detail}",
                absent.len(),
                absent[0]
            ),
        );
    }
    if tool == "list_package_files"
        && (recorded.contains("\"README.md\"") || recorded.contains("\"metadata/"))
    {
        return differs("package_changed", format!("the recorded package had README.md / metadata files the public package lacks; {detail}"));
    }
    let recorded_missing =
        recorded.starts_with("file not found:") || recorded.starts_with("subdir not found:");
    if !ours.ok
        && !recorded_missing
        && matches!(&ours.output, Value::String(s) if s.starts_with("file not found:"))
    {
        return differs(
            "package_changed",
            format!("file absent from the public package; {detail}"),
        );
    }
    if recorded.contains("path outside allowed task/package roots") {
        return differs(
            "path_policy",
            format!("the reference refused this path as outside the package; package-model's resolver reports it differently; {detail}"),
        );
    }
    if recorded.starts_with("image inspection failed") && !ours.ok {
        return differs(
            "error_wording",
            format!("both fail; the reference's message names its own absolute path; {detail}"),
        );
    }
    if tool == "read_text_file" || tool == "summarize_table_or_json" || tool == "inspect_image" {
        let path = args.get("path").and_then(Value::as_str).unwrap_or("");
        if let Ok(r) = earthverse_package_model::evidence::resolve(&ctx.package_root, path) {
            if let Ok(meta) = std::fs::metadata(&r.absolute) {
                return differs(
                    "unexplained",
                    format!(
                        "{detail} (file {} has {} bytes now)",
                        r.package_relative,
                        meta.len()
                    ),
                );
            }
        }
    }
    differs("unexplained", detail)
}

fn as_f64(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64)
}

/// The criteria on two complete JSON outputs; `None` when they agree.
fn semantic_difference(tool: &str, rec: &Value, ours: &Value) -> Option<String> {
    match tool {
        "list_package_files" => {
            let files = |v: &Value| -> Vec<(String, u64)> {
                v.get("files")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .map(|f| {
                                (
                                    f["package_relative_path"]
                                        .as_str()
                                        .unwrap_or("")
                                        .to_string(),
                                    f["bytes"].as_u64().unwrap_or(0),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let (a, b) = (files(rec), files(ours));
            (a != b).then(|| {
                let only_rec: Vec<_> = a.iter().filter(|x| !b.contains(x)).take(3).collect();
                let only_ours: Vec<_> = b.iter().filter(|x| !a.contains(x)).take(3).collect();
                format!("file lists differ: recorded-only {only_rec:?}, ours-only {only_ours:?}")
            })
        }
        "read_text_file" => {
            (rec.get("text") != ours.get("text")).then(|| "text differs".to_string())
        }
        "search_package_files" => {
            let m = |v: &Value| -> Vec<(String, String)> {
                v.get("matches")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .map(|x| {
                                (
                                    x["path"].as_str().unwrap_or("").to_string(),
                                    x["snippet"].as_str().unwrap_or("").to_string(),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let (a, b) = (m(rec), m(ours));
            if a == b {
                return None;
            }
            let pa: Vec<_> = a.iter().map(|x| &x.0).collect();
            let pb: Vec<_> = b.iter().map(|x| &x.0).collect();
            if pa != pb {
                let only_rec: Vec<_> = pa.iter().filter(|x| !pb.contains(x)).take(3).collect();
                let only_ours: Vec<_> = pb.iter().filter(|x| !pa.contains(x)).take(3).collect();
                Some(format!(
                    "matching files differ: recorded-only {only_rec:?}, ours-only {only_ours:?}"
                ))
            } else {
                let (x, y) = a.iter().zip(&b).find(|(x, y)| x != y)?;
                Some(format!(
                    "snippet differs in {}: recorded {:?}, ours {:?}",
                    x.0,
                    cut(&x.1, 80),
                    cut(&y.1, 80)
                ))
            }
        }
        "summarize_table_or_json" => {
            for key in ["type", "shape", "rows", "columns"] {
                if rec.get(key) != ours.get(key) {
                    return Some(format!("{key} differs"));
                }
            }
            let (Some(a), Some(b)) = (
                rec.get("numeric_list_summaries").and_then(Value::as_object),
                ours.get("numeric_list_summaries")
                    .and_then(Value::as_object),
            ) else {
                return (rec.get("numeric_list_summaries") != ours.get("numeric_list_summaries"))
                    .then(|| "numeric summaries differ".to_string());
            };
            if a.keys().ne(b.keys()) {
                return Some("numeric list keys differ".into());
            }
            for (k, va) in a {
                for stat in ["count", "min", "max", "mean", "p95"] {
                    let (x, y) = (as_f64(va.get(stat)), as_f64(b[k].get(stat)));
                    let close = match (x, y) {
                        (Some(x), Some(y)) => (x - y).abs() <= 1e-6 * x.abs().max(y.abs()).max(1.0),
                        (None, None) => true,
                        _ => false,
                    };
                    if !close {
                        return Some(format!("{k}.{stat}: recorded {x:?}, ours {y:?}"));
                    }
                }
            }
            None
        }
        "inspect_image" => {
            for key in ["format", "width", "height"] {
                if rec.get(key) != ours.get(key) {
                    return Some(format!("{key}: recorded {}, ours {}", rec[key], ours[key]));
                }
            }
            for c in 0..3 {
                let (x, y) = (
                    as_f64(rec["rgb_mean"].get(c)),
                    as_f64(ours["rgb_mean"].get(c)),
                );
                match (x, y) {
                    (Some(x), Some(y)) if (x - y).abs() <= 0.5 => {}
                    _ => return Some(format!("rgb_mean[{c}]: recorded {x:?}, ours {y:?}")),
                }
            }
            None
        }
        _ => (rec != ours).then(|| "outputs differ".to_string()),
    }
}

/// The package a recorded run of `task_id` reads in the release at
/// `release_root`, and the key of its inventory in [`load_inventories`]:
/// the task's own package when the release gives it one (a perturbed
/// release; `Release::task_package_dir`), else its event's package.
pub(crate) fn package_of(release_root: &Path, task_id: &str) -> (PathBuf, String) {
    let event = task_id.split('_').next().unwrap_or("");
    let own = release_root
        .join(TASK_PACKAGES_DIR)
        .join(task_id)
        .join(event);
    if own.is_dir() {
        (own, task_id.to_string())
    } else {
        (packages_dir(release_root).join(event), event.to_string())
    }
}

/// Where the packages of a release live.
pub fn packages_dir(release_root: &Path) -> PathBuf {
    release_root.join(RELEASE_PACKAGES_DIR)
}
