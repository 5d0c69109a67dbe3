"""Files: the cache folder, atomic writes, hashes, and finding YAML files under a path.

`TOKCONF_CACHE` overrides the cache location; otherwise the XDG cache folder is used, so a CI machine
builds llama.cpp once and every later run (and every checkout) reuses it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Literal, TextIO, overload

from harness.core.errors import TokconfError


def cache_root() -> Path:
    """The cache folder: `$TOKCONF_CACHE`, else `$XDG_CACHE_HOME/tokconf`, else `~/.cache/tokconf`."""
    explicit = os.environ.get("TOKCONF_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "tokconf"


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

    Temporary file beside the target, fsync, rename: a reader sees the old file or the new one, never
    half of one, and a failure (a full disk included) leaves the old file and no temporary behind.
    """
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tmp.open("wb") if binary else tmp.open("w", encoding="utf-8") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        full = error.errno in (errno.ENOSPC, errno.EDQUOT)
        fix = "free disk space and run the same command again" if full else "choose a writable folder"
        raise TokconfError(f"cannot write {what} {path}: {error.strerror}", fix) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


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
