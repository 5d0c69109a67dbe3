"""What `--explain` costs: ports with planted bugs, the check and the explanation timed apart.

    PYTHONPATH=tests python benchmarks/explain.py

The ports (`tests/fake_impls.py`) wrap the live llama.cpp: `two_bugs` drops BOS and takes U+3000 for
a space (about 3,100 failing cases of llama-spm, most named by a pattern without shrinking);
`normalizes_nfc` applies NFC first (about 1,850 failing cases of qwen2, each offered to the causes
found or shrunk). Target: explaining 2,000 failures on 2 cores in under a minute.
"""

from __future__ import annotations

import time
from pathlib import Path

from harness.check.engine import Selection, check_file
from harness.check.explain import explain_file
from harness.check.xfail import ExpectedFailures
from harness.implementations.resolve import resolve

BUNDLED = Path(__file__).resolve().parent.parent / "recordings" / "b11192"
PORTS = {"fake_impls:two_bugs": "llama-spm", "fake_impls:normalizes_nfc": "qwen2"}


def main() -> None:
    for spec, vocab in PORTS.items():
        print(f"{spec} on {vocab}:")
        measure(spec, BUNDLED / f"{vocab}.yaml")


def measure(spec: str, recording: Path) -> None:
    impl = resolve(spec, None)
    try:
        started = time.monotonic()
        checked = check_file(recording, impl, Selection(), ExpectedFailures(), None)
        checking = time.monotonic() - started
        failed = sum(1 for r in checked.results if r.verdict.value == "failed")
        started = time.monotonic()
        causes = explain_file(checked, impl)
        explaining = time.monotonic() - started
    finally:
        impl.close()
    print(f"  check: {len(checked.results)} results in {checking:.1f} s, {failed} failed")
    print(f"  explain: {failed} failures as {len(causes)} causes in {explaining:.1f} s")
    for cause in causes:
        print(f"    {len(cause.cases):5} cases: {cause.minimal!r} {cause.pattern.name if cause.pattern else ''}")


if __name__ == "__main__":
    main()
