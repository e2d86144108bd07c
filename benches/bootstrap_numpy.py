"""numpy reference for benches/bootstrap.rs: paired bootstrap of all pairs of
25 systems x 405 tasks with one shared 5,000 x 405 resample matrix, percentile
95% intervals (numpy.percentile's default linear interpolation)."""
import numpy as np

SYSTEMS, TASKS, RESAMPLES = 25, 405, 5000
rng = np.random.default_rng(2026)
scores = rng.integers(0, 10001, size=(SYSTEMS, TASKS)) / 100.0
idx = rng.integers(0, TASKS, size=(RESAMPLES, TASKS))
means = scores[:, idx].mean(axis=2)  # systems x resamples, shared indices
a, b = np.triu_indices(SYSTEMS, k=1)
deltas = means[a] - means[b]  # pairs x resamples
lo, hi = np.percentile(deltas, [2.5, 97.5], axis=1)
print(f"pairs={len(a)} checksum={float((lo + hi).sum()):.6f}")
