//! Starting the server binary as a child process, for tests.

use crate::script::Script;
use crate::LoopbackError;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Name of the server binary of this package.
pub const BINARY_NAME: &str = "earthverse-loopback-server";

/// Environment variable that, when set, names the server binary to start.
pub const BINARY_ENV: &str = "EARTHVERSE_LOOPBACK_BIN";

/// A running loopback server process; killed when dropped.
#[derive(Debug)]
pub struct LoopbackServer {
    child: Child,
    // Kept open: the server exits when its standard input closes, so it
    // cannot outlive the test process even if that one is killed.
    _stdin: ChildStdin,
    port: u16,
}

impl LoopbackServer {
    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The requests the server received so far (`GET /_loopback/requests`).
    pub fn requests(&self) -> crate::Result<Vec<Value>> {
        let io = |context: &str| {
            let context = context.to_string();
            move |source| LoopbackError::Io { context, source }
        };
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port))
            .map_err(io("connecting to the loopback server"))?;
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(io("setting a read timeout"))?;
        stream
            .write_all(b"GET /_loopback/requests HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .map_err(io("sending the request-log query"))?;
        let mut raw = Vec::new();
        stream
            .read_to_end(&mut raw)
            .map_err(io("reading the request log"))?;
        let raw = String::from_utf8_lossy(&raw);
        let body = raw.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
        serde_json::from_str(body).map_err(|e| LoopbackError::Script {
            message: format!("request log is not JSON: {e}"),
        })
    }
}

impl Drop for LoopbackServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Finds the server binary: `$EARTHVERSE_LOOPBACK_BIN`, else a binary named
/// `earthverse-loopback-server` or `earthverse-loopback` next to the current
/// executable or in its parent directory (how cargo lays out
/// `target/<profile>/` and `target/<profile>/deps/`).
pub fn locate_binary() -> crate::Result<PathBuf> {
    if let Some(path) = std::env::var_os(BINARY_ENV) {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().map_err(|source| LoopbackError::Io {
        context: "finding the current executable".into(),
        source,
    })?;
    let mut tried = Vec::new();
    let mut dir = exe.parent();
    for _ in 0..2 {
        let Some(d) = dir else { break };
        for name in [BINARY_NAME, "earthverse-loopback"] {
            let candidate = d.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
            if candidate.is_file() {
                return Ok(candidate);
            }
            tried.push(candidate);
        }
        dir = d.parent();
    }
    Err(LoopbackError::BinaryNotFound { tried })
}

/// [`locate_binary`], or, when no binary is found (a test of another
/// package run alone, e.g. `cargo test -p earthverse-cli --test X`),
/// builds it with the cargo running the test (`$CARGO`, else `cargo`)
/// and looks again.
pub fn locate_or_build_binary() -> crate::Result<PathBuf> {
    if let Ok(path) = locate_binary() {
        return Ok(path);
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(&cargo)
        .args(["build", "-p", "earthverse-loopback-server"])
        .status()
        .map_err(|source| LoopbackError::Io {
            context: "running cargo build -p earthverse-loopback-server".into(),
            source,
        })?;
    if !status.success() {
        return Err(LoopbackError::Startup {
            message: format!("cargo build -p earthverse-loopback-server: {status}"),
        });
    }
    locate_binary()
}

/// Starts the server binary found by [`locate_binary`] with `script`.
pub fn spawn_loopback(script: &Script) -> crate::Result<LoopbackServer> {
    spawn_loopback_with(&locate_binary()?, script)
}

/// Starts the server binary at `binary` with `script`: the script goes in
/// as one JSON line on standard input, the port comes back as the first line
/// of standard output (waited for at most 30 s).
pub fn spawn_loopback_with(binary: &Path, script: &Script) -> crate::Result<LoopbackServer> {
    let mut child = Command::new(binary)
        .args(["--script-stdin", "--exit-on-stdin-eof"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|source| LoopbackError::Io {
            context: format!("starting {}", binary.display()),
            source,
        })?;
    let started = (|| {
        let mut stdin = child.stdin.take().ok_or_else(|| LoopbackError::Startup {
            message: "no stdin pipe".into(),
        })?;
        let line = serde_json::to_string(script).map_err(|e| LoopbackError::Script {
            message: e.to_string(),
        })?;
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|_| stdin.flush())
            .map_err(|source| LoopbackError::Io {
                context: "sending the script".into(),
                source,
            })?;
        let stdout = child.stdout.take().ok_or_else(|| LoopbackError::Startup {
            message: "no stdout pipe".into(),
        })?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut first = String::new();
            let result = BufReader::new(stdout).read_line(&mut first).map(|_| first);
            let _ = tx.send(result);
        });
        let first = rx
            .recv_timeout(Duration::from_secs(30))
            .map_err(|_| LoopbackError::Startup {
                message: "no port printed within 30 s".into(),
            })?
            .map_err(|source| LoopbackError::Io {
                context: "reading the port".into(),
                source,
            })?;
        let port: u16 = first.trim().parse().map_err(|_| LoopbackError::Startup {
            message: format!("expected a port on stdout, got {:?}", first.trim()),
        })?;
        Ok((stdin, port))
    })();
    match started {
        Ok((stdin, port)) => Ok(LoopbackServer {
            child,
            _stdin: stdin,
            port,
        }),
        Err(error) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(error)
        }
    }
}
