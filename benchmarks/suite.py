"""The test suite's wall time on this machine, as tox runs it and without the oracle tests.

    python benchmarks/suite.py

Runs `pytest -n auto --dist worksteal` (tox's tests environment) and `pytest -m "not oracle"` (the
tests that need no llama.cpp build) from the repository root, and prints each wall time with its
pytest summary line and the name of each test that failed or erred. Target (issue 34): tox, whose
tests environment is the first run here, in 8 minutes on a fresh clone of an idle 2-core machine;
docs/benchmarks.md says where it stands.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = {
    "whole suite (tox)": ["-n", "auto", "--dist", "worksteal"],
    'without the oracle (-m "not oracle")': ["-n", "auto", "--dist", "worksteal", "-m", "not oracle"],
}


def main() -> None:
    for label, args in RUNS.items():
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", *args],
            cwd=ROOT, capture_output=True, text=True, check=False,
        )  # fmt: skip
        seconds = time.monotonic() - started
        last = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else f"exit {result.returncode}"
        print(f"{label}: {seconds:.0f} s wall ({last})")
        for line in result.stdout.splitlines():  # a failed run names its tests (-rfE): a flake is found by name
            if line.startswith(("FAILED ", "ERROR ")):
                print(f"  {line}")


if __name__ == "__main__":
    main()
