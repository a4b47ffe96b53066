"""Markdown tables from lab.py's and paths.py's JSON lines: `summarize.py run-t1.jsonl [...]`."""

from __future__ import annotations

import json
import sys
from collections import defaultdict


def main() -> None:
    rows = []
    for path in sys.argv[1:]:
        with open(path) as lines:
            rows += [json.loads(line) for line in lines if line.strip()]
    claims = [r for r in rows if "design" in r]
    paths = [r for r in rows if "path" in r]
    if claims:
        by = defaultdict(dict)
        for r in claims:
            by[(r["design"], r["tenants"], r["n"], r["max_jobs"])][r["phase"]] = r
        print(
            "| design | tenants | dead tuples pinned (N) | lease of | held: buffers / index tuples / ms"
            " | after the hold, 2nd claim: buffers / index tuples | vacuumed: buffers / index tuples / ms |"
        )
        print("|---|---|---|---|---|---|---|")
        for (design, tenants, n, max_jobs), phases in by.items():
            h, a, v = phases["hold"], phases["released-again"], phases["vacuumed"]
            print(
                f"| {design} | {tenants} | {n:,} | {max_jobs} | {h['buffers']:,} / {h['index_tuples']:,} / {h['ms']}"
                f" | {a['buffers']:,} / {a['index_tuples']:,} | {v['buffers']:,} / {v['index_tuples']:,} / {v['ms']} |"
            )
    if paths:
        by = defaultdict(dict)
        for r in paths:
            by[(r["path"], r["n"])][r["phase"]] = r
        print()
        print(
            "| read | dead tuples pinned (N) | held: buffers / index tuples / ms | after the hold, 2nd run"
            " | vacuumed: buffers / index tuples / ms |"
        )
        print("|---|---|---|---|---|")
        for (path, n), phases in sorted(by.items()):
            h, a, v = phases["hold"], phases["released-again"], phases["vacuumed"]
            print(
                f"| {path} | {n:,} | {h['buffers']:,} / {h['index_tuples']:,} / {h['ms']}"
                f" | {a['buffers']:,} / {a['index_tuples']:,} | {v['buffers']:,} / {v['index_tuples']:,} / {v['ms']} |"
            )


if __name__ == "__main__":
    main()
