//! A copy of the loopback server binary for the judge tests of this
//! package (started via `CARGO_BIN_EXE_earthverse-judge-loopback`).
fn main() -> std::process::ExitCode {
    earthverse_loopback_server::run_cli()
}
