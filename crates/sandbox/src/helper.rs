//! The helper that runs inside bubblewrap: it applies rlimits, a Landlock
//! ruleset and a seccomp filter to itself, reports them on its first stderr
//! line and execs the interpreter. Single-threaded, so nothing runs between
//! `fork` and `exec` in a multi-threaded parent.
//!
//! Where the helper comes from ([`locate_helper`]):
//! 1. `PythonConfig::helper` or `EARTHVERSE_SANDBOX_HELPER`: a standalone
//!    `earthverse-sandbox` binary (this crate's bin);
//! 2. the running program itself, when its `main` called
//!    [`run_helper_if_invoked`] first: it is then re-executed inside
//!    bubblewrap as `PROGRAM __earthverse-sandbox-helper SPEC`. The
//!    `earthverse` binary does this, so one binary carries its sandbox; a
//!    program embedding `python_exec` does the same with one line;
//! 3. `earthverse-sandbox` beside the running executable (or one directory
//!    up, for test binaries in `target/*/deps`).
//!
//! None found: `python_exec` refuses (fail-closed), naming these three ways.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Prefix of the helper's status line on stderr.
pub const HELPER_STATUS_PREFIX: &str = "\u{1e}EARTHVERSE-SANDBOX ";

/// The standalone helper's file name (this crate's bin).
pub const HELPER_NAME: &str = "earthverse-sandbox";

/// The first argument that turns a program calling
/// [`run_helper_if_invoked`] into the helper.
pub const HELPER_ARG: &str = "__earthverse-sandbox-helper";

/// Set once the running program has called [`run_helper_if_invoked`].
static SELF_HELPER: AtomicBool = AtomicBool::new(false);

/// Call first in `main`, before any thread is started: when the program was
/// re-executed as the sandbox helper (first argument [`HELPER_ARG`]) this
/// runs the helper and never returns; otherwise it marks the program as
/// able to serve as its own helper, so `python_exec` needs no second binary.
///
/// The first line of such a program's `main`:
///
/// ```no_run
/// earthverse_sandbox::run_helper_if_invoked();
/// // ... the program, which may run python_exec in the sandbox
/// ```
pub fn run_helper_if_invoked() {
    let mut args = std::env::args_os();
    let _program = args.next();
    if args.next().as_deref() == Some(std::ffi::OsStr::new(HELPER_ARG)) {
        let rest: Vec<String> = std::iter::once(HELPER_ARG.to_string())
            .chain(args.map(|a| a.to_string_lossy().into_owned()))
            .collect();
        std::process::exit(helper_main(&rest));
    }
    SELF_HELPER.store(true, Ordering::SeqCst);
}

/// How to start the helper: a program and the arguments before the spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelperCommand {
    /// The executable (bound read-only into the sandbox).
    pub program: PathBuf,
    /// Arguments before the JSON spec (`[HELPER_ARG]` for a program that is
    /// its own helper, none for the standalone helper).
    pub args: Vec<String>,
}

impl HelperCommand {
    /// The standalone `earthverse-sandbox` binary at `program`.
    pub fn standalone(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
        }
    }

    /// A program whose `main` starts with [`run_helper_if_invoked`] (such as
    /// the `earthverse` binary), run as `PROGRAM __earthverse-sandbox-helper`.
    pub fn self_helper(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: vec![HELPER_ARG.to_string()],
        }
    }
}

/// Finds the helper (see the module docs for the order); `Err` says, in
/// words a user can act on, what is missing.
pub fn locate_helper(configured: Option<&HelperCommand>) -> Result<HelperCommand, String> {
    let standalone = HelperCommand::standalone;
    if let Some(helper) = configured {
        return if helper.program.is_file() {
            Ok(helper.clone())
        } else {
            Err(format!(
                "the configured sandbox helper {} does not exist",
                helper.program.display()
            ))
        };
    }
    if let Some(p) = std::env::var_os("EARTHVERSE_SANDBOX_HELPER") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(standalone(p))
        } else {
            Err(format!(
                "EARTHVERSE_SANDBOX_HELPER names {}, which does not exist",
                p.display()
            ))
        };
    }
    let exe = std::env::current_exe().ok();
    if SELF_HELPER.load(Ordering::SeqCst) {
        if let Some(exe) = exe.as_ref().filter(|e| e.is_file()) {
            return Ok(HelperCommand::self_helper(exe.clone()));
        }
    }
    let beside = exe.as_ref().and_then(|exe| {
        let dir = exe.parent()?;
        [
            Some(dir.join(HELPER_NAME)),
            dir.parent().map(|d| d.join(HELPER_NAME)),
        ]
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
    });
    beside.map(standalone).ok_or_else(|| {
        format!(
            "no sandbox helper: this program did not call earthverse_sandbox::run_helper_if_invoked() \
             at the start of main, EARTHVERSE_SANDBOX_HELPER is unset, and no `{HELPER_NAME}` binary \
             is beside the executable (build one with `cargo build -p earthverse-sandbox`)"
        )
    })
}

/// Finds an executable on `PATH` (or returns the path if it has a slash).
pub fn which(program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return program.is_file().then(|| program.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
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
