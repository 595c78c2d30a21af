"""Run every benchmark in bench/ (each prints its own table against its baseline), then one summary table of
every goal and whether it is met."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _setup import GOALS_ENV, table  # noqa: E402


def main() -> int:
    failures = 0
    with tempfile.TemporaryDirectory(prefix="bench-goals-") as tmp:
        goals = Path(tmp) / "goals.jsonl"
        goals.touch()
        env = {**os.environ, GOALS_ENV: str(goals)}
        for script in sorted(HERE.glob("bench_*.py")):
            print(f"\n=== {script.name} ===", flush=True)
            result = subprocess.run([sys.executable, str(script)], cwd=HERE.parent, env=env, check=False)
            if result.returncode != 0:
                failures += 1
                print(f"{script.name} exited with {result.returncode}", flush=True)
        rows = [json.loads(line) for line in goals.read_text().splitlines() if line.strip()]
    print("\n=== summary: every goal, measured in this run ===")
    print(
        table(
            [
                (r["bench"], r["goal"], r["measured"], r["target"], "met" if r["met"] else "NOT met")
                for r in rows
            ],
            ("bench", "goal", "measured", "target", "verdict"),
        )
    )
    met = sum(r["met"] for r in rows)
    print(f"\n{met} of {len(rows)} goals met; {failures} bench(es) failed to run")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
