"""What the interleaving check costs: its share of one whole `tokconf check` run, in that run.

    python benchmarks/interleave.py [--impl IMPL] [--recordings DIR] [--vocab NAME ...]

The default implementation is the reference served by tokconf's Python worker, as every Python port
is run (`cmd:python -m tokconf.implementations.command_worker reference`; `--impl reference` alone runs in
process and has no interleaving check). The run's progress lines are timed as they come: the
interleaving check is what follows the last vocabulary's `checked` line up to its `interleaved:` line
(loading every vocabulary into one process of the port, and asking them), and its share is of the
whole run's wall time. Also printed: the largest resident size of this process's children (the
worker processes, the one holding every vocabulary among them).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

from tokconf.checking.contract import INTERLEAVE
from tokconf.checking.engine import Selection
from tokconf.checking.run import check_paths
from tokconf.checking.xfail import ExpectedFailures

ROOT = Path(__file__).resolve().parent.parent
WORKER = f"cmd:{sys.executable} -m tokconf.implementations.command_worker reference"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--impl", default=WORKER)
    parser.add_argument("--recordings", type=Path, default=ROOT / "recordings" / "b11192")
    parser.add_argument("--vocab", action="append", default=[], help="only these vocabularies (default: every one)")
    args = parser.parse_args()
    stamps: list[tuple[float, str]] = []

    def progress(line: str) -> None:
        stamps.append((time.perf_counter(), line))

    start = time.perf_counter()
    run = check_paths([args.recordings], args.impl, Selection(frozenset(args.vocab)), ExpectedFailures(), None, None,
                      progress)  # fmt: skip
    total = time.perf_counter() - start
    checked = [at for at, line in stamps if not line.startswith("interleaved:")]
    interleaved = [at for at, line in stamps if line.startswith("interleaved:")]
    asked = sum(1 for result in run.results if result.section == INTERLEAVE)
    vocabs = len({result.vocab for result in run.results if result.section == INTERLEAVE})
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"{run.impl_name}: {len(checked)} recordings, {len(run.results):,} verdicts, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(run.decision.line())
    if not interleaved:
        print(f"whole run {total:.1f} s; no interleaving check")
        return
    share = interleaved[-1] - checked[-1]
    print(f"whole run {total:.1f} s; interleaving check {share:.1f} s ({100 * share / total:.1f}%): "
          f"{asked:,} answers of {vocabs} vocabularies; largest child process {children:.0f} MB")  # fmt: skip


if __name__ == "__main__":
    main()
