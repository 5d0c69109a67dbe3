"""What installing tokconf costs every pytest run: the import of its `pytest11` plugin.

    python benchmarks/plugin_import.py [--runs 20]

Times `import tokconf.plugin` in fresh interpreters that have imported pytest already (as pytest
loads its plugins), and prints the best and the median. The target is at most 50 ms.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

PROBE = "import time, pytest; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"


def _time(module: str) -> float:
    result = subprocess.run([sys.executable, "-c", PROBE.format(module=module)], capture_output=True, check=True)
    return float(result.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    plugin = [_time("tokconf.plugin") for _ in range(args.runs)]
    print(f"import tokconf.plugin after pytest: best {min(plugin) * 1000:.1f} ms, "
          f"median {statistics.median(plugin) * 1000:.1f} ms over {args.runs} runs (target <= 50 ms)")  # fmt: skip


if __name__ == "__main__":
    main()
