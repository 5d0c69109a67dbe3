"""What verifying a published build's cached tree costs (`tokconf.builds.tree`), against the check it guards.

    python benchmarks/tree_check.py [--repeats 7]

In one run, alternately: the pinned build's check as a process first makes it (its tree hashed and
the digest compared with the pin), the same check again in that process (nothing under the tree
changed: its files' `lstat` alone), what an unpinned build's check adds (its sdist's members read
from the archive), and the whole `tokconf check --impl llama.cpp@11192 --vocab gpt-2`, which makes
the check once; the median of each and the check's share of the whole. Reads tokconf's cache; writes
nothing there.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from tokconf.builds.fetch import fetched_source, sdist_archive, source_dir
from tokconf.builds.pins import DEFAULT_BUILD, PINNED_TREE_SHA256
from tokconf.builds.tree import archive_entries, tree_digest, tree_entries, verify_tree


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    source = fetched_source(DEFAULT_BUILD)
    assert source is not None, f"fetch b{DEFAULT_BUILD} first: tokconf llama build"
    command = [sys.executable, "-m", "tokconf", "check", "--impl", f"llama.cpp@{DEFAULT_BUILD}", "--vocab", "gpt-2"]
    pinned, again, unpinned, whole = [], [], [], []
    verify_tree(source)
    for _ in range(args.repeats):
        started = time.perf_counter()
        assert tree_digest(tree_entries(source_dir(DEFAULT_BUILD))) == PINNED_TREE_SHA256[DEFAULT_BUILD]
        pinned.append(time.perf_counter() - started)
        started = time.perf_counter()
        verify_tree(source)
        again.append(time.perf_counter() - started)
        started = time.perf_counter()
        archive_entries(sdist_archive(DEFAULT_BUILD), DEFAULT_BUILD)
        unpinned.append(time.perf_counter() - started)
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        whole.append(time.perf_counter() - started)
    check, repeated, extra, run = (statistics.median(times) for times in (pinned, again, unpinned, whole))
    print(f"pinned tree check (b{DEFAULT_BUILD}): {check:.2f} s median of {args.repeats}; again in the same "
          f"process: {repeated:.3f} s")  # fmt: skip
    print(f"an unpinned build's check adds, reading its sdist: {extra:.2f} s")
    print(f"tokconf check --impl llama.cpp@{DEFAULT_BUILD} --vocab gpt-2: {run:.2f} s; the tree check is "
          f"{check / run:.1%} of it (an unpinned build's: {(check + extra) / run:.1%})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
