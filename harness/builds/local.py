"""A llama.cpp of the user's own: `--impl llama.cpp:PATH` and `tokconf record --llama PATH`.

Downstream projects vendor and patch llama.cpp, contributors work on a branch: each asks whether
*their* libllama still tokenizes like upstream bN. PATH is either

- a built libllama.so, used as it is. The oracle binds it through a llama.h (tokconf.oracles.libllama
  parses the header into cffi declarations): the header of the tree it was built from when the
  folders above it say which (a cmake build folder's CMakeCache.txt names its source; an install
  prefix has include/llama.h), else the header of the build it is filed under (the pinned one unless
  `--build` says otherwise). A header of another version may describe another ABI (a field added
  to `llama_model_params`), so `Source.header` records which one was used;
- or a llama.cpp source tree (CMakeLists.txt and include/llama.h), built like a tagged build
  (tokconf.builds.build: the same CMAKE_OPTIONS, ccache, streamed log, an interrupted build resumes)
  from a snapshot of its build inputs (`BUILD_INPUTS`) in `<cache>/llama.cpp/local/<key>`. The key
  is a hash of those inputs, so the tree is rebuilt only when they change, and what is built is
  exactly the content the key names, even if the tree is edited meanwhile.

Either way libllama is loaded only in the oracle's worker process, never here: llama.cpp aborts the
process on some inputs (tokconf.oracles.probe checks that it loads at all).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from ..core.errors import TokconfError
from ..core.files import sha256_file, writable_cache
from .build import CMAKE_OPTIONS, Build, completed, make, tree_build
from .fetch import Source, local_root, source_dir
from .pins import DEFAULT_BUILD
from .tree import verified_source

# What a build of a tree reads with CMAKE_OPTIONS (llama.cpp's top CMakeLists.txt adds ggml, src,
# vendor, common and tools; cmake/ holds its modules; LICENSE is read by cmake/license.cmake):
# the content key covers these and nothing else, so docs, models/, build folders and .git never
# cause a rebuild. A tree that needs another top-level folder fails to configure, naming it.
BUILD_INPUTS = ("CMakeLists.txt", "LICENSE", "cmake", "common", "ggml", "include", "src", "tools", "vendor")
KEY_VERSION = 1  # changes when what the content key covers changes
LOOK_UP = 3  # folders above a libllama.so searched for its tree: bin/, build/, the tree


@dataclass(frozen=True)
class GitState:
    """Where a local llama.cpp stands in its git checkout."""

    commit: str  # HEAD
    dirty: bool  # something under the folder differs from HEAD: an edit, staged or not, or a new file


def local_build(path: Path, build: int = DEFAULT_BUILD, tokenize: bool = False, jobs: int | None = None,
                quiet: bool = False) -> Build:  # fmt: skip
    """The llama.cpp at `path`: a libllama.so as it is, or a source tree built in the cache (or found
    built there). `build` is the published build it is filed under (provenance, vocab files);
    `tokenize` asks for llama-tokenize too (`tokconf record --backend cli`)."""
    given = path.expanduser().absolute()
    if not given.exists():
        raise TokconfError(
            f"llama.cpp at {path}: no such file or folder",
            "give a built libllama.so or the root of a llama.cpp source tree",
        )
    if given.is_dir():
        return _tree_build(given, build, tokenize, jobs, quiet)
    return _library_build(given, build, tokenize)


def git_state(folder: Path) -> GitState | None:
    """The HEAD of the git checkout `folder` is in, and whether anything under `folder` differs from
    it (untracked files count, ignored ones do not: a build sees the first and not, as a rule, the
    second); None outside a checkout, or without git."""
    if shutil.which("git") is None:
        return None
    head = _git(folder, "rev-parse", "--verify", "--quiet", "HEAD")
    status = _git(folder, "status", "--porcelain", "--untracked-files=normal", "--", ".")
    if head is None or status is None:
        return None
    return GitState(head, bool(status))


def _checkout(folder: Path) -> tuple[str | None, bool | None]:
    """`Source.commit` and `Source.dirty` of a folder: both None outside a git checkout."""
    git = git_state(folder)
    return (None, None) if git is None else (git.commit, git.dirty)


def _git(folder: Path, *args: str) -> str | None:
    done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def tree_key(tree: Path) -> str:
    """The content key of a source tree: a sha256 over each build input's path, kind (file or
    executable) and content, and the cmake options it is built with. A link is what it points to, as
    the compiler reads it: a file through a link is hashed (and copied) as that file, a folder through
    a link as that folder, so an edit at a link's target is a new key, never a stale library."""
    digest = hashlib.sha256(f"tokconf local tree {KEY_VERSION}\n{' '.join(CMAKE_OPTIONS)}\n".encode())
    for path in _input_files(tree):
        what = f"{'exec' if path.stat().st_mode & 0o111 else 'file'} {sha256_file(path)}"
        digest.update(f"{path.relative_to(tree).as_posix()}\0{what}\n".encode())
    return digest.hexdigest()


def _input_files(tree: Path) -> list[Path]:
    """Every file of BUILD_INPUTS under `tree`, links followed; a link that points nowhere, or back
    into a folder it is in, is an error naming it."""
    found: list[Path] = []
    for name in BUILD_INPUTS:
        top = tree / name
        if top.is_file():
            found.append(top)
            continue
        for folder, subfolders, files in os.walk(top, followlinks=True):
            real = os.path.realpath(folder)
            for sub in subfolders:
                inner = os.path.realpath(os.path.join(folder, sub))
                if real == inner or real.startswith(inner + os.sep):
                    raise TokconfError(f"{Path(folder, sub)} links to a folder it is in", "remove the link loop")
            for file in files:
                path = Path(folder, file)
                if not path.exists():
                    raise TokconfError(f"{path} is a link that points nowhere", "fix or remove the link")
                found.append(path)
    return sorted(found)


def _require_tree(tree: Path) -> None:
    if (tree / "CMakeLists.txt").is_file() and (tree / "include" / "llama.h").is_file():
        return
    built = [p for p in (tree / "bin" / "libllama.so", tree / "build" / "bin" / "libllama.so") if p.is_file()]
    raise TokconfError(
        f"{tree} is not a llama.cpp source tree: it has no CMakeLists.txt and include/llama.h",
        f"to use the library built there, give it: {built[0]}"
        if built
        else "give the root of a llama.cpp source tree, or a built libllama.so",
    )


def _tree_build(tree: Path, build: int, tokenize: bool, jobs: int | None, quiet: bool) -> Build:
    _require_tree(tree)
    key = tree_key(tree)
    root = local_root(key)
    commit, dirty = _checkout(tree)
    source = Source(build, "local-tree", str(tree), None, commit, dirty, content=key)
    full = tree_build(build, source, root / "src", root / "build", _models(tree, build))
    made = completed(full, root, tokenize) if (root / "src").is_dir() else None  # no lock taken: a read-only cache
    if made is None:
        writable_cache(root, f"build {tree}")
        with _exclusive(root):
            _snapshot(tree, root / "src", key)  # nothing to do when an earlier run made it
            made = make(full, root, jobs, quiet, tokenize, f"tokconf llama local {tree}")  # tokenizer-only, or full
    library = made.libllama.resolve()
    return replace(made, source=replace(source, sha256=sha256_file(library), library=str(library),
                                        header=str(made.llama_h)))  # fmt: skip


@contextlib.contextmanager
def _exclusive(root: Path) -> Iterator[None]:
    """One tokconf at a time snapshots and builds a tree (two checks at once, parallel test workers):
    the others wait, then find it built."""
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for another tokconf building in {root} ...", file=sys.stderr, flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _snapshot(tree: Path, src: Path, key: str) -> None:
    """Copy the tree's build inputs to `src` (unless an earlier, interrupted build left them there:
    the copy lands by an atomic rename), checked against `key`: a tree edited during the copy is
    refused, never built under a key that names other content."""
    if src.is_dir():
        return
    with tempfile.TemporaryDirectory(dir=src.parent, prefix=".snapshot-") as tmp:
        staging = Path(tmp) / "src"
        staging.mkdir()
        for name in BUILD_INPUTS:
            top = tree / name
            if top.is_dir():
                shutil.copytree(top, staging / name)  # links followed, as tree_key hashes them
            elif top.is_file():
                shutil.copy2(top, staging / name)
        if tree_key(staging) != key:
            raise TokconfError(f"{tree} changed while tokconf copied it", "run it again once the edits are done")
        staging.rename(src)


def _library_build(library: Path, build: int, tokenize: bool) -> Build:
    real = library.resolve()
    tree = _tree_of(real)
    if tree is not None:
        root, header = tree, None
    else:
        verified_source(build)  # its llama.h and models/: the pinned sdist needs no compiler
        root = source_dir(build)
        header = f"b{build}'s (no llama.h found beside the library)"
    llama_h = root / "include" / "llama.h"
    commit, dirty = _checkout(tree or real.parent)
    source = Source(build, "local-library", str(library), sha256_file(real), commit, dirty, library=str(real),
                    header=header or str(llama_h))  # fmt: skip
    made = Build(
        build=build,
        source=source,
        libllama=real,
        llama_tokenize=real.parent / "llama-tokenize",  # cmake puts programs beside the libraries, in bin/
        llama_h=llama_h,
        include_dirs=tuple(d for d in (root / "ggml" / "include", root / "include") if d.is_dir()),
        models_dir=_models(tree, build),
    )
    if tokenize and not made.llama_tokenize.is_file():
        raise TokconfError(
            f"there is no llama-tokenize beside {real}, which --backend cli runs",
            "build it (cmake --build ... --target llama-tokenize), or give the source tree instead",
        )
    return made


def _tree_of(library: Path) -> Path | None:
    """The llama.cpp tree (or install prefix) whose llama.h describes `library`, when the folders
    above it say: a cmake build folder's CMakeCache.txt names the source (`llama.cpp_SOURCE_DIR`,
    also when llama.cpp is a subproject of a downstream project), or a prefix holds include/llama.h
    (`cmake --install` puts lib/ and include/ side by side)."""
    for folder in list(library.parents)[:LOOK_UP]:
        cache = folder / "CMakeCache.txt"
        if cache.is_file():
            for line in cache.read_text(encoding="utf-8", errors="replace").splitlines():
                name, _, value = line.partition("=")
                if name == "llama.cpp_SOURCE_DIR:STATIC" and (Path(value) / "include" / "llama.h").is_file():
                    return Path(value)
        if (folder / "include" / "llama.h").is_file():
            return folder
    return None


def _models(tree: Path | None, build: int) -> Path:
    """Where `tokconf record --llama` finds vocabularies by name: the tree's models/ when it ships
    llama.cpp's test vocabularies, else those of the build it is filed under."""
    if tree is not None and any((tree / "models").glob("ggml-vocab-*.gguf")):
        return tree / "models"
    return source_dir(build) / "models"
