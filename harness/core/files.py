"""Files: the cache folder, atomic writes, hashes, and finding YAML files under a path.

`TOKCONF_CACHE` overrides the cache location; otherwise the XDG cache folder is used, so a CI machine
builds llama.cpp once and every later run (and every checkout) reuses it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Literal, TextIO, overload

from .errors import TokconfError


def cache_root() -> Path:
    """The cache folder: `$TOKCONF_CACHE`, else `$XDG_CACHE_HOME/tokconf`, else `~/.cache/tokconf`,
    made if missing.

    Checked here, where every user of the cache gets it from: a file in its place, or a folder tokconf
    cannot write, would otherwise surface as a traceback from whichever step first writes there.
    """
    explicit = os.environ.get("TOKCONF_CACHE")
    if explicit:
        root = Path(explicit).expanduser()
        origin, fix = "TOKCONF_CACHE", "set TOKCONF_CACHE to a folder tokconf may create and write, or unset it"
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "tokconf"
        origin, fix = "the default", "set TOKCONF_CACHE to a folder tokconf may create and write"
    why = _unwritable(root)
    if why:
        raise TokconfError(f"cannot use {root} ({origin}) as tokconf's cache folder: {why}", fix)
    return root


def _unwritable(folder: Path) -> str:
    """Why `folder` cannot be a folder tokconf writes in ("" when it can), making it if missing. A file is
    created and dropped to find out: permission bits do not tell (root, read-only mounts)."""
    try:
        if folder.exists() and not folder.is_dir():
            return "it is a file, not a folder"
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            return ""
    except OSError as error:
        return error.strerror or str(error)


@overload
def atomic_output(
    path: Path, what: str = ..., binary: Literal[False] = ...
) -> contextlib.AbstractContextManager[TextIO]: ...
@overload
def atomic_output(path: Path, what: str, binary: Literal[True]) -> contextlib.AbstractContextManager[IO[bytes]]: ...
@contextlib.contextmanager  # type: ignore[misc]
def atomic_output(path: Path, what: str = "output", binary: bool = False) -> Iterator[IO[Any]]:
    """A handle (text, or bytes with `binary`) whose content replaces `path` only when the block ends
    without an exception.

    A temporary file of its own beside the target, fsync, rename: a reader sees the old file or the
    new one, never half of one; writers of one path at the same time each write a whole file of their
    own and the last rename wins, never a mix; and a failure (a full disk included) leaves the old
    file and no temporary behind.
    """
    try:
        descriptor, tmp = _create_beside(path)
    except OSError as error:
        raise _write_error(path, what, error) from None
    try:
        with os.fdopen(descriptor, "wb") if binary else os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        raise _write_error(path, what, error) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _create_beside(path: Path) -> tuple[int, Path]:
    """A new file beside `path` under a name no other writer has: 64 random bits, and `O_EXCL` (which
    never follows a symlink) refuses a name that exists. Its mode is the one `open()` gives (0666 less
    the umask), where `tempfile.mkstemp` would make every output 0600."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp


def _write_error(path: Path, what: str, error: OSError) -> TokconfError:
    """What failed, whether the old file is still there, and what to do (a full disk says so)."""
    full = error.errno in (errno.ENOSPC, errno.EDQUOT)
    kept = f"; the previous {path.name} is left as it was" if path.is_file() else ""
    fix = "free disk space and run the same command again" if full else "choose a writable folder"
    return TokconfError(f"cannot write {what} {path}: {error.strerror}{kept}", fix)


def atomic_write(path: Path, content: str | bytes, what: str = "output") -> None:
    """Write `content` (text or bytes) to `path` atomically (see `atomic_output`)."""
    if isinstance(content, bytes):
        with atomic_output(path, what, binary=True) as raw:
            raw.write(content)
    else:
        with atomic_output(path, what) as text:
            text.write(content)


def sha256_file(path: Path) -> str:
    """The sha256 of a file, read in chunks so a 100 MB vocab does not sit in memory twice."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def yaml_files(paths: Iterable[Path], what: str) -> list[Path]:
    """Every `*.yaml` under the given files or folders: folders sorted by path, files as given."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(path.rglob("*.yaml")))
        elif path.is_file():
            found.append(path)
        else:
            raise TokconfError(f"{what} path {path} does not exist", f"give a {what} file or folder")
    return found


def _bundled(name: str, in_checkout: str) -> Path:
    """A folder the wheel installs inside the package (harness/bundled/NAME, pyproject.toml's
    package-dir), or the same folder of the checkout an editable install runs from."""
    installed = Path(__file__).resolve().parents[1] / "bundled" / name
    return installed if installed.is_dir() else Path(__file__).resolve().parents[2] / in_checkout


BUNDLED_RECORDINGS = _bundled("recordings", "recordings/b11192")  # what `tokconf check` checks by default
CORPUS = _bundled("corpora", "corpora")  # what `tokconf record` records

BUNDLED = "bundled"  # what a user types for BUNDLED_RECORDINGS (the wheel's folder has no name to type)


def recordings_arg(text: str) -> Path:
    """A recordings path as typed: `bundled`, or `bundled/NAME.yaml`, names the recordings installed
    with tokconf (wherever pip put them), unless a file or folder of that name exists here."""
    head, _, rest = text.partition("/")
    if head != BUNDLED or Path(text).exists():
        return Path(text)
    return BUNDLED_RECORDINGS / rest if rest else BUNDLED_RECORDINGS


def recordings_shown(path: Path) -> str:
    """A recordings path as a command line shows it: the bundled ones by name (`recordings_arg`
    reads it back), so a `reproduce:` line runs in any venv; any other path as given."""
    if path.resolve().is_relative_to(BUNDLED_RECORDINGS.resolve()):
        rest = path.resolve().relative_to(BUNDLED_RECORDINGS.resolve()).as_posix()
        return BUNDLED if rest == "." else f"{BUNDLED}/{rest}"
    return str(path)
