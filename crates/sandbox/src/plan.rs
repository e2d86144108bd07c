//! The bubblewrap command line of one sandboxed call: the namespaces, the
//! filesystem view (system libraries and the interpreter read-only, the
//! package read-only at [`EVIDENCE_DIR`], scratch read-write at
//! [`SCRATCH_DIR`]), the environment, and the spec the helper applies
//! inside (Landlock paths, rlimits, the program to exec).

use crate::config::PythonLimits;
use crate::helper::{HelperCommand, HelperSpec};
use crate::interpreter::InterpreterInfo;
use std::path::{Path, PathBuf};

/// The in-sandbox path of the evidence view (working directory).
pub const EVIDENCE_DIR: &str = "/evidence";
/// The in-sandbox scratch directory.
pub const SCRATCH_DIR: &str = "/scratch";
/// The in-sandbox question file.
pub const QUESTION_FILE: &str = "/question.txt";
/// Where the helper is bound inside the sandbox.
pub const HELPER_IN_SANDBOX: &str = "/run/earthverse-sandbox";

/// Everything needed to spawn one sandboxed call, built in the parent
/// before any fork.
#[derive(Debug, Clone)]
pub struct SandboxPlan {
    /// The bubblewrap executable.
    pub bwrap: PathBuf,
    /// Its arguments, ending with the helper, its spec and the program.
    pub args: Vec<String>,
    /// The protections bubblewrap and the parent put in force (the helper
    /// reports its own on its status line).
    pub protections: Vec<String>,
}

/// What one sandboxed call sees: the package, the question, scratch.
#[derive(Clone, Copy)]
pub struct SandboxView<'a> {
    /// The event package (bound read-only at [`EVIDENCE_DIR`]).
    pub package_root: &'a Path,
    /// The package's release-relative path (e.g.
    /// `event_packages/standard_event_packages/packages/CSX-001`), bound
    /// again under [`EVIDENCE_DIR`] so such paths work too; may be empty.
    pub release_prefix: &'a str,
    /// The per-run scratch directory (read-write at [`SCRATCH_DIR`]).
    pub scratch: &'a Path,
    /// The public question (read-only at [`QUESTION_FILE`]).
    pub question: Option<&'a Path>,
    /// Names that must never be visible (hidden artifacts such as
    /// `computed_gt.json`): top-level entries are not bound, deeper ones are
    /// masked by `/dev/null`.
    pub is_hidden: &'a dyn Fn(&str) -> bool,
}

impl std::fmt::Debug for SandboxView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxView")
            .field("package_root", &self.package_root)
            .field("release_prefix", &self.release_prefix)
            .field("scratch", &self.scratch)
            .field("question", &self.question)
            .finish_non_exhaustive()
    }
}

fn push(args: &mut Vec<String>, items: &[&str]) {
    args.extend(items.iter().map(|s| s.to_string()));
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// A program run in the sandbox instead of the Python interpreter (the
/// scientific environments of `earthverse-environments`: CDO, NCO, R, NCL,
/// a compiled Fortran adapter): the same namespaces, filesystem view,
/// Landlock ruleset, seccomp filter and limits as `python_exec`, with the
/// program's own directories bound read-only and only its files executable.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SandboxProgram {
    /// The executable (absolute path; bound read-only, executable).
    pub executable: PathBuf,
    /// Its arguments (without argv\[0\]).
    pub args: Vec<String>,
    /// Directories or files outside `/usr` the program reads (bound
    /// read-only at the same path), e.g. `/etc/R` or a virtual environment.
    pub read_only: Vec<PathBuf>,
    /// Further files it may execute besides itself and the dynamic loader
    /// (e.g. the real interpreter behind a venv's symlink).
    pub execute: Vec<PathBuf>,
    /// Environment variables set for it, after the sandbox's own
    /// (`PATH`, `HOME=/scratch`, `TMPDIR=/tmp`, `LANG`, one thread each for
    /// OpenMP/BLAS).
    pub env: Vec<(String, String)>,
}

impl SandboxProgram {
    /// `info`'s interpreter running `script_in_sandbox` isolated (`-I -u`).
    pub fn python(info: &InterpreterInfo, script_in_sandbox: &str) -> Self {
        let mut read_only = Vec::new();
        for dir in [&info.prefix, &info.base_prefix] {
            if !dir.starts_with("/usr") {
                read_only.push(dir.clone());
            }
        }
        for exe in [&info.executable, &info.real_executable] {
            if let Some(parent) = exe.parent() {
                read_only.push(parent.to_path_buf());
            }
        }
        Self {
            executable: info.executable.clone(),
            args: vec!["-I".into(), "-u".into(), script_in_sandbox.into()],
            read_only,
            execute: vec![info.real_executable.clone()],
            env: Vec::new(),
        }
    }
}

/// Builds the bwrap command line that runs `script_in_sandbox` (a path
/// inside the sandbox, usually under [`SCRATCH_DIR`]) with `info`'s
/// interpreter over `view`.
pub fn plan(
    bwrap: &Path,
    helper: &HelperCommand,
    info: &InterpreterInfo,
    limits: &PythonLimits,
    view: &SandboxView<'_>,
    script_in_sandbox: &str,
) -> std::io::Result<SandboxPlan> {
    plan_program(
        bwrap,
        helper,
        &SandboxProgram::python(info, script_in_sandbox),
        limits,
        view,
    )
}

/// Builds the bwrap command line that runs `program` over `view`, with the
/// protections of [`plan`].
pub fn plan_program(
    bwrap: &Path,
    helper: &HelperCommand,
    program: &SandboxProgram,
    limits: &PythonLimits,
    view: &SandboxView<'_>,
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
    // What the dynamic loader reads to find shared libraries: its cache, and
    // Debian's alternatives (e.g. libblas.so.3 -> /etc/alternatives/...,
    // needed by a helper linked with GDAL and by system numpy). Symlinks and
    // a list of library paths only; the rest of /etc stays out of view.
    for path in ["/etc/ld.so.cache", "/etc/alternatives"] {
        let p = Path::new(path);
        if p.exists() {
            push(&mut a, &["--ro-bind", path, path]);
            read_paths.push(p.to_path_buf());
        }
    }
    // /proc, /dev and an empty /tmp first, so that a program or environment
    // that lives under /tmp (a virtual environment, a compiled adapter) is
    // bound on top of the empty /tmp rather than hidden by it.
    push(
        &mut a,
        &["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"],
    );
    let own_dir = program.executable.parent().map(Path::to_path_buf);
    for dir in program.read_only.iter().chain(own_dir.as_ref()) {
        if !read_paths.iter().any(|r| dir.starts_with(r)) {
            let d = path_str(dir);
            push(&mut a, &["--ro-bind", &d, &d]);
            read_paths.push(dir.clone());
        }
    }
    let helper_s = path_str(&helper.program);
    push(&mut a, &["--ro-bind", &helper_s, HELPER_IN_SANDBOX]);
    // The evidence view: the package's top-level entries, and the package
    // again under its release-relative path.
    push(&mut a, &["--dir", EVIDENCE_DIR]);
    let root = view.package_root.canonicalize()?;
    let mut entries: Vec<_> = std::fs::read_dir(&root)?.filter_map(|e| e.ok()).collect();
    entries.sort_by_key(|e| e.file_name());
    let mut hidden: Vec<String> = Vec::new();
    for entry in &entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if (view.is_hidden)(&name) {
            continue;
        }
        let src = path_str(&entry.path());
        push(
            &mut a,
            &["--ro-bind", &src, &format!("{EVIDENCE_DIR}/{name}")],
        );
    }
    let release_view = format!("{EVIDENCE_DIR}/{}", view.release_prefix.trim_matches('/'));
    if !view.release_prefix.trim_matches('/').is_empty() {
        push(&mut a, &["--ro-bind", &path_str(&root), &release_view]);
    }
    for entry in walkdir::WalkDir::new(&root)
        .follow_links(false)
        .into_iter()
        .filter_map(|e| e.ok())
    {
        let name = entry.file_name().to_string_lossy();
        if entry.depth() > 0 && (view.is_hidden)(&name) {
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
        if !view.release_prefix.is_empty() {
            push(
                &mut a,
                &["--ro-bind", "/dev/null", &format!("{release_view}/{rel}")],
            );
        }
    }
    push(&mut a, &["--bind", &path_str(view.scratch), SCRATCH_DIR]);
    if let Some(q) = view.question {
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
    for (k, v) in &program.env {
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
    let mut execute = vec![program.executable.clone()];
    execute.extend(program.execute.iter().cloned());
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
        program: program.executable.clone(),
        args: program.args.clone(),
    };
    let spec_json = serde_json::to_string(&spec).map_err(std::io::Error::other)?;
    a.push("--".into());
    a.push(HELPER_IN_SANDBOX.into());
    a.extend(helper.args.iter().cloned());
    a.push(spec_json);
    let protections = vec![
        "bwrap: new user, pid, ipc, uts, cgroup and network namespaces (no network interface: TCP and UDP fail)".to_string(),
        "bwrap: all capabilities dropped, environment cleared, new session".to_string(),
        format!(
            "bwrap: filesystem view limited to system libraries (with the loader cache and /etc/alternatives), the program ({}), the package (read-only at {EVIDENCE_DIR}), \
             the question (read-only), scratch (read-write at {SCRATCH_DIR}) and an empty /tmp; {} hidden artifact(s) masked",
            program.executable.display(),
            hidden.len()
        ),
        format!(
            "helper: {}{}",
            helper.program.display(),
            if helper.args.is_empty() {
                " (standalone)"
            } else {
                " (the running program, re-executed)"
            }
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
