//! Runs a prepared command under the wall-clock and output limits of
//! [`PythonLimits`] (Appendix C.2: 60 s per call; the reference shows 12,000
//! characters of stdout and 4,000 of stderr).

use crate::config::PythonLimits;
use tokio::io::AsyncReadExt;

/// What a bounded run produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundedOutput {
    /// Exit code, or minus the signal that ended the process; `None` when
    /// the parent killed it for a limit.
    pub status: Option<i64>,
    /// Standard output (kept up to a little over what is shown).
    pub stdout: String,
    /// Standard error (likewise).
    pub stderr: String,
    /// The limit that made the parent kill it: `wall_clock` or `output`.
    pub limit_hit: Option<String>,
}

/// Spawns `command` (stdout and stderr piped) and collects its output until
/// it exits, the wall clock runs out or it writes more than
/// [`PythonLimits::max_output_bytes`]; in the last two cases it is killed.
pub async fn run_bounded(
    mut command: tokio::process::Command,
    limits: &PythonLimits,
) -> std::io::Result<BoundedOutput> {
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let max = limits.max_output_bytes;
    let keep_out = limits.stdout_chars * 4 + 16;
    let keep_err = limits.stderr_chars * 4 + 4096;
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let mut total = 0usize;
    let mut limit: Option<String> = None;
    let deadline = tokio::time::Instant::now() + limits.wall;
    let mut buf_out = vec![0u8; 16 * 1024];
    let mut buf_err = vec![0u8; 16 * 1024];
    loop {
        if out.is_none() && err.is_none() {
            break;
        }
        tokio::select! {
            n = async { match out.as_mut() { Some(o) => o.read(&mut buf_out).await, None => std::future::pending().await } } => {
                match n {
                    Ok(0) | Err(_) => out = None,
                    Ok(n) => {
                        total += n;
                        let room = keep_out.saturating_sub(stdout.len());
                        stdout.extend_from_slice(&buf_out[..n.min(room)]);
                    }
                }
            }
            n = async { match err.as_mut() { Some(e) => e.read(&mut buf_err).await, None => std::future::pending().await } } => {
                match n {
                    Ok(0) | Err(_) => err = None,
                    Ok(n) => {
                        total += n;
                        let room = keep_err.saturating_sub(stderr.len());
                        stderr.extend_from_slice(&buf_err[..n.min(room)]);
                    }
                }
            }
            _ = tokio::time::sleep_until(deadline) => {
                limit = Some("wall_clock".into());
                break;
            }
        }
        if total > max {
            limit = Some("output".into());
            break;
        }
    }
    let status = if limit.is_some() {
        let _ = child.kill().await;
        None
    } else {
        match tokio::time::timeout_at(deadline, child.wait()).await {
            Ok(status) => Some(status?),
            Err(_) => {
                limit = Some("wall_clock".into());
                let _ = child.kill().await;
                None
            }
        }
    };
    let status = status.map(|s| {
        use std::os::unix::process::ExitStatusExt;
        match (s.code(), s.signal()) {
            (Some(c), _) => i64::from(c),
            (None, Some(sig)) => -i64::from(sig),
            _ => -1,
        }
    });
    Ok(BoundedOutput {
        status,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        limit_hit: limit,
    })
}

/// The limit a child ran into by itself, read from its exit status and
/// stderr: `memory` (a `MemoryError` under `RLIMIT_AS`), `cpu` (`SIGXCPU`,
/// or `SIGKILL` at the hard CPU limit), `file_size` (`SIGXFSZ` or "File too
/// large"). Exit statuses are as [`BoundedOutput::status`] gives them, or
/// `128 + signal` as a shell reports them.
pub fn infer_limit(status: Option<i64>, stderr: &str) -> Option<&'static str> {
    let by_signal =
        |sig: i32| matches!(status, Some(c) if c == 128 + i64::from(sig) || c == -i64::from(sig));
    if stderr.contains("MemoryError") {
        Some("memory")
    } else if by_signal(libc::SIGXCPU) || status == Some(128 + 9) {
        Some("cpu")
    } else if by_signal(libc::SIGXFSZ) || stderr.contains("File too large") {
        Some("file_size")
    } else {
        None
    }
}
