//! The server started in the test's own process: [`start`].

use crate::script::Script;
use crate::LoopbackError;
use serde_json::Value;
use std::io::{Read, Write};
use std::sync::mpsc;
use std::time::Duration;

/// A loopback server running on its own thread (with its own tokio
/// runtime) in the calling process; stopped when dropped. Anything that
/// speaks TCP reaches it: the test itself, or a CLI the test starts as a
/// subprocess.
#[derive(Debug)]
pub struct LoopbackServer {
    port: u16,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Starts a server for `script` on 127.0.0.1 (any free port) on a thread of
/// the calling process, and returns once it accepts connections. Works from
/// synchronous tests and from inside any tokio runtime (it never shares
/// the caller's runtime).
///
/// # Errors
/// [`LoopbackError::Startup`] when the thread or runtime cannot start,
/// [`LoopbackError::Io`] when binding fails.
pub fn start(script: &Script) -> crate::Result<LoopbackServer> {
    let script = script.clone();
    let (ready_tx, ready_rx) = mpsc::channel::<crate::Result<u16>>();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("earthverse-loopback-server".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(source) => {
                    let _ = ready_tx.send(Err(LoopbackError::Io {
                        context: "starting the server's runtime".into(),
                        source,
                    }));
                    return;
                }
            };
            runtime.block_on(async move {
                let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
                let (bound, server) = match crate::bind(script, addr).await {
                    Ok(b) => b,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(bound.port()));
                tokio::select! {
                    result = server => {
                        if let Err(e) = result {
                            tracing::warn!(error = %e, "loopback server stopped");
                        }
                    }
                    _ = stop_rx => {}
                }
            });
        })
        .map_err(|source| LoopbackError::Io {
            context: "starting the server thread".into(),
            source,
        })?;
    let port = ready_rx
        .recv_timeout(Duration::from_secs(30))
        .map_err(|_| LoopbackError::Startup {
            message: "the server did not bind within 30 s".into(),
        })??;
    Ok(LoopbackServer {
        port,
        stop: Some(stop_tx),
        thread: Some(thread),
    })
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

    /// The requests the server received so far (`GET /_loopback/requests`).
    ///
    /// # Errors
    /// When the server cannot be reached or its log is not JSON.
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
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
