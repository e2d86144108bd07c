"""Reference for the router bench: Okapi BM25 (k1 = 1.2, b = 0.75) top-k
over the same tool documents, tokenised as the Rust router does (split on
non-alphanumeric characters, tokens longer than one character, lower-cased),
in plain Python. The index (postings, lengths) is built once, as the Rust
router keeps it; one routing step (tokenise the query, score through the
postings, pick the top k) is timed in-process.

usage: router_reference.py <docs.json> <query-file> <k> <repeats>
prints JSON {"step_ms": <best>, "top": [names...]}
"""
import json
import math
import re
import sys
import time

SPLIT = re.compile(r"[^\w]|_", re.UNICODE)


def tokenize(text):
    return [t.lower() for t in SPLIT.split(text) if len(t) > 1]


def build_index(docs):
    toks = [tokenize(d["text"]) for d in docs]
    postings = {}
    for i, t in enumerate(toks):
        counts = {}
        for term in t:
            counts[term] = counts.get(term, 0) + 1
        for term, tf in counts.items():
            postings.setdefault(term, []).append((i, tf))
    lengths = [len(t) for t in toks]
    return postings, lengths, sum(lengths) / len(lengths)


def top_k(query, index, names, k, k1=1.2, b=0.75):
    postings, lengths, avg = index
    n = len(lengths)
    scores = [0.0] * n
    times = {}
    for term in tokenize(query):
        times[term] = times.get(term, 0) + 1
    for term, m in times.items():
        plist = postings.get(term)
        if not plist:
            continue
        n_q = len(plist)
        idf = math.log((n - n_q + 0.5) / (n_q + 0.5) + 1.0)
        for i, tf in plist:
            norm = 1 - b + b * lengths[i] / avg
            scores[i] += m * idf * tf * (k1 + 1) / (tf + k1 * norm)
    order = sorted(range(n), key=lambda i: (-scores[i], i))
    return [names[i] for i in order[:k]]


def main():
    docs = json.load(open(sys.argv[1], encoding="utf-8"))
    query = open(sys.argv[2], encoding="utf-8").read()
    k, repeats = int(sys.argv[3]), int(sys.argv[4])
    index = build_index(docs)
    names = [d["name"] for d in docs]
    best = None
    top = None
    for _ in range(repeats):
        t = time.perf_counter()
        top = top_k(query, index, names, k)
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    print(json.dumps({"step_ms": best * 1000.0, "top": top}))


main()
