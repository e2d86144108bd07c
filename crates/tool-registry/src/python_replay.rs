//! Replaying recorded `python_exec` calls (`earthverse tools replay
//! --python PATH`): each call whose whole code the record holds is run
//! again in the OS sandbox of [`crate::sandbox`] against the release's
//! package, and its observable result (return code, stdout, stderr) is
//! compared with the recorded observation.
//!
//! The calls of one run are replayed in step order in one scratch
//! directory (the harness's per-run scratch, `reference-harness.md`), runs
//! in parallel up to `jobs` at a time; every call has the harness's limits
//! ([`crate::PythonLimits`]: 60 s wall clock, Appendix C.2).
//!
//! **Which calls can run.** The release records `code_preview` (the code
//! with surrounding white space stripped, cut at about 500 characters and
//! then ending with `...[TRUNCATED]...`), `code_chars` and `code_sha1` (the
//! first 12 hex digits of the SHA-1 of the code). A call is re-executed only
//! when its preview is not cut and the code rebuilt from it (the preview
//! with the stripped line breaks restored to `code_chars`) has the recorded
//! SHA-1; every other call is skipped with that reason.
//!
//! **Comparison.** The harness's own artefacts are normalised: `code_path`
//! and `latency_s` are not compared, and a traceback is compared by its
//! exception lines without its frame lines (the authors' harness ran code
//! through a wrapper script, so its frames name the wrapper and
//! `<agent_python_exec>`). A recorded observation cut to a preview is
//! compared as a prefix. A call that still differs gets the first category
//! whose general rule explains it ([`DifferenceCategory`]); nothing is
//! keyed to a task or a run.

use crate::registry::TRUNCATION_MARKER;
use crate::replay::{Difference, Skipped};
use crate::research::PythonExec;
use crate::sandbox::PythonConfig;
use crate::tool::ToolContext;
use earthverse_package_model::load_recorded_runs;
use earthverse_package_model::RecordedToolCall;
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

/// Why a replayed call's result differs from the recorded one: the first
/// rule (in this order) that explains the difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DifferenceCategory {
    /// The authors' harness refused the code before running it (its
    /// static filter of "forbidden code terms") or blocked an import or a
    /// read inside its wrapper; our OS sandbox ran it.
    ReferenceRefusal,
    /// The recorded output shows the authors' wrapper rather than the code's
    /// own result: its guarded builtins (`guarded_import`, `…_wrapper.py`),
    /// or file-system queries (`exists`, `listdir`, `walk`, `glob`, …) that
    /// saw less than ours: its wrapper mapped the package for reads only,
    /// where our sandbox shows the package itself.
    ReferenceWrapper,
    /// Our sandbox refused what the recorded run did: network access, new
    /// processes, writes outside scratch (`PermissionError`, `Operation not
    /// permitted`, name resolution failures).
    SandboxRefusal,
    /// One side ran into the 60 s wall clock.
    Timeout,
    /// A file the code reads is not in the public package (or, for a
    /// scratch file, was written by an earlier call of the run that could
    /// not be replayed).
    FileAbsent,
    /// A file the code reads has another size or content in the public
    /// package than when the run was recorded (the tasks' `event_files`).
    PackageChanged,
    /// A module is importable on one side only.
    LibraryMissing,
    /// The same code prints something else because a library's version
    /// differs: numpy 2's scalar reprs (`np.float64(1.5)`), deprecation
    /// and future warnings, floats equal to 9 significant digits.
    LibraryVersion,
    /// The same exception on both sides with the message worded as another
    /// Python version words it (the authors ran Python 3.12).
    PythonVersion,
    /// The authors ran Windows: `\` path separators, drive letters,
    /// `[WinError …]` and localised OS messages where ours are POSIX.
    Platform,
    /// The outputs are equal up to white space (line endings, blank lines
    /// that text extraction of another library version adds or drops).
    Whitespace,
    /// Memory addresses (`0x7f…`) in reprs.
    NondeterminismAddress,
    /// The same lines or items in another order (directory listings, sets,
    /// hash order).
    NondeterminismOrder,
    /// The code reads the clock or a random source (without a seed).
    NondeterminismTimeRandom,
    /// The same numbers up to the last digits of floating-point arithmetic
    /// (9 significant digits agree).
    FloatRounding,
    /// Recorded output was cut by the harness's output caps where ours was
    /// cut elsewhere.
    Truncation,
    /// None of the rules above.
    Unexplained,
}

impl DifferenceCategory {
    /// The snake_case name used in reports.
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }

    /// Whether the difference comes from inputs the public release does not
    /// hold as recorded (absent or changed files), or from a refusal of the
    /// authors' harness, so that there was nothing to reproduce.
    pub fn excluded_from_comparable(self) -> bool {
        matches!(
            self,
            Self::ReferenceRefusal
                | Self::ReferenceWrapper
                | Self::FileAbsent
                | Self::PackageChanged
        )
    }
}

/// Options of a `python_exec` replay.
#[derive(Debug, Clone)]
pub struct PythonReplayOptions {
    /// The interpreter and sandbox (limits as the harness's).
    pub python: PythonConfig,
    /// Runs replayed at once (each runs its calls in order).
    pub jobs: usize,
}

/// The `python_exec` part of a replay report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PythonReplayReport {
    /// The interpreter used.
    pub interpreter: String,
    /// Recorded runs read.
    pub runs: usize,
    /// Recorded `python_exec` calls.
    pub calls: usize,
    /// Calls re-executed and compared.
    pub compared: usize,
    /// Compared calls whose inputs the public release holds as recorded and
    /// that the authors' harness did not refuse
    /// ([`DifferenceCategory::excluded_from_comparable`]).
    pub comparable: usize,
    /// Compared calls with the same observable result.
    pub identical: usize,
    /// Of those, identical only after normalising the harness's own
    /// artefacts: normalisation → count.
    pub identical_normalised: BTreeMap<String, usize>,
    /// Differences per category.
    pub categories: BTreeMap<String, usize>,
    /// Calls not re-executed per reason.
    pub skip_reasons: BTreeMap<String, usize>,
    /// Wall-clock seconds of the replay.
    pub seconds: f64,
    /// Every differing call with its category and reason.
    pub differing: Vec<Difference>,
    /// Every call not re-executed, with its reason.
    pub skipped: Vec<Skipped>,
}

impl PythonReplayReport {
    /// `identical / comparable`.
    pub fn identical_share_of_comparable(&self) -> f64 {
        ratio(self.identical, self.comparable)
    }

    /// `identical / compared`.
    pub fn identical_share_of_compared(&self) -> f64 {
        ratio(self.identical, self.compared)
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Rebuilds the whole code of a recorded call, or says why it cannot.
///
/// `args.code` (our own run records) is the code itself; the release's
/// records hold `code_preview` / `code_chars` / `code_sha1` (module docs).
pub fn recover_code(args: &Value) -> Result<String, String> {
    if let Some(code) = args.get("code").and_then(Value::as_str) {
        return Ok(code.to_owned());
    }
    let Some(preview) = args.get("code_preview").and_then(Value::as_str) else {
        return Err("the record holds no code".into());
    };
    let chars = args
        .get("code_chars")
        .and_then(Value::as_u64)
        .map(|n| n as usize);
    if preview.ends_with(TRUNCATION_MARKER) {
        return Err("code recorded only as a cut preview".into());
    }
    let sha = args.get("code_sha1").and_then(Value::as_str);
    let have = preview.chars().count();
    let Some(chars) = chars else {
        return Err("the record gives no code_chars to check the preview against".into());
    };
    let Some(missing) = chars.checked_sub(have) else {
        return Err(format!(
            "code_preview has {have} characters, more than code_chars {chars}"
        ));
    };
    let Some(sha) = sha else {
        return if missing == 0 {
            Ok(preview.to_owned())
        } else {
            Err("the preview lacks characters and the record gives no code_sha1".into())
        };
    };
    // The preview is the code stripped of surrounding white space: restore
    // the stripped line breaks (leading ones first) until the digest holds.
    for leading in 0..=missing.min(8) {
        let trailing = missing - leading;
        if trailing > 8 {
            continue;
        }
        let candidate = format!("{}{preview}{}", "\n".repeat(leading), "\n".repeat(trailing));
        if sha1_hex(&candidate).starts_with(sha) {
            return Ok(candidate);
        }
    }
    Err("the preview does not rebuild code with the recorded code_sha1".into())
}

fn sha1_hex(text: &str) -> String {
    use sha1::Digest;
    hex::encode(sha1::Sha1::digest(text.as_bytes()))
}

/// A recorded `python_exec` observation, as far as its preview shows it.
#[derive(Debug, Clone, PartialEq, Default)]
struct Observed {
    returncode: Option<i64>,
    stdout: String,
    stdout_complete: bool,
    stderr: String,
    stderr_complete: bool,
}

/// The recorded observation, from the output text (complete JSON, or a
/// preview cut after about 1,700 characters).
fn parse_recorded(text: &str) -> Option<Observed> {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let (stdout, stderr) = (s("stdout")?, s("stderr")?);
        return Some(Observed {
            returncode: v.get("returncode").and_then(Value::as_i64),
            stdout,
            stdout_complete: true,
            stderr,
            stderr_complete: true,
        });
    }
    let body = text.strip_suffix(TRUNCATION_MARKER)?;
    let body = body.strip_suffix('\n').unwrap_or(body);
    let returncode = body
        .split_once("\"returncode\": ")
        .and_then(|(_, rest)| rest.split([',', '\n']).next())
        .and_then(|n| n.trim().parse().ok());
    let (stdout, stdout_complete, after) = partial_string_field(body, "stdout")?;
    let (stderr, stderr_complete) =
        match after.and_then(|rest| partial_string_field(rest, "stderr")) {
            Some((s, complete, _)) => (s, complete),
            None => (String::new(), false),
        };
    Some(Observed {
        returncode,
        stdout,
        stdout_complete,
        stderr,
        stderr_complete,
    })
}

/// Decodes the JSON string value of `"field": "…` up to its closing quote
/// or the end of the cut text: (value, complete, text after the value).
fn partial_string_field<'a>(text: &'a str, field: &str) -> Option<(String, bool, Option<&'a str>)> {
    let key = format!("\"{field}\": \"");
    let start = text.find(&key)? + key.len();
    let mut out = String::new();
    let mut chars = text[start..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, true, Some(&text[start + i + 1..]))),
            '\\' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, 't')) => out.push('\t'),
                Some((_, 'r')) => out.push('\r'),
                Some((_, 'b')) => out.push('\u{8}'),
                Some((_, 'f')) => out.push('\u{c}'),
                Some((_, 'u')) => {
                    let hex: String = chars.by_ref().take(4).map(|(_, c)| c).collect();
                    let Ok(code) = u32::from_str_radix(&hex, 16) else {
                        return Some((out, false, None));
                    };
                    if (0xD800..0xDC00).contains(&code) {
                        // A surrogate pair: the low half follows as \uXXXX.
                        let low: String = chars.by_ref().skip(1).take(5).map(|(_, c)| c).collect();
                        let low = low
                            .strip_prefix('u')
                            .and_then(|h| u32::from_str_radix(h, 16).ok());
                        match low {
                            Some(low) => out.extend(char::from_u32(
                                0x10000 + ((code - 0xD800) << 10) + (low.saturating_sub(0xDC00)),
                            )),
                            None => return Some((out, false, None)),
                        }
                    } else {
                        out.extend(char::from_u32(code));
                    }
                }
                Some((_, other)) => out.push(other),
                None => return Some((out, false, None)),
            },
            c => out.push(c),
        }
    }
    Some((out, false, None))
}

/// The result of one replayed call.
#[derive(Debug, Clone, PartialEq, Default)]
struct Ours {
    returncode: i64,
    stdout: String,
    stderr: String,
    limit_hit: Option<String>,
}

enum Outcome {
    Identical(Option<&'static str>),
    Differs(DifferenceCategory, String),
    Skip(String),
}

/// Replays the `python_exec` calls of every recorded run under `runs_dir`
/// (default `<release>/exploration/trajectories`) against the packages of
/// `release_root`.
pub fn replay_python(
    release_root: &Path,
    runs_dir: Option<&Path>,
    options: &PythonReplayOptions,
) -> crate::Result<PythonReplayReport> {
    let started = std::time::Instant::now();
    let runs_dir = runs_dir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| release_root.join("exploration").join("trajectories"));
    let entries = load_recorded_runs(&runs_dir).map_err(|e| crate::Error::Io {
        path: runs_dir.clone(),
        source: std::io::Error::other(e.to_string()),
    })?;
    let inventories = crate::replay::load_inventories(&release_root.join("tasks"));
    let tool = Arc::new(PythonExec::new(options.python.clone()));
    let scratch_root = tempfile::Builder::new()
        .prefix("earthverse-python-replay-")
        .tempdir()
        .map_err(|e| crate::Error::Io {
            path: std::env::temp_dir(),
            source: e,
        })?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.jobs.clamp(1, 4))
        .enable_all()
        .build()
        .map_err(|e| crate::Error::Io {
            path: PathBuf::from("tokio runtime"),
            source: e,
        })?;
    let inventories = Arc::new(inventories);
    let semaphore = Arc::new(tokio::sync::Semaphore::new(options.jobs.max(1)));
    let results: Vec<Vec<(String, String, RecordedToolCall, Outcome)>> = runtime.block_on(async {
        let mut handles = Vec::new();
        for (index, entry) in entries.iter().enumerate() {
            let calls: Vec<RecordedToolCall> = entry
                .run
                .tool_calls
                .iter()
                .filter(|c| c.tool == crate::research::PYTHON_EXEC)
                .cloned()
                .collect();
            if calls.is_empty() {
                continue;
            }
            let (package_root, inventory_key) =
                crate::replay::package_of(release_root, &entry.task_id);
            let scratch = scratch_root.path().join(format!("run-{index}"));
            let (system, task) = (entry.system_id.clone(), entry.task_id.clone());
            let tool = Arc::clone(&tool);
            let semaphore = Arc::clone(&semaphore);
            let inventories = Arc::clone(&inventories);
            handles.push(tokio::spawn(async move {
                let _permit = semaphore.acquire_owned().await;
                let inventory = inventories.get(&inventory_key);
                let mut out = Vec::with_capacity(calls.len());
                let mut unreplayed_before = false;
                for call in calls {
                    let outcome = replay_one(
                        &tool,
                        &package_root,
                        &scratch,
                        inventory,
                        &call,
                        unreplayed_before,
                    )
                    .await;
                    if matches!(outcome, Outcome::Skip(_)) {
                        unreplayed_before = true;
                    }
                    out.push((system.clone(), task.clone(), call, outcome));
                }
                let _ = std::fs::remove_dir_all(&scratch);
                out
            }));
        }
        let mut all = Vec::with_capacity(handles.len());
        for handle in handles {
            all.push(handle.await.unwrap_or_default());
        }
        all
    });
    let mut report = PythonReplayReport {
        interpreter: options.python.interpreter.display().to_string(),
        runs: entries.len(),
        ..Default::default()
    };
    for (system, task, call, outcome) in results.into_iter().flatten() {
        report.calls += 1;
        match outcome {
            Outcome::Identical(normalised) => {
                report.compared += 1;
                report.comparable += 1;
                report.identical += 1;
                if let Some(n) = normalised {
                    *report.identical_normalised.entry(n.to_owned()).or_default() += 1;
                }
            }
            Outcome::Differs(category, reason) => {
                report.compared += 1;
                if !category.excluded_from_comparable() {
                    report.comparable += 1;
                }
                *report.categories.entry(category.name()).or_default() += 1;
                report.differing.push(Difference {
                    system,
                    task,
                    step: call.step,
                    tool: call.tool.clone(),
                    args: json!({"code_sha1": call.args.get("code_sha1")}),
                    category: category.name(),
                    reason,
                });
            }
            Outcome::Skip(reason) => {
                *report.skip_reasons.entry(reason.clone()).or_default() += 1;
                report.skipped.push(Skipped {
                    system,
                    task,
                    step: call.step,
                    tool: call.tool.clone(),
                    reason,
                });
            }
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

async fn replay_one(
    tool: &PythonExec,
    package_root: &Path,
    scratch: &Path,
    inventory: Option<&crate::replay::Inventory>,
    call: &RecordedToolCall,
    unreplayed_before: bool,
) -> Outcome {
    let code = match recover_code(&call.args) {
        Ok(code) => code,
        Err(reason) => return Outcome::Skip(reason),
    };
    let Some(text) = call.output_text() else {
        return Outcome::Skip("no recorded output text".into());
    };
    if !package_root.is_dir() {
        return Outcome::Skip("the package is not in this release".into());
    }
    // The authors' static filter refused the code: nothing ran there.
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        if v.get("error").and_then(Value::as_str) == Some("forbidden code terms") {
            return Outcome::Differs(
                DifferenceCategory::ReferenceRefusal,
                format!(
                    "the authors' harness refused the code for the terms {}; ours ran it",
                    v.get("terms").cloned().unwrap_or(Value::Null)
                ),
            );
        }
    }
    let Some(recorded) = parse_recorded(text) else {
        return Outcome::Skip("the recorded output is not a python_exec result".into());
    };
    if std::fs::create_dir_all(scratch).is_err() {
        return Outcome::Skip("cannot create the scratch directory".into());
    }
    let mut ctx = ToolContext::new(package_root, scratch);
    ctx.step = call.step.unwrap_or(0) as u32;
    let (output, report) = tool.run(&ctx, &json!({ "code": code })).await;
    let Some(ours) = ours_from(&output.output, report.limit_hit) else {
        let why = report
            .refused
            .unwrap_or_else(|| crate::render::render_output_text(&output.output));
        return Outcome::Skip(format!("our python_exec did not run: {why}"));
    };
    compare(
        &code,
        &recorded,
        &ours,
        package_root,
        inventory,
        unreplayed_before,
    )
}

fn ours_from(output: &Value, limit_hit: Option<String>) -> Option<Ours> {
    Some(Ours {
        returncode: output.get("returncode")?.as_i64()?,
        stdout: output.get("stdout")?.as_str()?.to_owned(),
        stderr: output.get("stderr")?.as_str()?.to_owned(),
        limit_hit,
    })
}

/// `ours` agrees with `recorded` (a prefix when the recording was cut).
/// The authors' harness stored stdout and stderr stripped of surrounding
/// white space (every recorded stream is), so both are compared stripped.
fn text_agrees(recorded: &str, complete: bool, ours: &str) -> bool {
    if complete {
        recorded.trim() == ours.trim()
    } else {
        ours.trim_start().starts_with(recorded.trim_start())
    }
}

fn agrees(recorded: &Observed, ours: &Ours, normalise: &dyn Fn(&str) -> String) -> bool {
    recorded.returncode.is_none_or(|c| c == ours.returncode)
        && text_agrees(
            &normalise(&recorded.stdout),
            recorded.stdout_complete,
            &normalise(&ours.stdout),
        )
        && text_agrees(
            &normalise(&recorded.stderr),
            recorded.stderr_complete,
            &normalise(&ours.stderr),
        )
}

fn re(pattern: &str) -> Regex {
    #[allow(clippy::expect_used)]
    Regex::new(pattern).expect("a valid built-in pattern")
}

/// A path with Windows separators (`data\\x`, `.\\data`).
static WINDOWS_PATH: LazyLock<Regex> = LazyLock::new(|| re(r"[\w.]\\{1,2}[\w.]"));

/// A traceback without its frame lines: `File "…", line N, in …`, the
/// source line and caret markers under it, and the header.
fn without_frames(text: &str) -> String {
    static CARETS: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*[\^~]+\s*$"));
    let mut out = Vec::new();
    let mut in_frame = false;
    for line in text.lines() {
        if line.starts_with("Traceback (most recent call last):") {
            in_frame = false;
            continue;
        }
        if line.starts_with("  File \"") {
            in_frame = true;
            continue;
        }
        if in_frame && (line.starts_with("    ") || CARETS.is_match(line)) {
            continue;
        }
        in_frame = false;
        out.push(line);
    }
    out.join("\n")
}

fn lines_sorted(text: &str) -> Vec<String> {
    let mut v: Vec<String> = TOKEN_SPLIT
        .split(text)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect();
    v.sort();
    v
}

static TOKEN_SPLIT: LazyLock<Regex> = LazyLock::new(|| re(r#"[\s,'"\[\]{}()]+"#));

/// Exception lines (`Name: message` or `Name`) of a text.
fn exceptions(text: &str) -> Vec<(String, String)> {
    static EXC: LazyLock<Regex> = LazyLock::new(|| {
        re(r"^([A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt))(?::\s*(.*))?$")
    });
    without_frames(text)
        .lines()
        .filter_map(|l| {
            EXC.captures(l.trim_end()).map(|c| {
                (
                    c[1].to_owned(),
                    c.get(2).map(|m| m.as_str().to_owned()).unwrap_or_default(),
                )
            })
        })
        .collect()
}

/// Numbers equal to 9 significant digits.
fn numbers_close(a: &str, b: &str) -> bool {
    static NUM: LazyLock<Regex> = LazyLock::new(|| re(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"));
    let rest = |s: &str| NUM.replace_all(s, "#").into_owned();
    if rest(a) != rest(b) {
        return false;
    }
    let nums = |s: &str| -> Vec<f64> {
        NUM.find_iter(s)
            .filter_map(|m| m.as_str().parse().ok())
            .collect()
    };
    let (x, y) = (nums(a), nums(b));
    x.len() == y.len()
        && x.iter()
            .zip(&y)
            .all(|(p, q)| p == q || (p - q).abs() <= 1e-9 * p.abs().max(q.abs()))
}

fn compare(
    code: &str,
    recorded: &Observed,
    ours: &Ours,
    package_root: &Path,
    inventory: Option<&crate::replay::Inventory>,
    unreplayed_before: bool,
) -> Outcome {
    use DifferenceCategory as C;
    let same = |s: &str| s.to_owned();
    if agrees(recorded, ours, &same) {
        return Outcome::Identical(None);
    }
    if agrees(recorded, ours, &without_frames) {
        return Outcome::Identical(Some("traceback_frames"));
    }
    let rec_all = format!("{}\n{}", recorded.stdout, recorded.stderr);
    let our_all = format!("{}\n{}", ours.stdout, ours.stderr);
    let detail = describe(recorded, ours);
    let differs =
        |c: DifferenceCategory, why: &str| Outcome::Differs(c, format!("{why}; {detail}"));
    // 1. Refusals of the authors' harness (its wrapper's guards).
    for guard in [
        "Import blocked in benchmark Python",
        "Reads are restricted to the event package",
        "Writes are restricted to",
    ] {
        if rec_all.contains(guard) && !our_all.contains(guard) {
            return differs(
                C::ReferenceRefusal,
                &format!("the authors' harness refused it (\"{guard}\"); our sandbox allowed it"),
            );
        }
    }
    let rec_body = without_frames(&rec_all);
    if rec_body.contains("guarded_") || rec_body.contains("_wrapper.py") {
        return differs(
            C::ReferenceWrapper,
            "the recorded output shows the authors' wrapper (guarded builtins)",
        );
    }
    static FS_QUERY: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"\b(?:listdir|scandir|walk|glob|iterdir|rglob|exists|isdir|isfile|is_dir|is_file|getsize|stat)\b",
        )
    });
    let first_difference = {
        let at = common_prefix_bytes(&rec_all, &our_all);
        (&rec_all[at..], &our_all[at..])
    };
    let saw_less = (recorded.stdout_complete
        && recorded.stdout.trim().len() < ours.stdout.trim().len())
        || (first_difference.0.starts_with("False") && first_difference.1.starts_with("True"));
    if FS_QUERY.is_match(code) && saw_less && !WINDOWS_PATH.is_match(&rec_all) {
        return differs(
            C::ReferenceWrapper,
            "the code queries the file system (exists / listdir / walk / glob) and the authors' wrapper, which mapped the package for reads only, saw less than ours",
        );
    }
    if code.contains("__import__") || code.contains("__builtins__") {
        return differs(
            C::ReferenceWrapper,
            "the code inspects builtins that the authors' wrapper replaced with its guards",
        );
    }
    // 2. Our sandbox's refusals.
    static REFUSED: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?i)operation not permitted|permission denied|network is unreachable|temporary failure in name resolution|name or service not known|read-only file system|\[Errno (?:1|13|30|101|-2|-3)\]",
        )
    });
    if REFUSED.is_match(&our_all) && !REFUSED.is_match(&rec_all) {
        return differs(
            C::SandboxRefusal,
            "our sandbox refused an operation the recorded run performed",
        );
    }
    // 3. Timeouts.
    static TIMEOUT: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?i)timed out|timeout|wall-clock limit"));
    if ours.limit_hit.as_deref() == Some("wall_clock")
        || (TIMEOUT.is_match(&recorded.stderr) && !TIMEOUT.is_match(&ours.stderr))
    {
        return differs(C::Timeout, "one side hit the 60 s wall clock");
    }
    // 4. Inputs: files absent or changed.
    static NOT_FOUND: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?:FileNotFoundError|No such file or directory)[^\n]*?'([^'\n]+)'"));
    let missing_ours: Vec<String> = NOT_FOUND
        .captures_iter(&our_all)
        .map(|c| c[1].to_owned())
        .collect();
    let missing_rec = NOT_FOUND.is_match(&rec_all);
    if !missing_ours.is_empty() && !missing_rec {
        let path = &missing_ours[0];
        let why = if unreplayed_before && !package_root.join(path).exists() {
            format!("{path} is absent: not in the public package, or written by an earlier call of the run that could not be replayed")
        } else {
            format!("{path} is absent from the public package")
        };
        return differs(C::FileAbsent, &why);
    }
    if let Some(inventory) = inventory {
        let changed: Vec<String> = inventory
            .keys()
            .filter(|rel| {
                let name = rel.rsplit('/').next().unwrap_or(rel);
                code.contains(name) || rec_all.contains(name)
            })
            .filter_map(|rel| crate::replay::file_change(package_root, inventory, rel, true))
            .collect();
        if let Some(first) = changed.first() {
            return differs(C::PackageChanged, first);
        }
    }
    for entry in ["README.md", "metadata"] {
        if rec_all.contains(entry) && !our_all.contains(entry) && !package_root.join(entry).exists()
        {
            return differs(
                C::PackageChanged,
                &format!("the recorded package had {entry}, which the public package lacks"),
            );
        }
    }
    // 5. Libraries.
    static NO_MODULE: LazyLock<Regex> = LazyLock::new(|| re(r"No module named '([^']+)'"));
    let modules = |s: &str| -> Vec<String> {
        let mut v: Vec<String> = NO_MODULE
            .captures_iter(s)
            .map(|c| c[1].to_owned())
            .collect();
        v.sort();
        v
    };
    if modules(&rec_all) != modules(&our_all) {
        return differs(C::LibraryMissing, "a module is importable on one side only");
    }
    static NP_SCALAR: LazyLock<Regex> =
        LazyLock::new(|| re(r"np\.(?:float|int|uint|bool|complex|str)_?(?:\d+)?\(([^()]*)\)"));
    static WARNING_LINE: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?m)^.*(?:DeprecationWarning|FutureWarning|UserWarning|RuntimeWarning|PendingDeprecationWarning).*$\n?(?:^\s+.*$\n?)?",
        )
    });
    let versionless = |s: &str| {
        let s = NP_SCALAR.replace_all(s, "$1");
        let s = WARNING_LINE.replace_all(&s, "");
        without_frames(&s)
    };
    if agrees(recorded, ours, &versionless) {
        return differs(
            C::LibraryVersion,
            "equal once numpy 2 scalar reprs and library warnings are set aside",
        );
    }
    let (rec_exc, our_exc) = (exceptions(&rec_all), exceptions(&our_all));
    if !rec_exc.is_empty()
        && rec_exc
            .iter()
            .map(|e| &e.0)
            .eq(our_exc.iter().map(|e| &e.0))
        && rec_exc != our_exc
    {
        return differs(C::PythonVersion, "the same exception, worded differently");
    }
    // 6. Platform paths.
    static DRIVE: LazyLock<Regex> = LazyLock::new(|| re(r"[A-Za-z]:(?:\\\\|\\|/)"));
    let posix = |s: &str| versionless(&s.replace("\\\\", "/").replace('\\', "/"));
    static WINDOWS_ERROR: LazyLock<Regex> =
        LazyLock::new(|| re(r"\[WinError \d+\]|Error: \[Errno \d+\] \p{Han}"));
    if WINDOWS_ERROR.is_match(&rec_all) && !WINDOWS_ERROR.is_match(&our_all) {
        return differs(
            C::Platform,
            "the recorded error is a Windows OS error (its wording, or a path Windows could not open)",
        );
    }
    if WINDOWS_PATH.is_match(&rec_all) && !WINDOWS_PATH.is_match(&our_all) {
        return differs(
            C::Platform,
            "the recorded output has Windows path separators",
        );
    }
    if DRIVE.is_match(&rec_all) || rec_all.contains('\\') {
        if agrees(recorded, ours, &posix) {
            return differs(C::Platform, "equal once Windows path separators are POSIX");
        }
        if DRIVE.is_match(&rec_all) && !DRIVE.is_match(&our_all) {
            return differs(
                C::Platform,
                "the recorded output names the authors' Windows paths",
            );
        }
    }
    // 7. Nondeterminism.
    static ADDRESS: LazyLock<Regex> = LazyLock::new(|| re(r"0x[0-9a-fA-F]{6,}"));
    let addressless = |s: &str| ADDRESS.replace_all(&posix(s), "0x…").into_owned();
    if agrees(recorded, ours, &addressless) {
        return differs(
            C::NondeterminismAddress,
            "equal once memory addresses are masked",
        );
    }
    static SPACES: LazyLock<Regex> = LazyLock::new(|| re(r"\s+"));
    let squeezed = |s: &str| SPACES.replace_all(s.trim(), " ").into_owned();
    if agrees(recorded, ours, &squeezed) {
        return differs(C::Whitespace, "equal up to white space");
    }
    let complete = recorded.stdout_complete && recorded.stderr_complete;
    let (rec_norm, our_norm) = (
        addressless(&format!(
            "{}\n{}",
            recorded.stdout.trim(),
            without_frames(&recorded.stderr).trim()
        )),
        addressless(&format!(
            "{}\n{}",
            ours.stdout.trim(),
            without_frames(&ours.stderr).trim()
        )),
    );
    if complete && lines_sorted(&rec_norm) == lines_sorted(&our_norm) {
        return differs(C::NondeterminismOrder, "the same items in another order");
    }
    static INTROSPECTION: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"__version__|\bsys\.version|\bversion\(|\bdir\(|__file__|\bhelp\(|\bplatform\.|sys\.path|importlib\.metadata",
        )
    });
    if INTROSPECTION.is_match(code) {
        return differs(
            C::LibraryVersion,
            "the code prints facts of the interpreter or its libraries (versions, module contents, paths)",
        );
    }
    static CLOCK_RANDOM: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"\b(?:time\.time|perf_counter|monotonic|datetime\.now|datetime\.utcnow|date\.today|random\.|np\.random|numpy\.random|uuid|os\.getpid|id\()",
        )
    });
    if CLOCK_RANDOM.is_match(code) {
        return differs(
            C::NondeterminismTimeRandom,
            "the code reads the clock or a random source",
        );
    }
    if complete && numbers_close(&rec_norm, &our_norm) {
        return differs(
            C::FloatRounding,
            "the same output with floats equal to 9 significant digits (Python 3.12's sum() adds floats with compensated summation; library versions order sums differently)",
        );
    }
    // 8. Output caps.
    if recorded.stdout.ends_with(TRUNCATION_MARKER) || ours.stdout.ends_with(TRUNCATION_MARKER) {
        let cut = |s: &str| s.strip_suffix(TRUNCATION_MARKER).unwrap_or(s).to_owned();
        let (a, b) = (cut(&recorded.stdout), cut(&ours.stdout));
        if a.starts_with(&b) || b.starts_with(&a) {
            return differs(C::Truncation, "the outputs agree up to where one was cut");
        }
    }
    differs(C::Unexplained, "no rule explains it")
}

/// Length in bytes of the common prefix of two texts, on a char boundary.
fn common_prefix_bytes(a: &str, b: &str) -> usize {
    a.char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or(a.len().min(b.len()), |((i, _), _)| i)
}

fn describe(recorded: &Observed, ours: &Ours) -> String {
    let at = |a: &str, b: &str| a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let window =
        |s: &str, i: usize| -> String { s.chars().skip(i.saturating_sub(30)).take(90).collect() };
    if recorded.returncode.is_some_and(|c| c != ours.returncode) {
        return format!(
            "return code recorded {:?}, ours {}; recorded stderr …{}…, ours …{}…",
            recorded.returncode,
            ours.returncode,
            window(
                &recorded.stderr,
                recorded.stderr.chars().count().saturating_sub(60)
            ),
            window(&ours.stderr, ours.stderr.chars().count().saturating_sub(60)),
        );
    }
    let (field, a, b) = if text_agrees(&recorded.stdout, recorded.stdout_complete, &ours.stdout) {
        ("stderr", &recorded.stderr, &ours.stderr)
    } else {
        ("stdout", &recorded.stdout, &ours.stdout)
    };
    let i = at(a, b);
    format!(
        "{field} differs at character {i}: recorded …{:?}…, ours …{:?}…",
        window(a, i),
        window(b, i)
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn observed(rc: i64, stdout: &str, stderr: &str) -> Observed {
        Observed {
            returncode: Some(rc),
            stdout: stdout.into(),
            stdout_complete: true,
            stderr: stderr.into(),
            stderr_complete: true,
        }
    }

    fn ours(rc: i64, stdout: &str, stderr: &str) -> Ours {
        Ours {
            returncode: rc,
            stdout: stdout.into(),
            stderr: stderr.into(),
            limit_hit: None,
        }
    }

    fn category(code: &str, rec: &Observed, our: &Ours) -> Option<DifferenceCategory> {
        match compare(code, rec, our, Path::new("/nonexistent"), None, false) {
            Outcome::Differs(c, _) => Some(c),
            Outcome::Identical(_) | Outcome::Skip(_) => None,
        }
    }

    #[test]
    fn code_is_rebuilt_from_a_stripped_preview_and_checked_by_its_digest() {
        let code = "\nprint(1)\n";
        let args = json!({
            "code_preview": "print(1)",
            "code_chars": 10,
            "code_sha1": &sha1_hex(code)[..12],
        });
        assert_eq!(recover_code(&args).unwrap(), code);
        let wrong = json!({"code_preview": "print(2)", "code_chars": 10, "code_sha1": &sha1_hex(code)[..12]});
        assert!(recover_code(&wrong).unwrap_err().contains("code_sha1"));
        let cut = json!({"code_preview": "print(1)\n...[TRUNCATED]...", "code_chars": 900, "code_sha1": "0"});
        assert!(recover_code(&cut).unwrap_err().contains("cut preview"));
        assert_eq!(recover_code(&json!({"code": "x = 1"})).unwrap(), "x = 1");
    }

    #[test]
    fn a_cut_recorded_output_is_read_up_to_the_cut() {
        let text = "{\n  \"code_path\": \"a.py\",\n  \"returncode\": 0,\n  \"latency_s\": 0.1,\n  \"stdout\": \"caf\\u00e9 line\\nsecond li\n...[TRUNCATED]...";
        let o = parse_recorded(text).unwrap();
        assert_eq!(o.returncode, Some(0));
        assert_eq!(o.stdout, "café line\nsecond li");
        assert!(!o.stdout_complete && !o.stderr_complete);
        // A prefix of ours agrees; another text does not.
        assert!(text_agrees(
            &o.stdout,
            false,
            "café line\nsecond li\nne 3\n"
        ));
        assert!(!text_agrees(&o.stdout, false, "cafe line\n"));
    }

    #[test]
    fn wrapper_traceback_frames_are_set_aside() {
        let rec = observed(1, "", "Traceback (most recent call last):\n  File \"runs/x_wrapper.py\", line 135, in <module>\n  File \"<agent_python_exec>\", line 2, in <module>\nKeyError: 'b'");
        let our = ours(1, "", "Traceback (most recent call last):\n  File \"/scratch/python_snippets/step_03_ab.py\", line 2, in <module>\n    print(x['b'])\n          ~^^^^^\nKeyError: 'b'\n");
        assert!(matches!(
            compare("", &rec, &our, Path::new("/"), None, false),
            Outcome::Identical(Some("traceback_frames"))
        ));
        // A different exception is not identical.
        let other = ours(1, "", "Traceback (most recent call last):\n  File \"/scratch/a.py\", line 2, in <module>\nKeyError: 'c'\n");
        assert_eq!(
            category("", &rec, &other),
            Some(DifferenceCategory::PythonVersion)
        );
    }

    #[test]
    fn each_rule_explains_its_kind_of_difference() {
        use DifferenceCategory as C;
        let c = |rec: Observed, our: Ours| category("print(x)", &rec, &our);
        assert_eq!(
            c(
                observed(0, "b.csv\na.csv\n", ""),
                ours(0, "a.csv\nb.csv\n", "")
            ),
            Some(C::NondeterminismOrder)
        );
        assert_eq!(
            c(
                observed(0, "<object object at 0x7f3a2c1b0e20>\n", ""),
                ours(0, "<object object at 0x7f11aa22bb30>\n", "")
            ),
            Some(C::NondeterminismAddress)
        );
        assert_eq!(
            c(
                observed(0, "[1.5]\n", ""),
                ours(0, "[np.float64(1.5)]\n", "")
            ),
            Some(C::LibraryVersion)
        );
        assert_eq!(
            c(
                observed(0, "0.30000000000000004\n", ""),
                ours(0, "0.3000000000000001\n", "")
            ),
            Some(C::FloatRounding)
        );
        assert_eq!(
            c(
                observed(0, "data\\x.csv\n", ""),
                ours(0, "data/x.csv\n", "")
            ),
            Some(C::Platform)
        );
        assert_eq!(
            c(
                observed(0, "ok\n", ""),
                ours(1, "", "ModuleNotFoundError: No module named 'geopandas'\n")
            ),
            Some(C::LibraryMissing)
        );
        assert_eq!(
            c(
                observed(0, "200\n", ""),
                ours(1, "", "OSError: [Errno 101] Network is unreachable\n")
            ),
            Some(C::SandboxRefusal)
        );
        assert_eq!(
            c(
                observed(
                    1,
                    "",
                    "PermissionError: Import blocked in benchmark Python: ctypes"
                ),
                ours(0, "ok\n", "")
            ),
            Some(C::ReferenceRefusal)
        );
        let long = "x".repeat(50);
        assert_eq!(
            c(
                observed(0, &format!("{long}y{TRUNCATION_MARKER}"), ""),
                ours(0, &format!("{long}{TRUNCATION_MARKER}"), "")
            ),
            Some(C::Truncation)
        );
        assert_eq!(
            category(
                "import random\nprint(random.random())",
                &observed(0, "0.1\n", ""),
                &ours(0, "0.7\n", "")
            ),
            Some(C::NondeterminismTimeRandom)
        );
        assert_eq!(
            c(
                observed(0, "12 rows\n", ""),
                ours(0, "13 rows and more\n", "")
            ),
            Some(C::Unexplained)
        );
        assert_eq!(
            category(
                "import os\nprint(os.listdir('data'))",
                &observed(0, "", ""),
                &ours(0, "['a.csv']\n", "")
            ),
            Some(C::ReferenceWrapper)
        );
        assert_eq!(
            c(observed(0, "a\n\nb", ""), ours(0, "a\n\n\n\nb\n", "")),
            Some(C::Whitespace)
        );
        let mut timed_out = ours(-9, "", "killed: wall-clock limit of 60 s exceeded");
        timed_out.limit_hit = Some("wall_clock".into());
        assert_eq!(c(observed(0, "done\n", ""), timed_out), Some(C::Timeout));
        assert_eq!(
            c(
                observed(0, "x\n", ""),
                ours(
                    1,
                    "",
                    "FileNotFoundError: [Errno 2] No such file or directory: 'data/gone.csv'\n"
                )
            ),
            Some(C::FileAbsent)
        );
    }
}
