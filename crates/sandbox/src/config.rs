//! What one `python_exec` call may use ([`PythonLimits`], Appendix C.2),
//! whether it may run without the OS sandbox ([`SandboxPolicy`]), how it
//! runs ([`PythonConfig`]) and what was in force ([`SandboxReport`]).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

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
    /// `bin/python` to have numpy/pandas). [`PythonConfig::discover`] picks
    /// the scientific environment when there is one
    /// ([`crate::resolve_interpreter`]).
    pub interpreter: PathBuf,
    /// Sandbox policy.
    pub policy: SandboxPolicy,
    /// Limits.
    pub limits: PythonLimits,
    /// The helper to run: a standalone `earthverse-sandbox` binary
    /// (`HelperCommand::standalone`), or a program that is its own helper
    /// (`HelperCommand::self_helper`, e.g. the `earthverse` binary). When
    /// `None` it is found by [`crate::locate_helper`]:
    /// `EARTHVERSE_SANDBOX_HELPER`, then the running program itself if its
    /// `main` called [`crate::run_helper_if_invoked`] (the `earthverse`
    /// binary does), then `earthverse-sandbox` beside the running executable.
    pub helper: Option<crate::HelperCommand>,
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

impl PythonConfig {
    /// The default configuration with the interpreter chosen as
    /// `earthverse run` chooses it ([`crate::resolve_interpreter`]: an
    /// explicit path, else `EARTHVERSE_PYTHON`, else the scientific
    /// environment made by `scripts/python-env.sh`, else `python3`).
    pub fn discover(explicit: Option<PathBuf>) -> (Self, crate::InterpreterSource) {
        let (interpreter, source) = crate::resolve_interpreter(explicit);
        (
            Self {
                interpreter,
                ..Self::default()
            },
            source,
        )
    }
}
