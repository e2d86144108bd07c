//! A copy of the loopback server binary, built with the `loopback-server`
//! feature so this crate's tests can start it via `CARGO_BIN_EXE_earthverse-loopback`.
fn main() -> std::process::ExitCode {
    earthverse_loopback_server::run_cli()
}
