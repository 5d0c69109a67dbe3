"""What the tokenizer-only equality tests cost at the least: llama.cpp's own work on every bundled input.

    python benchmarks/equality_cost.py [--build 9093 --build 11192 --build 11434]

tests/test_tokenizer_build.py asks each build every bundled recording's inputs in every mode, its facts,
every piece and the detokenized text (benchmarks/tokenizer_answers.py's `answer_digests`). This runs
exactly that for each build (its tokenizer-only library, from the cache) and prints the CPU seconds
spent in the llama.cpp worker processes (starting, loading each vocabulary, answering) apart from
tokconf's own, and the wall time; then the total against the 960 CPU seconds that 8 minutes hold on
this machine's 2 cores, the suite's target (docs/benchmarks.md). CPU seconds, not wall: they do not
depend on what else the machine runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import resource
import time
from pathlib import Path

from tokconf.builds.build import build

ROOT = Path(__file__).resolve().parent.parent
BUDGET = 8 * 60 * 2  # CPU seconds in 8 minutes on 2 cores


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", type=int, action="append", help="default: 9093, 11192 and 11434")
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("tokenizer_answers", ROOT / "benchmarks" / "tokenizer_answers.py")
    assert spec is not None and spec.loader is not None
    answers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(answers)
    total = 0.0
    for number in args.build or [9093, 11192, 11434]:
        made = build(number, jobs=2, quiet=True, tokenize=False)  # fetched already (the tests fetch them)
        children, parent, wall = _children_cpu(), time.process_time(), time.monotonic()
        answers.answer_digests(made)
        children, parent = _children_cpu() - children, time.process_time() - parent
        total += children + parent
        print(f"b{number}: {children:.0f} CPU-s in llama.cpp's workers, {parent:.0f} in tokconf, "
              f"{time.monotonic() - wall:.0f} s wall")  # fmt: skip
    print(f"in all {total:.0f} CPU-s: {100 * total / BUDGET:.0f}% of the {BUDGET} CPU-s 8 minutes hold on 2 cores")


if __name__ == "__main__":
    main()
