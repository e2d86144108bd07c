//! # earthverse-loopback-server
//!
//! A real HTTP server process on 127.0.0.1 that speaks OpenAI-compatible
//! `/v1/chat/completions` and Anthropic `/v1/messages` from a [`Script`]
//! ("cassette") of request matchers and replies. Replies can be rate limits
//! with `Retry-After`, server errors, slow answers beyond a client timeout,
//! truncated JSON, prose instead of JSON, or a model that never finishes:
//! everything a provider and a controller must survive, offline and exact.
//!
//! Tests start the binary `earthverse-loopback-server` as a child process
//! with [`spawn_loopback`] (or [`spawn_loopback_with`] given the binary's
//! path, e.g. `env!("CARGO_BIN_EXE_...")`); it prints its port on stdout and
//! exits when its standard input closes. `GET /_loopback/requests` lists the
//! requests it received.
//!
//! ```
//! use earthverse_loopback_server::{Body, Interaction, Reply, Script};
//! let script = Script::new(vec![
//!     Interaction::once(Reply::error(429, "slow down").with_header("retry-after", "1")),
//!     Interaction::always(Reply::ok(Body::openai_text(r#"{"action":"final_answer"}"#)))
//!         .on_path("/v1/chat/completions"),
//! ]);
//! let text = serde_json::to_string(&script).unwrap();
//! assert_eq!(Script::from_json(&text).unwrap(), script);
//! let (body, _) = script.interactions[1].reply.body.render("m");
//! assert!(String::from_utf8(body).unwrap().contains("chat.completion"));
//! ```
#![deny(missing_docs)]

mod script;
mod server;
mod spawn;

pub use script::{Body, Interaction, Matcher, Reply, Script, ScriptToolCall, ScriptUsage};
pub use server::{bind, LoggedRequest};
pub use spawn::{
    locate_binary, locate_or_build_binary, spawn_loopback, spawn_loopback_with, LoopbackServer,
    BINARY_ENV, BINARY_NAME,
};

/// Result alias.
pub type Result<T, E = LoopbackError> = std::result::Result<T, E>;

/// What can go wrong starting or talking to the loopback server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoopbackError {
    /// The script is not valid.
    #[error("loopback script: {message}")]
    Script {
        /// Parser message.
        message: String,
    },
    /// An IO operation failed.
    #[error("loopback: {context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// Cause.
        source: std::io::Error,
    },
    /// The server binary was not found.
    #[error("loopback server binary not found (set {BINARY_ENV}); tried {tried:?}")]
    BinaryNotFound {
        /// Paths tried.
        tried: Vec<std::path::PathBuf>,
    },
    /// The server did not start properly.
    #[error("loopback server did not start: {message}")]
    Startup {
        /// What went wrong.
        message: String,
    },
}

/// Entry point of the server binary (shared by every crate that ships a
/// copy of the binary behind a feature): parses the command line, serves
/// until killed (or until stdin closes with `--exit-on-stdin-eof`).
pub fn run_cli() -> std::process::ExitCode {
    use clap::Parser;
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("earthverse-loopback-server: starting the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve_cli(args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("earthverse-loopback-server: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Command line of the server binary.
#[derive(Debug, clap::Parser)]
#[command(
    name = "earthverse-loopback-server",
    about = "Scripted OpenAI/Anthropic server on 127.0.0.1"
)]
struct Args {
    /// Script file (JSON).
    #[arg(long, conflicts_with = "script_stdin")]
    script: Option<std::path::PathBuf>,
    /// Read the script as the first line of standard input.
    #[arg(long)]
    script_stdin: bool,
    /// Port to bind on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Exit when standard input reaches end of file.
    #[arg(long)]
    exit_on_stdin_eof: bool,
}

async fn serve_cli(args: Args) -> Result<()> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let script = if let Some(path) = &args.script {
        let text = std::fs::read_to_string(path).map_err(|source| LoopbackError::Io {
            context: format!("reading {}", path.display()),
            source,
        })?;
        Script::from_json(&text)?
    } else if args.script_stdin {
        let mut line = String::new();
        stdin
            .read_line(&mut line)
            .await
            .map_err(|source| LoopbackError::Io {
                context: "reading the script from stdin".into(),
                source,
            })?;
        Script::from_json(&line)?
    } else {
        return Err(LoopbackError::Script {
            message: "give --script FILE or --script-stdin".into(),
        });
    };
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], args.port));
    let (bound, server) = bind(script, addr).await?;
    let mut stdout = tokio::io::stdout();
    stdout
        .write_all(format!("{}\n", bound.port()).as_bytes())
        .await
        .and(stdout.flush().await)
        .map_err(|source| LoopbackError::Io {
            context: "printing the port".into(),
            source,
        })?;
    let io_err = |source| LoopbackError::Io {
        context: "serving".into(),
        source,
    };
    if args.exit_on_stdin_eof {
        let watch = async move {
            let mut sink = Vec::new();
            loop {
                sink.clear();
                match stdin.read_until(b'\n', &mut sink).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        };
        tokio::select! {
            result = server => result.map_err(io_err),
            () = watch => Ok(()),
        }
    } else {
        server.await.map_err(io_err)
    }
}
