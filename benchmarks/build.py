"""What ccache saves when builds follow each other (a bisect): a cold build, then the adjacent build
with the cache warm, then the same adjacent build with ccache disabled.

    python benchmarks/build.py [--cold 9592] [--next 9596]

Runs in a temporary tokconf cache and a temporary ccache folder (the sdists come from PyPI, trusted
on first use into a temporary lock), so nothing already cached helps. libllama only, as a bisect
builds. Takes about a quarter of an hour on 2 cores. What ccache saves depends on what changed:
b9592 -> b9596 changed four files of src/ (measured: 157 s warm against 190 s without ccache);
b9589 -> b9592 changed ggml.h, which every object includes, so nothing could be reused there
(208 s warm against 198 s without).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from tokconf.llama.build import build, build_root
from tokconf.llama.fetch import fetch
from tokconf.llama.lock import Lock


def timed_build(number: int, lock: Lock) -> float:
    fetch(number, lock=lock)
    started = time.monotonic()
    build(number, quiet=True, tokenize=False)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cold", type=int, default=9592)
    parser.add_argument("--next", type=int, default=9596)
    args = parser.parse_args()
    if shutil.which("ccache") is None:
        raise SystemExit("ccache is not installed (apt-get install ccache)")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TOKCONF_CACHE"] = str(Path(tmp) / "tokconf")
        os.environ["CCACHE_DIR"] = str(Path(tmp) / "ccache")
        lock = Lock(Path(tmp) / "tokconf.lock")
        cold = timed_build(args.cold, lock)
        warm = timed_build(args.next, lock)
        shutil.rmtree(build_root(args.next) / "build")
        os.environ["CCACHE_DISABLE"] = "1"
        without = timed_build(args.next, lock)
    print(f"b{args.cold} cold (empty ccache): {cold:.0f} s")
    print(f"b{args.next} after it, ccache warm: {warm:.0f} s ({without / warm:.1f}x faster than without)")
    print(f"b{args.next} after it, ccache disabled: {without:.0f} s")


if __name__ == "__main__":
    main()
