//! On-disk cache of judge records keyed by a sha256 of everything the
//! judge saw plus the judge model id, so re-scoring never pays twice.

use crate::error::{JudgeError, Result};
use crate::record::EvaluationRecord;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// A directory of cached evaluation records, one JSON file per key
/// (`<dir>/<key[0..2]>/<key>.json`), written atomically.
#[derive(Debug, Clone)]
pub struct JudgeCache {
    dir: PathBuf,
}

/// sha256 (hex) over length-prefixed parts, so that no two different part
/// lists hash alike.
pub fn cache_key(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    hex::encode(hasher.finalize())
}

impl JudgeCache {
    /// A cache rooted at `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The cache directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_of(&self, key: &str) -> PathBuf {
        let prefix = key.get(..2).unwrap_or("xx");
        self.dir.join(prefix).join(format!("{key}.json"))
    }

    /// The cached record for `key`, if present and readable. A corrupt
    /// entry is logged and treated as a miss.
    pub fn get(&self, key: &str) -> Result<Option<EvaluationRecord>> {
        let path = self.path_of(key);
        match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice(&bytes) {
                Ok(record) => Ok(Some(record)),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "ignoring corrupt judge cache entry");
                    Ok(None)
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(JudgeError::Cache { path, source }),
        }
    }

    /// Stores `record` under `key`, atomically: the bytes go to a fresh
    /// uniquely named temporary file in the entry's directory, are synced,
    /// and the file is renamed over the entry. Concurrent scorers (threads
    /// or processes sharing the cache directory) each write their own
    /// temporary file, and a reader sees either no entry or a whole one,
    /// never a torn one; two writers of one key both leave a whole entry
    /// (the judgments of one key are interchangeable).
    pub fn put(&self, key: &str, record: &EvaluationRecord) -> Result<()> {
        use std::io::Write;
        let path = self.path_of(key);
        let parent = path.parent().unwrap_or(&self.dir).to_path_buf();
        let cache_io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| JudgeError::Cache { path, source }
        };
        std::fs::create_dir_all(&parent).map_err(cache_io(&parent))?;
        let bytes = serde_json::to_vec_pretty(record).map_err(|source| JudgeError::Json {
            context: format!("cache entry {key}"),
            source,
        })?;
        let mut tmp = tempfile::Builder::new()
            .prefix(&format!(".{key}."))
            .suffix(".tmp")
            .tempfile_in(&parent)
            .map_err(cache_io(&parent))?;
        tmp.write_all(&bytes).map_err(cache_io(tmp.path()))?;
        tmp.as_file().sync_all().map_err(cache_io(tmp.path()))?;
        tmp.persist(&path).map_err(|e| JudgeError::Cache {
            path,
            source: e.error,
        })?;
        Ok(())
    }
}
