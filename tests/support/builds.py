"""What several test modules build once per session, shared by every xdist worker: the wheel (from a
clean copy of the package's files), and the example adapters, each built as its author would build it;
and the published llama.cpp builds they compare with, found in tokconf's cache or made there."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tokconf.builds.build import Build, LibraryKind, build
from tokconf.builds.fetch import fetch, fetched_source
from tokconf.builds.pins import DEFAULT_BUILD
from tokconf.core.errors import TokconfError

ROOT = Path(__file__).resolve().parents[2]
FULL_ANSWERS = Path(__file__).resolve().parent / "full_build_answers.json"  # benchmarks/tokenizer_answers.py
EXAMPLES = ROOT / "examples"
DEBIAN_CARGO = Path("/usr/bin/cargo")  # CI's toolchain (rustc 1.63): the Rust port must build with it


def once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """A folder `make` fills once per session, under a lock every xdist worker of the session shares."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    folder = base / name
    with (base / f"{name}.lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if not (folder / ".done").is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            make(folder)
            (folder / ".done").touch()
    return folder


def _wheel(folder: Path) -> None:
    """The wheel, built from a copy of the package's files: no build/ is written into this checkout, and
    none left there by another build gets into the wheel."""
    source = folder / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in ("harness", "reference_impl", "corpora", "recordings"):
        (source / name).symlink_to(ROOT / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(folder), str(source)], check=True
    )
    shutil.rmtree(source)


def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's wheel, built once per session."""
    return next(once(tmp_path_factory, "wheel", _wheel).glob("*.whl"))


def fresh_venv(folder: Path, *requirements: str) -> Path:
    """A venv with these installed (a wheel, `wheel[extra]`, `pytest`), and no pip of its own."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    install(folder, *requirements)
    return folder


def install(venv: Path, *requirements: str) -> None:
    """pip installs into the venv (`--python`); no bytecode compiled ahead for every installed module."""
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", "--no-compile"]
    subprocess.run([*pip, *requirements], check=True)


def tool(name: str, package: str) -> str:
    found = shutil.which(name)
    assert found, f"{name} is needed for the examples: bash setup.sh installs it (apt-get install {package})"
    return found


def build_go(folder: Path) -> None:
    """`go build`: the standard library only, no network; `folder/tokconf-go-adapter`."""
    subprocess.run([tool("go", "golang-go"), "build", "-o", str(folder / "tokconf-go-adapter"), "."],
                   cwd=EXAMPLES / "go", check=True, capture_output=True)  # fmt: skip


def build_java(folder: Path) -> None:
    """`javac`: the JDK only, no jars, no network; the classes in `folder/out`."""
    sources = sorted(str(source) for source in (EXAMPLES / "java").glob("*.java"))
    javac = tool("javac", "default-jdk-headless")
    subprocess.run([javac, "-d", str(folder / "out"), *sources], check=True, capture_output=True)


def build_rust(folder: Path) -> None:
    """`cargo build --release`, offline (no dependencies), into `folder/target`, so the source tree
    stays clean; with Debian's cargo and the rustc beside it, not rustup's on PATH."""
    built = cargo(folder, "build")
    assert built.returncode == 0, f"cargo build failed:\n{built.stderr}"


def cargo(folder: Path, command: str) -> subprocess.CompletedProcess[str]:
    """`cargo COMMAND --release --offline` in examples/rust, its target in `folder/target`."""
    program = str(DEBIAN_CARGO) if DEBIAN_CARGO.exists() else tool("cargo", "cargo")
    env = dict(os.environ, CARGO_TARGET_DIR=str(folder / "target"))
    if Path(program).with_name("rustc").exists():
        env["RUSTC"] = str(Path(program).with_name("rustc"))
    return subprocess.run([program, command, "--release", "--offline"], cwd=EXAMPLES / "rust", env=env,
                          capture_output=True, text=True)  # fmt: skip


def full_answers() -> dict[str, Any]:
    """FULL_ANSWERS's builds: per build, its sdist, its full libllama and its answers' digests."""
    builds: dict[str, Any] = json.loads(FULL_ANSWERS.read_text(encoding="utf-8"))["builds"]
    return builds


def _sdist_sha256(number: int) -> str:
    described = full_answers()[f"b{number}"]["source"]  # `PyPI sdist ... (sha256 <hex>)`
    return str(described.rsplit("sha256 ", 1)[1].rstrip(")"))


def tokenizer_build(number: int) -> Build:
    """Build N's tokenizer-only library: fetched (the sdist FULL_ANSWERS was made from) and built, or
    found in the cache; a failure says why."""
    try:
        if fetched_source(number) is None:
            fetch(number, sha256=_sdist_sha256(number) if number != DEFAULT_BUILD else None)
        made = build(number, jobs=2, quiet=True, tokenize=False)
    except TokconfError as error:
        pytest.fail(f"b{number}: {error}", pytrace=False)
    assert made.kind is LibraryKind.TOKENIZER_ONLY and made.fallback is None, made.fallback
    return made
