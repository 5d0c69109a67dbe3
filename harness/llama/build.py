"""Building a fetched llama.cpp tree: shared libllama and `llama-tokenize` (`tokconf llama build`).

The build lives in `<cache>/llama.cpp/bN/build` beside the source, is streamed to the terminal and
kept in `build.log` (subprocess-tee), and is marked complete by `tokconf-build.json` only after both
targets exist. A folder without that marker is half built (interrupted, failed): the next call runs
cmake again, which finishes it incrementally, so an interrupted build costs nothing already compiled.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import subprocess_tee

from ..core.errors import TokconfError
from ..core.files import atomic_write, cache_root
from .fetch import (
    Source,
    build_root,
    builds_root,
    commit_root,
    fetch_commit,
    fetched_source,
    require_source,
    source_dir,
)

MARKER = "tokconf-build.json"

# Only what tokenization needs: no tests, examples, server, network or CPU-specific code paths.
CMAKE_OPTIONS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=ON",
    "-DGGML_NATIVE=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_SERVER=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_CURL=OFF",
]


@dataclass(frozen=True)
class Build:
    """A complete build: what the oracle backends load and run."""

    build: int
    source: Source
    libllama: Path
    llama_tokenize: Path
    llama_h: Path
    include_dirs: tuple[Path, ...]
    models_dir: Path


def build_dir(build: int) -> Path:
    """The cmake binary folder of build N."""
    return build_root(build) / "build"


def _as_build(build: int, source: Source, src: Path, out: Path) -> Build:
    # llama.cpp's CMakeLists.txt puts libraries and programs in <build>/bin.
    libllama, tokenize = out / "bin" / "libllama.so", out / "bin" / "llama-tokenize"
    return Build(
        build=build,
        source=source,
        libllama=libllama,
        llama_tokenize=tokenize,
        llama_h=src / "include" / "llama.h",
        include_dirs=(src / "ggml" / "include", src / "include"),
        models_dir=src / "models",
    )


def completed_build(build: int, tokenize: bool = True) -> Build | None:
    """Build N if its cache folder holds a complete build (with llama-tokenize, unless `tokenize` is
    false), else None (absent or half built)."""
    marker = build_dir(build) / MARKER
    source = fetched_source(build)
    if source is None or not marker.is_file():
        return None
    done = _as_build(build, source, source_dir(build), build_dir(build))
    if not done.libllama.is_file() or (tokenize and not done.llama_tokenize.is_file()):
        return None
    (build_root(build) / USED).touch()  # for `tokconf llama gc`: the least recently used go first
    return done


USED = ".last-used"


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())


def collect_garbage(max_bytes: int, keep: set[int]) -> list[tuple[str, int]]:
    """Delete cached builds (tagged builds and a commit-level bisect's commits), least recently used
    first, until they take at most `max_bytes`; the builds in `keep` stay whatever their size.
    Returns (name, bytes) of what was deleted: `bN` or `commit <sha>`."""
    folders = {f"b{p.name[1:]}": p for p in builds_root().glob("b*") if p.name[1:].isdigit()}
    folders |= {f"commit {p.name}": p for p in (builds_root() / "commits").glob("*") if p.is_dir()}
    kept = {f"b{number}" for number in keep}
    sizes = {name: _size(p) for name, p in folders.items()}
    total = sum(sizes.values())

    def last_used(name: str) -> float:
        stamp = folders[name] / USED
        return stamp.stat().st_mtime if stamp.is_file() else folders[name].stat().st_mtime

    deleted = []
    for name in sorted((n for n in folders if n not in kept), key=last_used):
        if total <= max_bytes:
            break
        shutil.rmtree(folders[name])
        total -= sizes[name]
        deleted.append((name, sizes[name]))
    return deleted


def require_build(build: int, tokenize: bool = True) -> Build:
    """Complete build N (without llama-tokenize if `tokenize` is false: what libllama users need), or
    an error that says the one command that makes it."""
    done = completed_build(build, tokenize)
    if done is None:
        raise TokconfError(
            f"llama.cpp b{build} is not built (no complete build in {build_dir(build)})",
            f"run `tokconf llama build --build {build}` (a few minutes, once per machine)",
        )
    return done


def _check_toolchain() -> None:
    missing = [tool for tool in ("cmake",) if shutil.which(tool) is None]
    if not any(shutil.which(cxx) for cxx in ("c++", "g++", "clang++")):
        missing.append("a C++ compiler (g++ or clang++)")
    if not any(shutil.which(cc) for cc in ("cc", "gcc", "clang")):
        missing.append("a C compiler (gcc or clang)")
    if missing:
        raise TokconfError(
            "cannot build llama.cpp: missing " + ", ".join(missing),
            "install them, e.g. `apt-get install cmake g++` (Debian/Ubuntu) or `pip install cmake`",
        )


def _ccache_env() -> dict[str, str]:
    """ccache, when installed, is used by llama.cpp's CMake on its own (GGML_CCACHE); the build trees
    of different builds live in different cache folders, so paths are hashed relative to the cache
    root, or no object of one build would ever serve the next (benchmarks/build.py measures it)."""
    if shutil.which("ccache") is None:
        return {}
    return {"CCACHE_BASEDIR": str(cache_root()), "CCACHE_NOHASHDIR": "1"}


def build(build_number: int, jobs: int | None = None, quiet: bool = False, tokenize: bool = True) -> Build:
    """Build libllama (and llama-tokenize, unless `tokenize` is false: a bisect needs only the library)
    for a fetched tree, or return the complete build already there."""
    done = completed_build(build_number, tokenize)
    if done is not None:
        return done
    source = require_source(build_number)
    made = _as_build(build_number, source, source_dir(build_number), build_dir(build_number))
    again = f"tokconf llama build --build {build_number}"
    _compile(made, source_dir(build_number), build_dir(build_number), jobs, quiet, tokenize, again)
    return made


def build_commit(repo: Path, commit: str, build_number: int, jobs: int | None = None, quiet: bool = False) -> Build:
    """libllama of one commit of a llama.cpp checkout (a commit-level bisect), kept in the cache under
    the commit; `build_number` is the last tag before it."""
    source = fetch_commit(repo, commit, build_number)
    root = commit_root(commit)
    made = _as_build(build_number, source, root / "src", root / "build")
    if (root / "build" / MARKER).is_file() and made.libllama.is_file():
        (root / USED).touch()
        return made
    _compile(made, root / "src", root / "build", jobs, quiet, False, "tokconf bisect (it resumes the build)")
    return made


def _compile(made: Build, src: Path, out: Path, jobs: int | None, quiet: bool, tokenize: bool, again: str) -> None:
    """cmake configure and build of `src` into `out`, logged beside it; the marker is written last."""
    source = made.source
    label = f"commit {source.commit}" if source.kind == "git-commit" else f"b{made.build}"
    if source.kind != "pypi-sdist":  # the user's tree: its CMakeLists.txt runs as it is
        print(f"building {label} from {source.describe()}: its build files run as they are",
              file=sys.stderr, flush=True)  # fmt: skip
    _check_toolchain()
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).unlink(missing_ok=True)
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    configure = ["cmake", "-S", str(src), "-B", str(out), *generator, *CMAKE_OPTIONS]
    configure.append(f"-DLLAMA_BUILD_NUMBER={made.build}")
    parallel = str(jobs or os.cpu_count() or 2)
    targets = ["llama", "llama-tokenize"] if tokenize else ["llama"]
    compile_ = ["cmake", "--build", str(out), "--target", *targets, "-j", parallel]
    log = out.parent / "build.log"
    with log.open("w", encoding="utf-8") as sink:
        for step in (configure, compile_):
            print(f"$ {' '.join(step)}", file=sys.stderr, flush=True)
            result = subprocess_tee.run(step, quiet=quiet, stdout=sys.stderr, env={**os.environ, **_ccache_env()})
            sink.write(f"$ {' '.join(step)}\n{result.stdout or ''}{result.stderr or ''}")
            sink.flush()
            if result.returncode != 0:
                raise TokconfError(
                    f"building llama.cpp {label} failed at `{' '.join(step[:3])}` (log: {log})",
                    f"read the log; after fixing the cause, `{again}` resumes",
                )
    if not made.libllama.is_file() or (tokenize and not made.llama_tokenize.is_file()):
        raise TokconfError(
            f"cmake finished but {made.libllama} or {made.llama_tokenize} is missing (log: {log})",
            "report this with the log; the llama.cpp tree may lay out its targets differently",
        )
    marker = {"build": made.build, "source": asdict(source), "libllama": str(made.libllama)}
    atomic_write(out / MARKER, json.dumps(marker, indent=2) + "\n", "build marker")
