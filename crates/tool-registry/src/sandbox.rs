//! The OS sandbox of `python_exec` (paper §3.4, Appendix C.2: 60 s per
//! call; `reference-harness.md`: reads only the package, the public question
//! and a per-run scratch directory; writes only scratch; no network, no
//! processes).
//!
//! Three layers, all set up without running non-async-signal-safe code
//! between `fork` and `exec` in the (multi-threaded) caller:
//!
//! 1. **bubblewrap** (`bwrap`) gives the child new user, PID, IPC, UTS,
//!    cgroup and **network** namespaces (no interface is up, so TCP and UDP
//!    both fail), drops every capability, clears the environment and builds
//!    a minimal filesystem view: the interpreter's directories and `/usr`
//!    read-only, the package read-only at `/evidence` (package-relative paths
//!    work from the working directory, and so do release-relative ones such
//!    as `event_packages/standard_event_packages/packages/CSX-001/...`),
//!    the question read-only at `/question.txt`, scratch read-write at
//!    `/scratch`, an empty `/tmp`. Hidden artifacts are masked by `/dev/null`.
//! 2. The small **helper** binary `earthverse-sandbox` (this crate's bin,
//!    re-executed inside bwrap; single-threaded) sets the **rlimits**
//!    (address space, CPU seconds, file size, processes, open files, no core
//!    dumps) and a **Landlock** ruleset: read-only beneath the system and
//!    evidence paths, read-write beneath `/scratch` and `/tmp`, execute only
//!    for the interpreter and the dynamic loader, every TCP bind/connect
//!    denied, signals and abstract UNIX sockets scoped to the sandbox; and a
//!    **seccomp** filter that denies creating processes (threads stay
//!    allowed: `RLIMIT_NPROC` does not bind a host-root caller); then it
//!    `exec`s Python. It reports what was enforced on its first stderr line,
//!    which the parent strips and puts in the [`SandboxReport`].
//! 3. The parent enforces the **wall-clock limit** (60 s) and the **output
//!    limits** (stdout 12,000 characters, stderr 4,000 shown; the child is
//!    killed past [`PythonLimits::max_output_bytes`]).
//!
//! When bwrap, the helper or Landlock is missing, `python_exec` refuses to run
//! unless the configuration carries [`SandboxPolicy::Unsandboxed`], an
//! explicit opt-out that is logged at `warn` and recorded in every call.
//!
//! numpy and pandas are not part of the system Python here: point
//! [`PythonConfig::interpreter`] at another interpreter, e.g. a venv
//! (`python3 -m venv /tmp/venv && /tmp/venv/bin/pip install numpy pandas`).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Prefix of the helper's status line on stderr.
pub const HELPER_STATUS_PREFIX: &str = "\u{1e}EARTHVERSE-SANDBOX ";

/// The helper's file name (a bin target of this crate).
pub const HELPER_NAME: &str = "earthverse-sandbox";

/// Resource limits of one Python call (Appendix C.2: 60 s wall).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PythonLimits {
    /// Wall-clock limit (paper: 60 s).
    #[serde(with = "secs")]
    pub wall: Duration,
    /// CPU seconds (`RLIMIT_CPU`).
    pub cpu_seconds: u64,
    /// Address-space bytes (`RLIMIT_AS`).
    pub memory_bytes: u64,
    /// Largest file the child may write (`RLIMIT_FSIZE`).
    pub file_size_bytes: u64,
    /// Processes and threads of the sandbox's user (`RLIMIT_NPROC`).
    pub max_processes: u64,
    /// Open file descriptors (`RLIMIT_NOFILE`).
    pub open_files: u64,
    /// Characters of stdout shown (reference: 12,000).
    pub stdout_chars: usize,
    /// Characters of stderr shown (reference: 4,000).
    pub stderr_chars: usize,
    /// Bytes of stdout + stderr after which the child is killed.
    pub max_output_bytes: usize,
}

mod secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::try_from_secs_f64(f64::deserialize(d)?).unwrap_or_default())
    }
}

impl Default for PythonLimits {
    fn default() -> Self {
        Self {
            wall: Duration::from_secs(60),
            cpu_seconds: 60,
            memory_bytes: 4 << 30,
            file_size_bytes: 256 << 20,
            max_processes: 64,
            open_files: 256,
            stdout_chars: 12_000,
            stderr_chars: 4_000,
            max_output_bytes: 8 << 20,
        }
    }
}

/// Whether Python may run without the OS sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "policy")]
#[non_exhaustive]
pub enum SandboxPolicy {
    /// Refuse to run Python unless bwrap, the helper and Landlock all work.
    #[default]
    Required,
    /// Explicit, logged opt-out: run Python without the OS sandbox (only the
    /// wall-clock and output limits apply). The reason is recorded.
    Unsandboxed {
        /// Why the operator opted out.
        reason: String,
    },
}

/// How `python_exec` runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PythonConfig {
    /// The interpreter (`python3` on `PATH` by default; a venv's
    /// `bin/python` to have numpy/pandas).
    pub interpreter: PathBuf,
    /// Sandbox policy.
    pub policy: SandboxPolicy,
    /// Limits.
    pub limits: PythonLimits,
    /// The `earthverse-sandbox` helper; found next to the running executable
    /// (or through `EARTHVERSE_SANDBOX_HELPER`) when `None`.
    pub helper: Option<PathBuf>,
    /// The bubblewrap executable.
    pub bwrap: PathBuf,
}

impl Default for PythonConfig {
    fn default() -> Self {
        Self {
            interpreter: PathBuf::from("python3"),
            policy: SandboxPolicy::Required,
            limits: PythonLimits::default(),
            helper: None,
            bwrap: PathBuf::from("bwrap"),
        }
    }
}

/// Which protections were in force for one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SandboxReport {
    /// Whether the OS sandbox was used at all.
    pub sandboxed: bool,
    /// One line per protection in force, e.g. `"bwrap: network namespace
    /// (no interfaces)"`, `"landlock: fully enforced (ABI 7)"`,
    /// `"rlimit: RLIMIT_AS=4294967296"`.
    pub protections: Vec<String>,
    /// Landlock status as reported by the helper.
    pub landlock: Option<String>,
    /// The limit that ended the call, if any: `wall_clock`, `cpu`,
    /// `memory`, `output`, `file_size`.
    pub limit_hit: Option<String>,
    /// The recorded opt-out reason when unsandboxed.
    pub opt_out: Option<String>,
    /// Why the call was refused, when the sandbox was unavailable.
    pub refused: Option<String>,
}

/// What the helper is asked to do (passed as one JSON argument).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HelperSpec {
    /// Paths readable (files and directories beneath).
    pub read: Vec<PathBuf>,
    /// Paths readable and writable.
    pub read_write: Vec<PathBuf>,
    /// Files that may be executed (interpreter, loader).
    pub execute: Vec<PathBuf>,
    /// `(resource, value)` pairs: `as`, `cpu`, `fsize`, `nproc`, `nofile`, `core`.
    pub rlimits: Vec<(String, u64)>,
    /// Program to exec.
    pub program: PathBuf,
    /// Its arguments (without argv\[0\]).
    pub args: Vec<String>,
}

/// What the helper reports on its first stderr line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HelperStatus {
    /// Protections applied.
    pub protections: Vec<String>,
    /// Landlock status.
    pub landlock: String,
    /// Whether Landlock restricts anything.
    pub landlock_enforced: bool,
}

/// Entry point of the `earthverse-sandbox` helper: applies rlimits and
/// Landlock to itself, reports, and execs the program. Returns an exit code
/// only on failure.
pub fn helper_main(args: &[String]) -> i32 {
    let Some(spec) = args.get(1) else {
        eprintln!("earthverse-sandbox: missing spec argument");
        return 125;
    };
    let spec: HelperSpec = match serde_json::from_str(spec) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("earthverse-sandbox: bad spec: {e}");
            return 125;
        }
    };
    let mut protections = Vec::new();
    for (name, value) in &spec.rlimits {
        match set_rlimit(name, *value) {
            Ok(()) => protections.push(format!("rlimit: {name}={value}")),
            Err(e) => {
                eprintln!("earthverse-sandbox: setrlimit {name}: {e}");
                return 125;
            }
        }
    }
    let (landlock, enforced) = match apply_landlock(&spec) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("earthverse-sandbox: landlock: {e}");
            return 125;
        }
    };
    if enforced {
        protections.push(format!("landlock: {landlock}"));
    }
    match deny_new_processes() {
        Ok(()) => protections.push(
            "seccomp: fork, vfork and process-creating clone denied (threads allowed); RLIMIT_NPROC does not bind a host-root caller".into(),
        ),
        Err(e) => {
            eprintln!("earthverse-sandbox: seccomp: {e}");
            return 125;
        }
    }
    let status = HelperStatus {
        protections,
        landlock,
        landlock_enforced: enforced,
    };
    eprintln!(
        "{HELPER_STATUS_PREFIX}{}",
        serde_json::to_string(&status).unwrap_or_default()
    );
    use std::os::unix::process::CommandExt;
    let err = std::process::Command::new(&spec.program)
        .args(&spec.args)
        .exec();
    eprintln!("earthverse-sandbox: exec {}: {err}", spec.program.display());
    126
}

/// A seccomp filter that lets the sandboxed process create threads but no
/// new processes (`fork`, `vfork`, `clone` without `CLONE_THREAD` fail with
/// `EAGAIN`; `clone3` with `ENOSYS` so libc falls back to `clone`). Needed
/// because `RLIMIT_NPROC` is not enforced for a caller that is host root.
#[cfg(target_arch = "x86_64")]
fn deny_new_processes() -> std::io::Result<()> {
    const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const JGE_K: u16 = 0x35;
    const JSET_K: u16 = 0x45;
    const RET_K: u16 = 0x06;
    const ALLOW: u32 = 0x7fff_0000;
    const ERRNO: u32 = 0x0005_0000;
    let ins = |code: u16, jt: u8, jf: u8, k: u32| libc::sock_filter { code, jt, jf, k };
    let filter = [
        ins(LD_W_ABS, 0, 0, 4),                        // 0: arch
        ins(JEQ_K, 0, 8, AUDIT_ARCH_X86_64),           // 1: other arch -> allow
        ins(LD_W_ABS, 0, 0, 0),                        // 2: syscall number
        ins(JGE_K, 7, 0, 0x4000_0000),                 // 3: x32 ABI -> deny
        ins(JEQ_K, 6, 0, 57),                          // 4: fork -> deny
        ins(JEQ_K, 5, 0, 58),                          // 5: vfork -> deny
        ins(JEQ_K, 5, 0, 435),                         // 6: clone3 -> ENOSYS
        ins(JEQ_K, 0, 2, 56),                          // 7: clone -> check flags
        ins(LD_W_ABS, 0, 0, 16),                       // 8: clone flags (low word)
        ins(JSET_K, 0, 1, libc::CLONE_THREAD as u32),  // 9: thread -> allow
        ins(RET_K, 0, 0, ALLOW),                       // 10
        ins(RET_K, 0, 0, ERRNO | libc::EAGAIN as u32), // 11
        ins(RET_K, 0, 0, ERRNO | libc::ENOSYS as u32), // 12
    ];
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: `prog` points to a valid filter that outlives the call; no new
    // privileges were already set by Landlock's restrict_self.
    let rc = unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &prog as *const libc::sock_fprog,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Other architectures: no filter (reported as an error so the sandbox
/// refuses rather than silently allowing processes).
#[cfg(not(target_arch = "x86_64"))]
fn deny_new_processes() -> std::io::Result<()> {
    Err(std::io::Error::other(
        "process-creation filter is only implemented for x86_64",
    ))
}

fn set_rlimit(name: &str, value: u64) -> std::io::Result<()> {
    let resource = match name {
        "as" => libc::RLIMIT_AS,
        "cpu" => libc::RLIMIT_CPU,
        "fsize" => libc::RLIMIT_FSIZE,
        "nproc" => libc::RLIMIT_NPROC,
        "nofile" => libc::RLIMIT_NOFILE,
        "core" => libc::RLIMIT_CORE,
        other => return Err(std::io::Error::other(format!("unknown rlimit {other}"))),
    };
    // The CPU hard limit sits one second above the soft one so the child
    // gets SIGXCPU first.
    let hard = if name == "cpu" {
        value.saturating_add(1)
    } else {
        value
    };
    let limit = libc::rlimit {
        rlim_cur: value as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: plain syscall with a valid pointer to a local struct.
    let rc = unsafe { libc::setrlimit(resource, &limit) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn apply_landlock(spec: &HelperSpec) -> Result<(String, bool), landlock::RulesetError> {
    use landlock::{
        Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
        RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
    };
    let abi = ABI::V7;
    // Files get only file rights, so the ruleset is enforced fully.
    let existing = |paths: &[PathBuf]| -> Vec<(PathFd, bool)> {
        paths
            .iter()
            .filter(|p| p.exists())
            .filter_map(|p| PathFd::new(p).ok().map(|fd| (fd, p.is_dir())))
            .collect()
    };
    let fit = |rights: landlock::BitFlags<AccessFs>, is_dir: bool| {
        if is_dir {
            rights
        } else {
            rights & AccessFs::from_file(abi)
        }
    };
    let read = AccessFs::from_read(abi) & !AccessFs::Execute;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))?
        .handle_access(AccessNet::from_all(abi))?
        .scope(Scope::from_all(abi))?
        .create()?;
    for (fd, is_dir) in existing(&spec.read) {
        ruleset = ruleset.add_rule(PathBeneath::new(fd, fit(read, is_dir)))?;
    }
    for (fd, is_dir) in existing(&spec.read_write) {
        ruleset = ruleset.add_rule(PathBeneath::new(
            fd,
            fit(AccessFs::from_all(abi) & !AccessFs::Execute, is_dir),
        ))?;
    }
    for (fd, _) in existing(&spec.execute) {
        ruleset = ruleset.add_rule(PathBeneath::new(fd, AccessFs::Execute | AccessFs::ReadFile))?;
    }
    let status = ruleset.restrict_self()?;
    let described = match status.ruleset {
        RulesetStatus::FullyEnforced => "fully enforced (requested ABI 7)".to_string(),
        RulesetStatus::PartiallyEnforced => {
            "partially enforced (kernel older than ABI 7)".to_string()
        }
        RulesetStatus::NotEnforced => "not enforced (kernel without Landlock)".to_string(),
    };
    Ok((described, status.ruleset != RulesetStatus::NotEnforced))
}

/// Finds the helper binary: the configured path, `EARTHVERSE_SANDBOX_HELPER`,
/// or `earthverse-sandbox` beside the running executable (or one directory
/// up, for test binaries in `target/*/deps`).
pub fn find_helper(configured: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = configured {
        return p.is_file().then(|| p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("EARTHVERSE_SANDBOX_HELPER") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Some(p);
        }
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [dir.join(HELPER_NAME), dir.parent()?.join(HELPER_NAME)]
        .into_iter()
        .find(|p| p.is_file())
}

/// Finds an executable on `PATH` (or returns the path if it has a slash).
pub(crate) fn which(program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return program.is_file().then(|| program.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Where an interpreter lives, asked once from the interpreter itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterpreterInfo {
    /// `sys.executable` (kept unresolved so a venv stays a venv).
    pub executable: PathBuf,
    /// `realpath(sys.executable)`.
    pub real_executable: PathBuf,
    /// `sys.prefix`.
    pub prefix: PathBuf,
    /// `sys.base_prefix`.
    pub base_prefix: PathBuf,
}

/// Asks `interpreter` where it lives (runs it once, outside the sandbox:
/// the interpreter is the operator's choice, not the model's).
pub async fn probe_interpreter(interpreter: &Path) -> Result<InterpreterInfo, String> {
    let script = "import sys, os, json; print(json.dumps({'executable': sys.executable, \
                  'real_executable': os.path.realpath(sys.executable), 'prefix': sys.prefix, \
                  'base_prefix': sys.base_prefix}))";
    let out = tokio::process::Command::new(interpreter)
        .args(["-I", "-c", script])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| format!("cannot run {}: {e}", interpreter.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed: {}",
            interpreter.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("unexpected reply from {}: {e}", interpreter.display()))
}

/// The in-sandbox path of the evidence view (working directory).
pub const EVIDENCE_DIR: &str = "/evidence";
/// The in-sandbox scratch directory.
pub const SCRATCH_DIR: &str = "/scratch";
/// The in-sandbox question file.
pub const QUESTION_FILE: &str = "/question.txt";

/// Everything needed to spawn one sandboxed Python call, built in the
/// parent before any fork.
#[derive(Debug, Clone)]
pub(crate) struct SandboxPlan {
    pub bwrap: PathBuf,
    pub args: Vec<String>,
    pub protections: Vec<String>,
}

fn push(args: &mut Vec<String>, items: &[&str]) {
    args.extend(items.iter().map(|s| s.to_string()));
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Builds the bwrap command line for running `script_in_sandbox` with
/// `info`'s interpreter over the package of `package_root`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan(
    bwrap: &Path,
    helper: &Path,
    info: &InterpreterInfo,
    limits: &PythonLimits,
    package_root: &Path,
    release_prefix: &str,
    scratch: &Path,
    question: Option<&Path>,
    script_in_sandbox: &str,
) -> std::io::Result<SandboxPlan> {
    let mut a: Vec<String> = Vec::new();
    push(
        &mut a,
        &[
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--clearenv",
        ],
    );
    // System directories: bind real directories, recreate merged-/usr symlinks.
    let mut read_paths: Vec<PathBuf> = Vec::new();
    for dir in ["/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32"] {
        let p = Path::new(dir);
        match std::fs::symlink_metadata(p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(p)?;
                push(&mut a, &["--symlink", &path_str(&target), dir]);
            }
            Ok(m) if m.is_dir() => {
                push(&mut a, &["--ro-bind", dir, dir]);
                read_paths.push(p.to_path_buf());
            }
            _ => {}
        }
    }
    for dir in [&info.prefix, &info.base_prefix] {
        if !dir.starts_with("/usr") {
            let d = path_str(dir);
            push(&mut a, &["--ro-bind", &d, &d]);
            read_paths.push(dir.clone());
        }
    }
    for exe in [&info.executable, &info.real_executable] {
        if let Some(parent) = exe.parent() {
            if !read_paths.iter().any(|r| parent.starts_with(r)) {
                let d = path_str(parent);
                push(&mut a, &["--ro-bind", &d, &d]);
                read_paths.push(parent.to_path_buf());
            }
        }
    }
    let helper_s = path_str(helper);
    push(&mut a, &["--ro-bind", &helper_s, "/run/earthverse-sandbox"]);
    push(
        &mut a,
        &["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"],
    );
    // The evidence view: the package's top-level entries, and the package
    // again under its release-relative path.
    push(&mut a, &["--dir", EVIDENCE_DIR]);
    let root = package_root.canonicalize()?;
    let mut entries: Vec<_> = std::fs::read_dir(&root)?.filter_map(|e| e.ok()).collect();
    entries.sort_by_key(|e| e.file_name());
    let mut hidden: Vec<String> = Vec::new();
    for entry in &entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if earthverse_package_model::evidence::hidden_artifact_name(&name).is_some() {
            continue;
        }
        let src = path_str(&entry.path());
        push(
            &mut a,
            &["--ro-bind", &src, &format!("{EVIDENCE_DIR}/{name}")],
        );
    }
    let release_view = format!("{EVIDENCE_DIR}/{}", release_prefix.trim_matches('/'));
    if !release_prefix.trim_matches('/').is_empty() {
        push(&mut a, &["--ro-bind", &path_str(&root), &release_view]);
    }
    for entry in walkdir::WalkDir::new(&root)
        .follow_links(false)
        .into_iter()
        .filter_map(|e| e.ok())
    {
        let name = entry.file_name().to_string_lossy();
        if entry.depth() > 0
            && earthverse_package_model::evidence::hidden_artifact_name(&name).is_some()
        {
            if let Ok(rel) = entry.path().strip_prefix(&root) {
                hidden.push(path_str(rel));
            }
        }
    }
    for rel in &hidden {
        // Top-level hidden entries were never bound; deeper ones are masked.
        if rel.contains('/') {
            push(
                &mut a,
                &["--ro-bind", "/dev/null", &format!("{EVIDENCE_DIR}/{rel}")],
            );
        }
        if !release_prefix.is_empty() {
            push(
                &mut a,
                &["--ro-bind", "/dev/null", &format!("{release_view}/{rel}")],
            );
        }
    }
    push(&mut a, &["--bind", &path_str(scratch), SCRATCH_DIR]);
    if let Some(q) = question {
        push(&mut a, &["--ro-bind", &path_str(q), QUESTION_FILE]);
    }
    push(&mut a, &["--chdir", EVIDENCE_DIR]);
    for (k, v) in [
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("HOME", SCRATCH_DIR),
        ("TMPDIR", "/tmp"),
        ("LANG", "C.UTF-8"),
        ("EARTHVERSE_SCRATCH", SCRATCH_DIR),
        ("EARTHVERSE_QUESTION", QUESTION_FILE),
        ("OMP_NUM_THREADS", "1"),
        ("OPENBLAS_NUM_THREADS", "1"),
        ("MKL_NUM_THREADS", "1"),
        ("MPLBACKEND", "Agg"),
    ] {
        push(&mut a, &["--setenv", k, v]);
    }
    // The Landlock ruleset and rlimits the helper applies inside.
    let mut read: Vec<PathBuf> = read_paths.clone();
    read.push(PathBuf::from(EVIDENCE_DIR));
    read.push(PathBuf::from(QUESTION_FILE));
    read.push(PathBuf::from("/dev/urandom"));
    read.push(PathBuf::from("/dev/zero"));
    let read_write = vec![
        PathBuf::from(SCRATCH_DIR),
        PathBuf::from("/tmp"),
        PathBuf::from("/dev/null"),
    ];
    let mut execute = vec![info.executable.clone(), info.real_executable.clone()];
    for loader in [
        "/lib64/ld-linux-x86-64.so.2",
        "/lib/ld-linux-aarch64.so.1",
        "/lib/ld-linux-x86-64.so.2",
    ] {
        let p = Path::new(loader);
        if let Ok(real) = p.canonicalize() {
            execute.push(p.to_path_buf());
            execute.push(real);
        }
    }
    let spec = HelperSpec {
        read,
        read_write,
        execute,
        rlimits: vec![
            ("as".into(), limits.memory_bytes),
            ("cpu".into(), limits.cpu_seconds),
            ("fsize".into(), limits.file_size_bytes),
            ("nproc".into(), limits.max_processes),
            ("nofile".into(), limits.open_files),
            ("core".into(), 0),
        ],
        program: info.executable.clone(),
        args: vec!["-I".into(), "-u".into(), script_in_sandbox.into()],
    };
    let spec_json = serde_json::to_string(&spec).map_err(std::io::Error::other)?;
    push(&mut a, &["--", "/run/earthverse-sandbox", &spec_json]);
    let protections = vec![
        "bwrap: new user, pid, ipc, uts, cgroup and network namespaces (no network interface: TCP and UDP fail)".to_string(),
        "bwrap: all capabilities dropped, environment cleared, new session".to_string(),
        format!(
            "bwrap: filesystem view limited to system libraries, the interpreter, the package (read-only at {EVIDENCE_DIR}), \
             the question (read-only), scratch (read-write at {SCRATCH_DIR}) and an empty /tmp; {} hidden artifact(s) masked",
            hidden.len()
        ),
        format!("wall clock: {} s", limits.wall.as_secs_f64()),
        format!(
            "output: stdout {} chars, stderr {} chars shown; killed past {} bytes",
            limits.stdout_chars, limits.stderr_chars, limits.max_output_bytes
        ),
    ];
    Ok(SandboxPlan {
        bwrap: bwrap.to_path_buf(),
        args: a,
        protections,
    })
}
