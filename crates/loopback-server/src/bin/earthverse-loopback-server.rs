//! The loopback server binary: `earthverse-loopback-server --script FILE [--port N]`.
fn main() -> std::process::ExitCode {
    earthverse_loopback_server::run_cli()
}
