"""Parser benchmark: streaming parse of synthetic files per format, against a whole-file ``json.load``.

    python bench/bench_parse.py [--traces 5000] [--steps 30]

For each format that has a synthetic writer, prints traces/s and MB/s for our streaming parser and
for the baseline (read the whole file and ``json.loads`` it, or every line for JSONL, with no
mapping to records at all), their ratio, and the peak Python memory of both: the parser's peak
must stay far below the baseline's, which holds the whole document.
No Django, no database. Not collected by pytest: ``bench/`` is outside ``testpaths``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from _setup import table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _measure(fn) -> tuple[float, int, int]:
    tracemalloc.start()
    started = time.perf_counter()
    count = fn()
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return elapsed, peak, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=5_000)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()

    from traces.importers import iter_records
    from traces.importers.synthetic import (
        synthetic_traces,
        write_mast_full_json,
        write_native_jsonl,
        write_openai_chat_jsonl,
        write_otel_json,
    )

    work = Path(tempfile.mkdtemp(prefix="bench-parse-"))
    records = list(synthetic_traces(args.traces, steps=args.steps, seed=1))
    files = {
        "native": (work / "n.jsonl", write_native_jsonl, True),
        "openai_chat": (work / "c.jsonl", write_openai_chat_jsonl, True),
        "mast_full": (work / "mad.json", write_mast_full_json, False),
        "otel": (work / "o.json", write_otel_json, False),
    }
    rows = []
    for fmt, (path, write, jsonl) in files.items():
        write(records, path)
        size_mb = path.stat().st_size / 1e6

        def ours(path: Path = path, fmt: str = fmt) -> int:
            return sum(1 for _ in iter_records(path, fmt))

        def baseline(path: Path = path, jsonl: bool = jsonl) -> int:
            text = path.read_text(encoding="utf-8")
            if jsonl:
                return len([json.loads(line) for line in text.splitlines() if line.strip()])
            return len(json.loads(text))

        t_ours, peak_ours, n = _measure(ours)
        t_base, peak_base, _ = _measure(baseline)
        rows.append(
            (
                fmt,
                f"{size_mb:.1f}",
                n,
                f"{n / t_ours:,.0f}",
                f"{size_mb / t_ours:.1f}",
                f"{size_mb / t_base:.1f}",
                f"{t_ours / t_base:.2f}x",
                f"{peak_ours / 1e6:.1f}",
                f"{peak_base / 1e6:.1f}",
            )
        )
    print(
        table(
            rows,
            (
                "format",
                "MB",
                "traces",
                "ours traces/s",
                "ours MB/s",
                "json.load MB/s",
                "time vs json.load",
                "ours peak MB",
                "json.load peak MB",
            ),
        )
    )
    print("(tracemalloc slows both sides alike; compare ratios, not absolute speeds)")


if __name__ == "__main__":
    main()
