//! Global limits of a batch that hold across shards: a cost cap and a
//! request-rate cap shared by every process writing to the same
//! `<out>/<system>/` directory (`earthverse run --max-batch-cost USD
//! --max-request-rate N/min`).
//!
//! # The ledger
//! `<out>/<system>/limits-ledger.json` holds the money spent by settled
//! model requests, the requests admitted but not yet settled (in flight,
//! each with its process id and host), the largest cost of one settled
//! request, and the admission times of the current rate window. Every
//! read-modify-write happens under an exclusive advisory lock
//! (`flock(2)` through `fs2`) on `<out>/<system>/.limits-ledger.flock` and ends
//! with an atomic rename, so any number of processes on one machine, or
//! on several machines sharing the directory over a file system whose
//! locks work across hosts (NFSv4, Lustre, GPFS), see one consistent
//! ledger. The rate window uses each host's wall clock: across hosts it
//! holds as well as their clocks agree.
//!
//! # Admission
//! [`LimitedModel`] wraps any `ChatModel`; each request is admitted by the
//! ledger before it is sent and settled with its cost (tokens × the price
//! table) when it returns. With a cost cap `C`, spent `S`, `k` requests in
//! flight and `m` the largest cost of one settled request, a request is
//! admitted only when `S + k·m < C` (and, before any request has settled,
//! only when none is in flight), else it waits for a settlement; when
//! `S ≥ C` it is refused. So while no request costs more than `m`, the
//! batch stops with `C ≤ S < C + m`: within one request of the cap,
//! however many shards run. A reservation of a process that died is
//! dropped when its pid is gone (same host) or after two hours.
//!
//! A refused request ends its run; the batch runner does not write that
//! run's record (the task stays unfinished, to run on a later resume),
//! starts no further task once the ledger shows the cap reached, and keeps
//! every record already written.

use crate::error::{ControllerError, Result};
use crate::proc::{host_name, now_unix, pid_alive};
use crate::record::write_json_atomic;
use crate::settings::Price;
use earthverse_model_provider::{ChatModel, ChatRequest, ChatResponse, ProviderError};
use fs2::FileExt;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The ledger file in `<out>/<system>/`.
pub const LEDGER_FILE: &str = "limits-ledger.json";
const LOCK_FILE: &str = ".limits-ledger.flock";
/// Age after which a reservation is dropped whatever its holder.
const STALE_RESERVATION: Duration = Duration::from_secs(2 * 3_600);
/// How long a waiting request sleeps before it asks the ledger again.
const POLL: Duration = Duration::from_millis(25);

/// A request-rate cap: at most `requests` admissions in any `per` window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestRate {
    /// Requests per window (at least 1).
    pub requests: u32,
    /// Window length.
    pub per: Duration,
}

impl FromStr for RequestRate {
    type Err = ControllerError;
    /// `N/s`, `N/min`, `N/h`, or `N/<seconds>s` (e.g. `60/min`, `8/2s`).
    fn from_str(value: &str) -> Result<Self> {
        let bad = |why: &str| {
            ControllerError::Limits(format!(
                "request rate `{value}`: {why} (expected N/s, N/min, N/h or N/<seconds>s, e.g. 60/min)"
            ))
        };
        let (n, unit) = value.split_once('/').ok_or_else(|| bad("no `/`"))?;
        let requests: u32 = n.trim().parse().map_err(|_| bad("N is not a number"))?;
        if requests == 0 {
            return Err(bad("N must be at least 1"));
        }
        let unit = unit.trim();
        let per = match unit {
            "s" => Duration::from_secs(1),
            "min" => Duration::from_secs(60),
            "h" => Duration::from_secs(3_600),
            other => {
                let secs = other
                    .strip_suffix('s')
                    .and_then(|s| s.parse::<f64>().ok())
                    .filter(|s| s.is_finite() && *s > 0.0)
                    .ok_or_else(|| bad("unknown unit"))?;
                Duration::from_secs_f64(secs)
            }
        };
        Ok(Self { requests, per })
    }
}

/// What the limits are.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LimitsConfig {
    /// Most USD the whole batch may spend.
    pub cost_cap_usd: Option<f64>,
    /// Most requests in any window, all shards together.
    pub rate: Option<RequestRate>,
    /// The price that turns a response's tokens into USD (required with a
    /// cost cap).
    pub price: Option<Price>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Reservation {
    id: String,
    pid: u32,
    host: String,
    since_unix: u64,
}

/// The shared ledger (see the module docs).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ledger {
    /// USD spent by settled requests.
    pub spent_usd: f64,
    /// Requests settled with a response.
    pub settled_requests: u64,
    /// Largest cost of one settled request.
    pub max_request_usd: f64,
    /// Requests refused by the cost cap.
    pub refused_requests: u64,
    in_flight: Vec<Reservation>,
    /// Admission times (Unix ms) inside the current rate window.
    window_unix_ms: Vec<u64>,
}

enum Decision {
    Admit,
    Wait(Duration),
    Refuse(String),
}

/// The limits of one batch over its shared ledger.
#[derive(Debug)]
pub struct SharedLimits {
    dir: PathBuf,
    config: LimitsConfig,
    refused: AtomicBool,
    next_id: AtomicU64,
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl SharedLimits {
    /// Limits whose ledger lives in `system_dir` (created if absent).
    /// A cost cap needs a price.
    pub fn new(system_dir: impl Into<PathBuf>, config: LimitsConfig) -> Result<Self> {
        if let Some(cap) = config.cost_cap_usd {
            if !(cap.is_finite() && cap > 0.0) {
                return Err(ControllerError::Limits(format!(
                    "the cost cap must be a positive number of USD, not {cap}"
                )));
            }
            if config.price.is_none() {
                return Err(ControllerError::Limits(
                    "a cost cap needs the model's price (--prices FILE with an entry for the model)".into(),
                ));
            }
        }
        let dir = system_dir.into();
        std::fs::create_dir_all(&dir).map_err(|source| ControllerError::Io {
            path: dir.clone(),
            source,
        })?;
        Ok(Self {
            dir,
            config,
            refused: AtomicBool::new(false),
            next_id: AtomicU64::new(0),
        })
    }

    /// The ledger file.
    pub fn ledger_path(&self) -> PathBuf {
        self.dir.join(LEDGER_FILE)
    }

    /// Whether this process has had a request refused by the cost cap.
    pub fn refused_here(&self) -> bool {
        self.refused.load(Ordering::SeqCst)
    }

    /// Whether the ledger shows the cost cap reached (any shard).
    pub fn cap_reached(&self) -> Result<bool> {
        let Some(cap) = self.config.cost_cap_usd else {
            return Ok(false);
        };
        self.with_ledger(|l| (l.spent_usd >= cap, false))
    }

    /// A snapshot of the ledger.
    pub fn ledger(&self) -> Result<Ledger> {
        self.with_ledger(|l| (l.clone(), false))
    }

    /// Runs `f` on the ledger under the exclusive lock; `f` returns its
    /// result and whether it changed the ledger (then written atomically).
    fn with_ledger<T>(&self, f: impl FnOnce(&mut Ledger) -> (T, bool)) -> Result<T> {
        let lock_path = self.dir.join(LOCK_FILE);
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ControllerError::Io { path, source }
        };
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
        lock.lock_exclusive().map_err(io(&lock_path))?;
        let path = self.ledger_path();
        let mut ledger = match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|source| ControllerError::Json {
                path: path.clone(),
                source,
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ledger::default(),
            Err(source) => return Err(ControllerError::Io { path, source }),
        };
        let (value, changed) = f(&mut ledger);
        let written = if changed {
            write_json_atomic(&path, &ledger)
        } else {
            Ok(())
        };
        let _ = FileExt::unlock(&lock);
        written.map(|()| value)
    }

    fn decide(&self, l: &mut Ledger, id: &str) -> Decision {
        let now_ms = unix_ms();
        let host = host_name();
        l.in_flight.retain(|r| {
            let old = now_unix().saturating_sub(r.since_unix) > STALE_RESERVATION.as_secs();
            let dead = r.host == host && pid_alive(r.pid) == Some(false);
            !(old || dead)
        });
        if let Some(rate) = self.config.rate {
            let per_ms = rate.per.as_millis() as u64;
            l.window_unix_ms
                .retain(|t| now_ms.saturating_sub(*t) < per_ms);
        }
        if let Some(cap) = self.config.cost_cap_usd {
            if l.spent_usd >= cap {
                l.refused_requests += 1;
                return Decision::Refuse(format!(
                    "batch cost cap reached: ${:.6} spent of ${cap:.6} (ledger {})",
                    l.spent_usd,
                    self.ledger_path().display()
                ));
            }
            let pending = l.in_flight.len() as f64 * l.max_request_usd;
            let unknown = l.settled_requests == 0 && !l.in_flight.is_empty();
            if unknown || l.spent_usd + pending >= cap {
                return Decision::Wait(POLL);
            }
        }
        if let Some(rate) = self.config.rate {
            if l.window_unix_ms.len() >= rate.requests as usize {
                let oldest = l.window_unix_ms.iter().min().copied().unwrap_or(now_ms);
                let free_at = oldest + rate.per.as_millis() as u64;
                return Decision::Wait(Duration::from_millis(
                    free_at.saturating_sub(now_ms).max(1),
                ));
            }
            l.window_unix_ms.push(now_ms);
        }
        l.in_flight.push(Reservation {
            id: id.to_string(),
            pid: std::process::id(),
            host,
            since_unix: now_unix(),
        });
        tracing::debug!("batch limits: request admitted at unix ms {now_ms}");
        Decision::Admit
    }

    /// Waits until the ledger admits one request, or returns the reason
    /// it is refused.
    async fn admit(self: &Arc<Self>) -> std::result::Result<Ticket, String> {
        let id = format!(
            "{}-{}-{}",
            host_name(),
            std::process::id(),
            self.next_id.fetch_add(1, Ordering::Relaxed)
        );
        loop {
            let decision = self
                .with_ledger(|l| {
                    let d = self.decide(l, &id);
                    let changed = !matches!(d, Decision::Wait(_));
                    (d, changed)
                })
                .map_err(|e| e.to_string())?;
            match decision {
                Decision::Admit => {
                    return Ok(Ticket {
                        limits: self.clone(),
                        id,
                        settled: false,
                    })
                }
                Decision::Refuse(why) => {
                    self.refused.store(true, Ordering::SeqCst);
                    return Err(why);
                }
                Decision::Wait(d) => tokio::time::sleep(d.min(Duration::from_secs(1))).await,
            }
        }
    }
}

/// An admitted request; settled once (by [`Ticket::settle`], or with no
/// cost when dropped, e.g. a request cancelled by the task deadline).
struct Ticket {
    limits: Arc<SharedLimits>,
    id: String,
    settled: bool,
}

impl Ticket {
    fn settle(mut self, cost: Option<f64>) -> Result<()> {
        self.settled = true;
        settle(&self.limits, &self.id, cost)
    }
}

fn settle(limits: &SharedLimits, id: &str, cost: Option<f64>) -> Result<()> {
    limits.with_ledger(|l| {
        l.in_flight.retain(|r| r.id != id);
        if let Some(cost) = cost {
            l.spent_usd += cost;
            l.settled_requests += 1;
            l.max_request_usd = l.max_request_usd.max(cost);
        }
        ((), true)
    })
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.settled {
            if let Err(e) = settle(&self.limits, &self.id, None) {
                tracing::warn!("cannot release a batch-limit reservation: {e}");
            }
        }
    }
}

/// A `ChatModel` whose every request passes the shared limits first.
pub struct LimitedModel {
    inner: Arc<dyn ChatModel>,
    limits: Arc<SharedLimits>,
}

impl std::fmt::Debug for LimitedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LimitedModel")
            .field("model", &self.inner.model_id())
            .field("limits", &self.limits)
            .finish()
    }
}

impl LimitedModel {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn ChatModel>, limits: Arc<SharedLimits>) -> Self {
        Self { inner, limits }
    }
}

#[async_trait::async_trait]
impl ChatModel for LimitedModel {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    async fn chat(&self, request: ChatRequest) -> earthverse_model_provider::Result<ChatResponse> {
        let ticket = self
            .limits
            .admit()
            .await
            .map_err(|message| ProviderError::LimitReached {
                provider: self.inner.model_id().to_string(),
                message,
            })?;
        let result = self.inner.chat(request).await;
        let cost = match &result {
            Ok(response) => Some(self.limits.config.price.map_or(0.0, |p| {
                p.cost(
                    response.usage.prompt_tokens,
                    response.usage.cached_tokens,
                    response.usage.completion_tokens,
                )
            })),
            Err(_) => None,
        };
        if let Err(e) = ticket.settle(cost) {
            tracing::warn!("cannot settle a batch-limit reservation: {e}");
        }
        result
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_and_bad_ones_are_named() {
        let r: RequestRate = "60/min".parse().unwrap();
        assert_eq!((r.requests, r.per), (60, Duration::from_secs(60)));
        let r: RequestRate = "8/2s".parse().unwrap();
        assert_eq!((r.requests, r.per), (8, Duration::from_secs(2)));
        for bad in ["0/s", "x/min", "5", "5/fortnight"] {
            let e = bad.parse::<RequestRate>().unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }

    #[test]
    fn a_cost_cap_needs_a_price() {
        let dir = tempfile::tempdir().unwrap();
        let config = LimitsConfig {
            cost_cap_usd: Some(1.0),
            ..LimitsConfig::default()
        };
        let e = SharedLimits::new(dir.path(), config).unwrap_err();
        assert!(e.to_string().contains("--prices"), "{e}");
    }
}
