//! `earthverse-sandbox`: the standalone form of the sandbox helper, for
//! programs that embed `python_exec` and cannot call
//! [`earthverse_sandbox::run_helper_if_invoked`] at the start of their own
//! `main`. Point `EARTHVERSE_SANDBOX_HELPER` (or `PythonConfig::helper`) at
//! it. The `earthverse` binary does not need it: it is its own helper.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    std::process::exit(earthverse_sandbox::helper_main(&args));
}
