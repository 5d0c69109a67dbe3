"""`tokconf bisect --good 9093 --bad 11192 --vocab bert-bge` from an empty build cache, as a user runs it.

    python benchmarks/bisect_cold.py [--good 9093] [--bad 11192] [--vocab bert-bge] [--expect 9596] [--warm-ccache]

What is cold: a fresh tokconf cache (no build, no extracted tree, no probe answers, no registry list)
and, unless --warm-ccache, a fresh ccache folder, so every compiled object is compiled. What is
shared: the sdists already downloaded into `downloads/` of the usual cache (linked in; those missing
are downloaded and counted), since the network is not what a bisect's speed is about; their hashes
are checked as on any fetch (trust on first use into a temporary lock). The command runs in a
subprocess, as `tokconf bisect` does for a user; the figure is its wall time, with `uptime` before
and after, since this machine is shared. The bisect must name `--expect` as the first build
answering otherwise, or the benchmark fails.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tokconf.core.files import cache_root


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--good", type=int, default=9093)
    parser.add_argument("--bad", type=int, default=11192)
    parser.add_argument("--vocab", default="bert-bge")
    parser.add_argument("--expect", type=int, default=9596, help="the first build answering otherwise")
    parser.add_argument("--warm-ccache", action="store_true", help="keep the usual ccache (not cold compiles)")
    args = parser.parse_args()
    downloads = cache_root() / "downloads"
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "TOKCONF_CACHE": str(Path(tmp) / "tokconf"), "TOKCONF_LOCK": str(Path(tmp) / "lock")}
        if not args.warm_ccache:
            env["CCACHE_DIR"] = str(Path(tmp) / "ccache")
        (Path(tmp) / "tokconf").mkdir()
        if downloads.is_dir():
            (Path(tmp) / "tokconf" / "downloads").symlink_to(downloads)
        command = [sys.executable, "-m", "tokconf", "bisect", "--good", str(args.good), "--bad", str(args.bad)]
        command += ["--vocab", args.vocab]
        load = os.getloadavg()
        started = time.monotonic()
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        seconds = time.monotonic() - started
        builds = sorted(p.name for p in (Path(tmp) / "tokconf" / "llama.cpp").glob("b*"))
    print(done.stdout, end="")
    if done.returncode != 0:
        raise SystemExit(f"tokconf bisect failed ({done.returncode}):\n{done.stderr[-3000:]}")
    found = f"first build answering otherwise:     b{args.expect}"
    if found not in done.stdout:
        raise SystemExit(f"the bisect did not find b{args.expect}")
    ccache = "warm ccache" if args.warm_ccache else "empty ccache"
    print(f"\ncold bisect b{args.good}..b{args.bad} --vocab {args.vocab}: {seconds:.0f} s, {len(builds)} builds made "
          f"({', '.join(builds)}), {ccache}, sdists shared from {downloads}")  # fmt: skip
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
