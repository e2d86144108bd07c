//! Process and clock facts shared by the batch runner's task locks and the
//! batch limits' ledger lock: now, this host, whether a process lives. A
//! leaf module.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

pub(crate) fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown-host".into())
}

pub(crate) fn pid_alive(pid: u32) -> Option<bool> {
    if Path::new("/proc/self").exists() {
        Some(Path::new(&format!("/proc/{pid}")).exists())
    } else {
        None
    }
}
