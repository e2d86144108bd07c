"""The reference harness's search_package_files, reimplemented in Python
(reference-harness.md): terms split on white space, a file matches when
every term occurs in its first 300,000 characters (case-insensitive), the
snippet is the first line holding any term. Times calls in-process.

usage: search_reference.py <packages-dir> <one-package-id> <query> <repeats>
prints JSON {"one_package_ms": ..., "all_packages_ms": ..., "matches_all": n}
"""
import json
import sys
import time
from pathlib import Path

TEXT = {".json", ".csv", ".md", ".txt", ".html", ".htm", ".xml", ".geojson", ".yml", ".yaml"}
HIDDEN = {"computed_gt.json", "solution_en.md", "review.json", "compute_gt.py"}


def truncate(s, limit):
    return s if len(s) <= limit else s[: limit - 80] + "\n...[TRUNCATED]..."


def search(root, query, glob="**/*", max_matches=40):
    terms = query.lower().split()
    matches = []
    for p in sorted(root.glob(glob)):
        if not p.is_file() or p.name in HIDDEN or p.suffix.lower() not in TEXT:
            continue
        text = p.read_text(encoding="utf-8", errors="replace")[:300000]
        low = text.lower()
        if all(t in low for t in terms):
            snippet = ""
            for line in text.splitlines():
                if any(t in line.lower() for t in terms):
                    snippet = truncate(line.strip(), 500)
                    break
            matches.append({"path": str(p.relative_to(root)), "snippet": snippet})
            if len(matches) >= max_matches:
                break
    return matches


def main():
    packages, one, query, repeats = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    search(packages / one, query)
    t = time.perf_counter()
    for _ in range(repeats):
        search(packages / one, query)
    one_ms = (time.perf_counter() - t) * 1000 / repeats
    t = time.perf_counter()
    n = 0
    for pkg in sorted(packages.iterdir()):
        n += len(search(pkg, query, max_matches=100000))
    all_ms = (time.perf_counter() - t) * 1000
    print(json.dumps({"one_package_ms": one_ms, "all_packages_ms": all_ms, "matches_all": n}))


if __name__ == "__main__":
    main()
