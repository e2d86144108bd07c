//! The shard of this process, read from the environment a cluster engine
//! gives each member of an array job (`earthverse run --shard-from-env`).
//!
//! | engine | index | count |
//! |---|---|---|
//! | Slurm job array (`sbatch --array=0-(N-1)`) | `SLURM_ARRAY_TASK_ID` | `SLURM_ARRAY_TASK_COUNT` |
//! | Kubernetes Indexed Job (`completionMode: Indexed`) | `JOB_COMPLETION_INDEX` | `EARTHVERSE_SHARD_COUNT` (Kubernetes gives none) |
//!
//! `EARTHVERSE_SHARD_COUNT`, when set, always wins over the engine's count:
//! resubmitting one index of a Slurm array (`sbatch --array=2`) gives a
//! job whose `SLURM_ARRAY_TASK_COUNT` is 1, while its shard is still
//! `2/N`. The `deploy/` scripts therefore always set it.

use crate::batch::Shard;
use crate::error::{ControllerError, Result};

/// The variable naming N for every engine (required for Kubernetes).
pub const SHARD_COUNT_VAR: &str = "EARTHVERSE_SHARD_COUNT";

/// Index variables, in the order they are looked for.
pub const INDEX_VARS: [&str; 2] = ["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"];

/// The shard of this process from `lookup` (`std::env::var` in the CLI;
/// any map in tests). The error names the variables at fault.
pub fn shard_from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Shard> {
    let bad = |value: String, reason: String| ControllerError::Shard { value, reason };
    let Some((index_var, index)) = INDEX_VARS
        .iter()
        .find_map(|var| lookup(var).map(|value| (*var, value)))
    else {
        return Err(bad(
            String::new(),
            format!(
                "--shard-from-env: none of {} is set (not inside a Slurm array or a Kubernetes Indexed Job?)",
                INDEX_VARS.join(", ")
            ),
        ));
    };
    let (count_var, count) = match lookup(SHARD_COUNT_VAR) {
        Some(count) => (SHARD_COUNT_VAR, count),
        None if index_var == "SLURM_ARRAY_TASK_ID" => match lookup("SLURM_ARRAY_TASK_COUNT") {
            Some(count) => ("SLURM_ARRAY_TASK_COUNT", count),
            None => {
                return Err(bad(
                    index,
                    format!("--shard-from-env: {index_var} is set but neither {SHARD_COUNT_VAR} nor SLURM_ARRAY_TASK_COUNT"),
                ))
            }
        },
        None => {
            return Err(bad(
                index,
                format!("--shard-from-env: {index_var} is set but {SHARD_COUNT_VAR} is not (Kubernetes gives no count: set it to `completions`)"),
            ))
        }
    };
    let value = format!("{}/{}", index.trim(), count.trim());
    value.parse::<Shard>().map_err(|e| match e {
        ControllerError::Shard { reason, .. } => bad(
            value.clone(),
            format!("--shard-from-env ({index_var}={index}, {count_var}={count}): {reason}"),
        ),
        other => other,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn slurm_kubernetes_and_the_override_give_the_shard() {
        let slurm = env(&[
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ]);
        assert_eq!(shard_from_env(slurm).unwrap(), "2/4".parse().unwrap());
        // A resubmitted single index: Slurm says 1 task, the override says 4.
        let resubmitted = env(&[
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "1"),
            (SHARD_COUNT_VAR, "4"),
        ]);
        assert_eq!(shard_from_env(resubmitted).unwrap(), "2/4".parse().unwrap());
        let k8s = env(&[("JOB_COMPLETION_INDEX", "0"), (SHARD_COUNT_VAR, "8")]);
        assert_eq!(shard_from_env(k8s).unwrap(), "0/8".parse().unwrap());
    }

    #[test]
    fn missing_or_inconsistent_variables_are_named() {
        let none = shard_from_env(env(&[])).unwrap_err().to_string();
        assert!(none.contains("SLURM_ARRAY_TASK_ID"), "{none}");
        let k8s = shard_from_env(env(&[("JOB_COMPLETION_INDEX", "1")]))
            .unwrap_err()
            .to_string();
        assert!(k8s.contains(SHARD_COUNT_VAR), "{k8s}");
        // `--array=1-4` gives ids 1..=4 of 4: index 4 is out of range.
        let shifted = shard_from_env(env(&[
            ("SLURM_ARRAY_TASK_ID", "4"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(shifted.contains("SLURM_ARRAY_TASK_ID=4"), "{shifted}");
        assert!(shifted.contains("K must be below N"), "{shifted}");
    }
}
