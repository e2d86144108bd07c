//! `earthverse-sandbox`: the helper `python_exec` re-executes inside
//! bubblewrap. It applies rlimits and a Landlock ruleset to itself, reports
//! them on its first stderr line and execs the interpreter. Single-threaded,
//! so nothing runs between `fork` and `exec` in a multi-threaded parent.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    std::process::exit(earthverse_tool_registry::sandbox::helper_main(&args));
}
