//! The OS sandbox still holds with the scientific environments' runtimes
//! (issue 46): R's `system()` and a compiled Fortran program's
//! `execute_command_line` start no process, neither reaches a server the
//! test runs on 127.0.0.1, and neither writes outside scratch (the package
//! is read-only). Julia's `run` is not tested: Julia is not installed here.
//! Feature `environments` (R and gfortran from scripts/bootstrap.sh); this
//! binary is its own sandbox helper (no libtest harness).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_environments::runner::run_sandboxed;
use earthverse_environments::runtime::r_program;
use earthverse_sandbox::SandboxProgram;
use earthverse_tool_registry::{PythonConfig, ToolContext};
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::Duration;

fn main() {
    earthverse_tool_registry::sandbox::run_helper_if_invoked();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let pkg = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(pkg.path().join("data")).unwrap();
    std::fs::write(pkg.path().join("data/x.csv"), "series\n1\n").unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(pkg.path(), scratch.path());
    let config = PythonConfig::default();
    let rt = tokio::runtime::Runtime::new().unwrap();

    // R: system(), a socket to the test's server, a write into the package.
    let script = format!(
        r#"
r1 <- tryCatch(system("id > /scratch/r_system.txt"), error = function(e) -1, warning = function(w) -2)
r2 <- tryCatch({{ s <- socketConnection("127.0.0.1", {port}, timeout = 2); close(s); "connected" }}, error = function(e) "refused", warning = function(w) "refused")
r3 <- tryCatch({{ writeLines("x", "/evidence/data/written.txt"); "written" }}, error = function(e) "denied", warning = function(w) "denied")
r4 <- tryCatch({{ writeLines("ok", "/scratch/r_ok.txt"); "written" }}, error = function(e) "denied")
cat("RESULT", r1, r2, r3, r4, "\n")
"#
    );
    std::fs::write(scratch.path().join("escape.R"), script).unwrap();
    let prog = r_program(vec!["--file=/scratch/escape.R".into()]);
    let out = rt.block_on(run_sandboxed(&config, &ctx, &prog)).unwrap();
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("RESULT"))
        .unwrap_or_else(|| panic!("R printed no result: {} {}", out.stdout, out.stderr));
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_ne!(fields[1], "0", "system() ran: {line}");
    assert_eq!(fields[2], "refused", "{line}");
    assert_eq!(fields[3], "denied", "{line}");
    assert_eq!(fields[4], "written", "scratch stays writable: {line}");
    assert!(
        !scratch.path().join("r_system.txt").exists(),
        "system() started a shell"
    );
    assert!(!pkg.path().join("data/written.txt").exists());
    println!("R: {line}");

    // Fortran: execute_command_line, and writing into the package.
    let src = scratch.path().join("escape.f90");
    std::fs::write(
        &src,
        "program escape\n  integer :: stat, cmd, u, ios\n  stat = 0; cmd = 0\n  \
         call execute_command_line('id > /scratch/f_system.txt', exitstat=stat, cmdstat=cmd)\n  \
         open(newunit=u, file='/evidence/data/f_written.txt', status='new', iostat=ios)\n  \
         print '(a,i0,a,i0)', 'RESULT cmdstat=', cmd, ' open=', ios\nend program escape\n",
    )
    .unwrap();
    let bin_dir = tempfile::tempdir().unwrap();
    let exe: PathBuf = bin_dir.path().join("escape");
    let status = std::process::Command::new("gfortran")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap();
    assert!(status.success());
    let prog = SandboxProgram {
        executable: exe,
        ..SandboxProgram::default()
    };
    let out = rt.block_on(run_sandboxed(&config, &ctx, &prog)).unwrap();
    let line = out
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("RESULT"))
        .unwrap_or_else(|| panic!("Fortran printed no result: {} {}", out.stdout, out.stderr));
    assert!(
        !line.contains("cmdstat=0"),
        "execute_command_line ran: {line}"
    );
    assert!(
        !line.contains("open=0"),
        "opened a new file in the package: {line}"
    );
    assert!(!scratch.path().join("f_system.txt").exists());
    assert!(!pkg.path().join("data/f_written.txt").exists());
    println!("Fortran: {}", line.trim());

    std::thread::sleep(Duration::from_millis(100));
    assert!(
        listener.accept().is_err(),
        "the server was reached from the sandbox"
    );
    println!("2 passed, 0 failed");
}
