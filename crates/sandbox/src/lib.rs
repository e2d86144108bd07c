//! # earthverse-sandbox
//!
//! The OS sandbox of `python_exec` (paper §3.4, Appendix C.2: 60 s per
//! call; `reference-harness.md`: reads only the package, the public question
//! and a per-run scratch directory; writes only scratch; no network, no
//! processes), and the scientific Python environment it runs.
//!
//! Three layers, all set up without running non-async-signal-safe code
//! between `fork` and `exec` in the (multi-threaded) caller:
//!
//! 1. **bubblewrap** (`bwrap`, [`plan()`]) gives the child new user, PID, IPC,
//!    UTS, cgroup and **network** namespaces (no interface is up, so TCP and
//!    UDP both fail), drops every capability, clears the environment and
//!    builds a minimal filesystem view: the interpreter's directories and
//!    `/usr` read-only, the package read-only at `/evidence` (package-relative
//!    paths work from the working directory, and so do release-relative ones
//!    such as `event_packages/standard_event_packages/packages/CSX-001/...`),
//!    the question read-only at `/question.txt`, scratch read-write at
//!    `/scratch`, an empty `/tmp`. Hidden artifacts are masked by `/dev/null`.
//! 2. The **helper** ([`helper_main`], re-executed inside bwrap;
//!    single-threaded) sets the **rlimits** (address space, CPU seconds, file
//!    size, processes, open files, no core dumps) and a **Landlock** ruleset:
//!    read-only beneath the system and evidence paths, read-write beneath
//!    `/scratch` and `/tmp`, execute only for the interpreter and the dynamic
//!    loader, every TCP bind/connect denied, signals and abstract UNIX
//!    sockets scoped to the sandbox; and a **seccomp** filter that denies
//!    creating processes (threads stay allowed: `RLIMIT_NPROC` does not bind
//!    a host-root caller); then it `exec`s Python. It reports what was
//!    enforced on its first stderr line ([`HELPER_STATUS_PREFIX`]), which the
//!    parent strips and puts in the [`SandboxReport`]. The helper is the
//!    running program itself when its `main` starts with
//!    [`run_helper_if_invoked`] (the `earthverse` binary does: one binary),
//!    or the standalone `earthverse-sandbox` bin ([`locate_helper`]).
//! 3. The parent enforces the **wall-clock limit** (60 s) and the **output
//!    limits** ([`run_bounded`]: stdout 12,000 characters, stderr 4,000
//!    shown; the child is killed past [`PythonLimits::max_output_bytes`]).
//!
//! When bwrap, the helper, the interpreter or Landlock is missing, callers
//! refuse to run unless the configuration carries
//! [`SandboxPolicy::Unsandboxed`], an explicit opt-out that is logged and
//! recorded in every call: there is no silent unsandboxed fallback.
//!
//! The interpreter is chosen by [`resolve_interpreter`] (explicit path,
//! `EARTHVERSE_PYTHON`, the scientific environment of
//! `scripts/python-env.sh`, then `python3`) and described by
//! [`probe_environment`] for the run record.

#![deny(missing_docs)]

pub mod config;
pub mod helper;
pub mod interpreter;
pub mod plan;
pub mod run;

pub use config::{PythonConfig, PythonLimits, SandboxPolicy, SandboxReport};
pub use helper::{
    helper_main, locate_helper, run_helper_if_invoked, which, HelperCommand, HelperSpec,
    HelperStatus, HELPER_ARG, HELPER_NAME, HELPER_STATUS_PREFIX,
};
pub use interpreter::{
    default_environment_dir, probe_environment, probe_interpreter, resolve_interpreter,
    InterpreterInfo, InterpreterSource, PythonEnvironment, CORE_PACKAGES, REQUIREMENTS,
    SCIENTIFIC_PACKAGES,
};
pub use plan::{
    plan, plan_program, SandboxPlan, SandboxProgram, SandboxView, EVIDENCE_DIR, HELPER_IN_SANDBOX,
    QUESTION_FILE, SCRATCH_DIR,
};
pub use run::{infer_limit, run_bounded, BoundedOutput};
