"""Building a llama.cpp tree: shared libllama and `llama-tokenize` (`tokconf llama build`).

Two kinds of library (`LibraryKind`). What loads vocabularies and tokenizes (`llama.cpp@N`, a
bisect's probes, the oracle's workers: every caller asking `tokenize=False`) gets the
**tokenizer-only** libllama (tokconf.builds.tokenizer_only: the vocabulary, unicode and loader files
and a shim, about a minute cold on 2 cores, seconds when ccache has its files), in
`tokenizer/<recipe>/` beside the source. `llama-tokenize` (`tokenize=True`) needs llama.cpp's
**full** build, made by its CMake in `build/`; `tokconf llama build` makes both. Where the shim
cannot be built for a tree (a refactor of the loader it does not know), the full libllama stands in:
said on stderr and in the tokenizer folder's marker, and the Build says so (`fallback`).

One machinery for every tree in the cache: a tagged build (`<cache>/llama.cpp/bN`), a bisect's
commit (`commits/<sha>`) and a local tree's snapshot (`local/<key>`, tokconf.builds.local). The build
lives in `build/` beside the source, is streamed to the terminal and kept in `build.log`
(subprocess-tee), and is marked complete by `tokconf-build.json` only after its targets exist. A
folder without that marker is half built (interrupted, failed): the next call runs cmake again, which
finishes it incrementally, so an interrupted build costs nothing already compiled.
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import json
import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import subprocess_tee

from ..core.errors import TokconfError
from ..core.files import atomic_write, cache_root, writable_cache
from .fetch import (
    CMAKE_FOLDER,
    TOKENIZER,
    Source,
    build_root,
    builds_root,
    commit_root,
    fetch_commit,
    fetched_source,
    source_dir,
)
from .tokenizer_only import LIBRARY, ShimFailed, compile_library, recipe
from .tree import verified_source, verify_tree

LOG_TAIL = 20  # lines of a failed build's log shown in the error

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


class LibraryKind(enum.Enum):
    """Which libllama a Build's `libllama` is."""

    FULL = "full"  # llama.cpp's CMake build of the whole library
    TOKENIZER_ONLY = "tokenizer-only"  # tokconf.builds.tokenizer_only


@dataclass(frozen=True)
class Build:
    """A complete build: what the oracle backends load and run. `fallback` says why a full libllama
    stands in where a tokenizer-only one was asked for (None otherwise)."""

    build: int
    source: Source
    libllama: Path
    llama_tokenize: Path
    llama_h: Path
    include_dirs: tuple[Path, ...]
    models_dir: Path
    kind: LibraryKind = LibraryKind.FULL
    fallback: str | None = None


def build_dir(build: int) -> Path:
    """The cmake binary folder of build N."""
    return build_root(build) / CMAKE_FOLDER


def tree_build(build: int, source: Source, src: Path, out: Path, models_dir: Path | None = None) -> Build:
    """The Build that compiling `src` into `out` makes (whether or not it is made yet); its vocab
    files are the tree's `models/` unless `models_dir` says otherwise."""
    # llama.cpp's CMakeLists.txt puts libraries and programs in <build>/bin.
    libllama, tokenize = out / "bin" / "libllama.so", out / "bin" / "llama-tokenize"
    return Build(
        build=build,
        source=source,
        libllama=libllama,
        llama_tokenize=tokenize,
        llama_h=src / "include" / "llama.h",
        include_dirs=(src / "ggml" / "include", src / "include"),
        models_dir=models_dir or src / "models",
    )


def library_folder(root: Path) -> Path:
    """Where this tokconf's tokenizer-only library of the tree in `root` goes: `tokenizer/<recipe>`.
    Keyed by the recipe, so two tokconf versions sharing one cache (a CI image, a user's second venv)
    each keep their own library instead of rebuilding over the other's while its tests load it."""
    return root / TOKENIZER / recipe()


def library_build(full: Build, root: Path) -> Build:
    """The tokenizer-only Build beside the full `full` (same tree, header and vocab files), in
    `library_folder(root)` (whether or not it is made yet); `llama_tokenize` stays the full build's."""
    return replace(full, libllama=library_folder(root) / LIBRARY, kind=LibraryKind.TOKENIZER_ONLY)


def completed_library(full: Build, root: Path) -> Build | None:
    """The complete tokenizer-only library of the tree in `root`, or the full one that stands in for
    it (its marker says why, and the full build is complete), else None; stamped as used."""
    out = library_folder(root)
    if not (out / MARKER).is_file():
        return None
    try:
        marker = json.loads((out / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # cut short (a full disk, a kill): not complete, so built again
        return None
    if not isinstance(marker, dict):
        return None
    if marker.get("kind") == LibraryKind.FULL.value:  # the shim failed for this tree
        if not is_complete(full, root / CMAKE_FOLDER, tokenize=False):
            return None
        return replace(full, fallback=marker.get("fallback"))
    made = library_build(full, root)
    if not made.libllama.is_file():
        return None
    _stamp_used(root)
    return made


def is_complete(made: Build, out: Path, tokenize: bool) -> bool:
    """Whether `out` holds a complete build: the marker written last, and the targets asked for (an
    earlier build may have made libllama alone); a complete one is stamped as used, for
    `tokconf llama gc` (the least recently used go first)."""
    if not (out / MARKER).is_file() or not made.libllama.is_file() or (tokenize and not made.llama_tokenize.is_file()):
        return False
    _stamp_used(out.parent)
    return True


def completed_build(build: int, tokenize: bool = True) -> Build | None:
    """Build N if its cache folder holds it complete: the full build with llama-tokenize, or, when
    `tokenize` is false, the tokenizer-only library (or the full one standing in for it); else None
    (absent or half built)."""
    source = fetched_source(build)
    if source is None:
        return None
    return completed(tree_build(build, source, source_dir(build), build_dir(build)), build_root(build), tokenize)


def completed(full: Build, root: Path, tokenize: bool) -> Build | None:
    """The complete build of the tree in `root` (`full` says where its full build goes), else None: with
    `tokenize`, the full build with llama-tokenize; without, the tokenizer-only library (or the full one
    standing in for it)."""
    if not tokenize:
        return completed_library(full, root)
    return full if is_complete(full, root / CMAKE_FOLDER, tokenize) else None


USED = ".last-used"


def _stamp_used(root: Path) -> None:
    """For `tokconf llama gc` (least recently used first): best effort, a cache it cannot stamp (read
    only, full) still serves a complete build."""
    with contextlib.suppress(OSError):
        (root / USED).touch()


def _size(path: Path) -> int:
    if path.is_file() and not path.is_symlink():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def collect_garbage(max_bytes: int, keep: set[int]) -> list[tuple[str, int]]:
    """Delete cached builds (tagged builds, a commit-level bisect's commits, local trees' builds),
    least recently used first, until they take at most `max_bytes`; the builds in `keep` stay whatever
    their size. Before any build, the tokenizer-only libraries other tokconf versions made (another
    recipe's folder, or the single `tokenizer/` folder of versions before recipe folders): this one
    cannot load them, and their version rebuilds one in seconds. Returns (name, bytes) of what was
    deleted: `bN`, `commit <sha>` or `local <key>`, or `bN: tokenizer-only libraries of other tokconf
    versions`."""
    folders = {f"b{p.name[1:]}": p for p in builds_root().glob("b*") if p.name[1:].isdigit()}
    folders |= {f"commit {p.name}": p for p in (builds_root() / "commits").glob("*") if p.is_dir()}
    folders |= {f"local {p.name}": p for p in (builds_root() / "local").glob("*") if p.is_dir()}
    kept = {f"b{number}" for number in keep}
    sizes = {name: _size(p) for name, p in folders.items()}
    total = sum(sizes.values())
    deleted, current = [], recipe()
    for name, folder in sorted(folders.items()):
        stale = [p for p in sorted((folder / TOKENIZER).glob("*")) if p.name != current]
        if total <= max_bytes or not stale:
            continue
        size = sum(_size(p) for p in stale)
        for path in stale:
            _remove(path)
        total, sizes[name] = total - size, sizes[name] - size
        deleted.append((f"{name}: tokenizer-only libraries of other tokconf versions", size))

    def last_used(name: str) -> float:
        stamp = folders[name] / USED
        return stamp.stat().st_mtime if stamp.is_file() else folders[name].stat().st_mtime

    for name in sorted((n for n in folders if n not in kept), key=last_used):
        if total <= max_bytes:
            break
        shutil.rmtree(folders[name])
        total -= sizes[name]
        deleted.append((name, sizes[name]))
    return deleted


def require_build(build: int, tokenize: bool = True) -> Build:
    """Complete build N (the tokenizer-only library if `tokenize` is false: what libllama users need),
    or an error that says the one command that makes it (`tokconf llama build` makes both kinds). Its
    tree is verified first (`tokconf.builds.tree`): what runs it binds with the tree's llama.h, and a
    published build's tree must be its sdist's."""
    done = completed_build(build, tokenize)
    if done is None:
        raise TokconfError(
            f"llama.cpp b{build} is not built (no complete build in {build_dir(build)})",
            f"run `tokconf llama build --build {build}` (a few minutes, once per machine)",
        )
    verify_tree(done.source)
    return done


def _check_toolchain(cmake: bool = True) -> None:
    missing = [tool for tool in ("cmake",) if cmake and shutil.which(tool) is None]
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
    """Build N's libraries for a fetched tree, or return the complete ones already there: with
    `tokenize` false, the tokenizer-only libllama (a bisect, `llama.cpp@N`); else the full build with
    llama-tokenize, and the tokenizer-only library beside it (what libllama users then find built). A
    published build's tree is verified first (`tokconf.builds.tree`): a changed one is refused before
    anything is compiled from it, and before a library built from it earlier is returned."""
    return build_source(verified_source(build_number), jobs, quiet, tokenize)


def build_source(source: Source, jobs: int | None = None, quiet: bool = False, tokenize: bool = True) -> Build:
    """`build` of a published build's source whose tree was just verified (`verified_source`)."""
    full = tree_build(source.build, source, source_dir(source.build), build_dir(source.build))
    again = f"tokconf llama build --build {source.build}"
    return make(full, build_root(source.build), jobs, quiet, tokenize, again)


def make(full: Build, root: Path, jobs: int | None, quiet: bool, tokenize: bool, again: str) -> Build:
    """The complete build of the tree in `root/src` (`full` says where its full build goes): made, or
    found made. With `tokenize`, the full build with llama-tokenize (and the tokenizer-only library);
    without, the tokenizer-only library, or the full libllama where it cannot be made."""
    if tokenize and not is_complete(full, root / "build", tokenize=True):
        writable_cache(root, f"build llama.cpp {full.source.label()}")
        compile_tree(full, root / "src", root / "build", jobs, quiet, True, again)
    done = completed_library(full, root)
    if done is None:
        writable_cache(root, f"build the tokenizer-only libllama of llama.cpp {full.source.label()}")
        with _exclusive(root / TOKENIZER_LOCK):
            done = completed_library(full, root) or make_library(full, root, jobs, quiet, again)
    return full if tokenize else done


TOKENIZER_LOCK = ".tokenizer.lock"


@contextlib.contextmanager
def _exclusive(lock: Path) -> Iterator[None]:
    """One process at a time builds a tree's tokenizer-only library (parallel test workers, two checks
    of one build): the others wait, then find it built. Its own lock file, not a local tree's `.lock`
    (tokconf.builds.local holds that one around this call, and flock does not nest)."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def make_library(full: Build, root: Path, jobs: int | None, quiet: bool, again: str) -> Build:
    """Compile the tokenizer-only library of the tree in `root/src` into `library_folder(root)`, its log
    in `build.log` there and its marker written last; where the shim cannot be built for this tree
    (ShimFailed: a file it needs is missing, a compile or link error), build the full libllama
    instead, say so on stderr, and record why in the marker, so the next call does not try again."""
    made = library_build(full, root)
    out = library_folder(root)
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).unlink(missing_ok=True)
    _check_toolchain(cmake=False)
    label = full.source.label()
    if not quiet:
        print(f"building the tokenizer-only libllama of llama.cpp {label} in {out}", file=sys.stderr, flush=True)
    log: list[str] = []
    env = {**os.environ, **_ccache_env()}
    try:
        library = compile_library(root / "src", out, jobs or os.cpu_count() or 2, env, log, quiet)
    except ShimFailed as failed:
        reason = f"the tokenizer-only libllama cannot be built for this tree: {failed}"
        print(f"llama.cpp {label}: {reason}\nfalling back to the full libllama build", file=sys.stderr, flush=True)
        compile_tree(full, root / "src", root / "build", jobs, quiet, False, again)
        marker = {
            "build": full.build,
            "kind": LibraryKind.FULL.value,
            "fallback": reason,
            "libllama": str(full.libllama),
            "recipe": recipe(),
        }
        atomic_write(out / MARKER, json.dumps(marker, indent=2) + "\n", "build marker")
        return replace(full, fallback=reason)
    finally:
        (out / "build.log").write_text("\n".join(log), encoding="utf-8")
    if not quiet:
        stubbed = f"{len(library.stubs)} functions it does not need stubbed (listed in {out / MARKER})"
        print(
            f"llama.cpp {label}: tokenizer-only libllama built in {library.seconds:.0f} s, {stubbed}", file=sys.stderr
        )
    marker = {
        "build": full.build,
        "kind": LibraryKind.TOKENIZER_ONLY.value,
        "source": asdict(full.source),
        "libllama": str(made.libllama),
        "recipe": recipe(),
        "stubs": list(library.stubs),
    }
    atomic_write(out / MARKER, json.dumps(marker, indent=2) + "\n", "build marker")
    _stamp_used(root)
    return made


def build_commit(repo: Path, commit: str, build_number: int, jobs: int | None = None, quiet: bool = False) -> Build:
    """The tokenizer-only libllama of one commit of a llama.cpp checkout (a commit-level bisect), kept
    in the cache under the commit; `build_number` is the last tag before it."""
    source = fetch_commit(repo, commit, build_number)
    root = commit_root(commit)
    full = tree_build(build_number, source, root / "src", root / "build")
    return make(full, root, jobs, quiet, False, "tokconf bisect (it resumes the build)")


def _build_info(source: Source, build_number: int) -> list[str]:
    """What the build says about itself (common/build-info.cpp's LLAMA_BUILD_NUMBER, LLAMA_COMMIT).
    A local tree's build is a function of its content alone (it is cached under a hash of it), so
    it gets what llama.cpp's cmake/build-info.cmake sets outside a git checkout, as its snapshot is:
    build 0, commit `unknown`; its git commit is in the provenance instead."""
    if source.kind == "local-tree":
        return ["-DLLAMA_BUILD_NUMBER=0", "-DLLAMA_BUILD_COMMIT=unknown"]
    return [f"-DLLAMA_BUILD_NUMBER={build_number}"]


def compile_tree(made: Build, src: Path, out: Path, jobs: int | None, quiet: bool, tokenize: bool, again: str) -> None:
    """cmake configure and build of `src` into `out`, logged beside it; the marker is written last.
    `again` is the command that resumes a failed or interrupted build."""
    source = made.source
    label = source.label()
    if source.kind != "pypi-sdist":  # the user's tree: its CMakeLists.txt runs as it is
        what = source.describe() if source.is_local else f"{label} from {source.describe()}"
        print(f"building {what}: its build files run as they are", file=sys.stderr, flush=True)
    _check_toolchain()
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).unlink(missing_ok=True)
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    configure = ["cmake", "-S", str(src), "-B", str(out), *generator, *CMAKE_OPTIONS, *_build_info(source, made.build)]
    parallel = str(jobs or os.cpu_count() or 2)
    targets = ["llama", "llama-tokenize"] if tokenize else ["llama"]
    compile_ = ["cmake", "--build", str(out), "--target", *targets, "-j", parallel]
    log = out.parent / "build.log"
    with log.open("w", encoding="utf-8") as sink:
        for step in (configure, compile_):
            print(f"$ {' '.join(step)}", file=sys.stderr, flush=True)
            result = subprocess_tee.run(step, quiet=quiet, stdout=sys.stderr, env={**os.environ, **_ccache_env()})
            said = f"{result.stdout or ''}{result.stderr or ''}"
            sink.write(f"$ {' '.join(step)}\n{said}")
            sink.flush()
            if result.returncode != 0:
                tail = "\n".join(f"    {line}" for line in said.splitlines()[-LOG_TAIL:])
                raise TokconfError(
                    f"building llama.cpp {label} failed at `{' '.join(step[:3])}` (log: {log}), ending:\n{tail}",
                    f"read the log; after fixing the cause, `{again}` resumes",
                )
    if not made.libllama.is_file() or (tokenize and not made.llama_tokenize.is_file()):
        raise TokconfError(
            f"cmake finished but {made.libllama} or {made.llama_tokenize} is missing (log: {log})",
            "report this with the log; the llama.cpp tree may lay out its targets differently",
        )
    marker = {"build": made.build, "source": asdict(source), "libllama": str(made.libllama)}
    atomic_write(out / MARKER, json.dumps(marker, indent=2) + "\n", "build marker")
