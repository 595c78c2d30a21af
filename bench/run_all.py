"""Run every benchmark in bench/ (each prints its own table with the ratio against its baseline)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    failures = 0
    for script in sorted(HERE.glob("bench_*.py")):
        print(f"\n=== {script.name} ===", flush=True)
        result = subprocess.run([sys.executable, str(script)], cwd=HERE.parent, check=False)
        failures += result.returncode != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
