"""Files: the cache folder, atomic writes, bounded reads, hashes, and finding YAML files under a path.

`TOKCONF_CACHE` overrides the cache location; otherwise the XDG cache folder is used, so a CI machine
builds llama.cpp once and every later run (and every checkout) reuses it.

Every file tokconf reads from elsewhere (a recording, a decoding, an expected-failure file, a corpus
or found file, a tokenizer.json, a vocab file) is read through `open_bounded`, `read_bounded` or
`regular_file`: it must be a regular file (a FIFO would block the read forever, `/dev/zero` never
ends, a folder or device is no file) and hold at most its kind's cap (`FileKind.cap`), checked before
anything is read, so a wrong path is one error naming it, never a hang or a MemoryError.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import hashlib
import io
import os
import secrets
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO, Literal, TextIO, overload

from .errors import TokconfError


def cache_root() -> Path:
    """The cache folder: `$TOKCONF_CACHE`, else `$XDG_CACHE_HOME/tokconf`, else `~/.cache/tokconf`,
    made if missing.

    Checked here, where every user of the cache gets it from: a file in its place would otherwise
    surface as a traceback from whichever step first looks there. A folder tokconf cannot write is a
    cache all the same: a read-only one (a container image's, another user's) serves what is complete
    in it, and a step that must write there says so (`writable_cache`).
    """
    explicit = os.environ.get("TOKCONF_CACHE")
    if explicit:
        root = Path(explicit).expanduser()
        origin, fix = "TOKCONF_CACHE", "set TOKCONF_CACHE to a folder tokconf may create and write, or unset it"
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "tokconf"
        origin, fix = "the default", "set TOKCONF_CACHE to a folder tokconf may create and write"
    why = "it is a file, not a folder" if root.is_file() else ""
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        why = why or error.strerror or str(error)
    if why:
        raise TokconfError(f"cannot use {root} ({origin}) as tokconf's cache folder: {why}", fix)
    return root


def writable_cache(folder: Path, doing: str) -> Path:
    """`folder` of the cache, made if missing, for a step that must write there (`doing`: what, e.g.
    "build llama.cpp b11434"); one tokconf cannot write (a read-only cache) is an error saying so."""
    why = _unwritable(folder)
    if why:
        raise TokconfError(
            f"cannot {doing}: tokconf's cache folder {folder} is not writable ({why})",
            "a read-only cache serves only what is complete in it: make it writable, or set TOKCONF_CACHE to a "
            "folder tokconf may write",
        )
    return folder


def _unwritable(folder: Path) -> str:
    """Why tokconf cannot write in `folder` ("" when it can), making it if missing. A file is created and
    dropped to find out: permission bits do not tell (root, read-only mounts)."""
    try:
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

    Only a regular file (or a missing one) is replaced. A symlink's target is written, not the link; a
    device, FIFO or terminal (`--junit /dev/null`, `--json /dev/stdout`) is a stream the caller named,
    written in place: renaming a file over `/dev/null` as root would replace the machine's null
    device with a regular file. So is the file this process's standard output or error is (`--json
    /dev/stdout` with output redirected to a log: the link leads to the log, which must get the text
    where the redirect writes, not be replaced by it): written through that descriptor.
    """
    stream = standard_stream(path)
    if stream is not None:
        with _through(stream, what, binary) as handle:
            yield handle
        return
    path = Path(os.path.realpath(path))
    if path.exists() and not path.is_file():
        if path.is_dir():
            raise _write_error(path, what, OSError(errno.EISDIR, os.strerror(errno.EISDIR)))
        with _streamed(path, what, binary) as handle:
            yield handle
        return
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


@contextlib.contextmanager
def _streamed(path: Path, what: str, binary: bool) -> Iterator[IO[Any]]:
    """`path` (a device, FIFO or terminal) opened for writing and written in place."""
    try:
        handle = path.open("wb") if binary else path.open("w", encoding="utf-8")
    except OSError as error:
        raise _write_error(path, what, error) from None
    try:
        with handle:
            yield handle
    except OSError as error:
        raise _write_error(path, what, error) from None


def standard_stream(path: Path) -> int | None:
    """The descriptor (1 or 2) of this process's standard output or error when `path` is that very
    file (`/dev/stdout`, `/dev/fd/2`, or a log a redirect writes), else None."""
    try:
        named = os.stat(path)
    except OSError:
        return None
    for descriptor in (1, 2):
        try:
            if os.path.samestat(named, os.fstat(descriptor)):
                return descriptor
        except OSError:  # closed
            continue
    return None


def replaceable(path: Path) -> bool:
    """Whether writing `path` replaces a file (a regular one, or none yet), rather than writing into a
    stream in place (`atomic_output`): only such a file is worth a placeholder before a run."""
    if standard_stream(path) is not None:
        return False
    return not os.path.exists(path) or os.path.isfile(path)


@contextlib.contextmanager
def _through(descriptor: int, what: str, binary: bool) -> Iterator[IO[Any]]:
    """A standard stream written in place, through a duplicate of its descriptor (so at its offset,
    after what was written to it before)."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    duplicate = os.dup(descriptor)
    handle: IO[Any] = os.fdopen(duplicate, "wb") if binary else os.fdopen(duplicate, "w", encoding="utf-8")
    try:
        with handle:
            yield handle
    except OSError as error:
        raise _write_error(Path(f"/dev/fd/{descriptor}"), what, error) from None


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


def require_folders(outputs: Iterable[Path | None]) -> None:
    """Each output's folder exists: checked before the work that writes them (a check, an upgrade's walk),
    not found missing after it."""
    for output in outputs:
        if output is not None and not output.parent.is_dir():
            raise TokconfError(f"{output}: folder {output.parent} does not exist", "create it, or write elsewhere")


def atomic_write(path: Path, content: str | bytes, what: str = "output") -> None:
    """Write `content` (text or bytes) to `path` atomically (see `atomic_output`)."""
    if isinstance(content, bytes):
        with atomic_output(path, what, binary=True) as raw:
            raw.write(content)
    else:
        with atomic_output(path, what) as text:
            text.write(content)


class FileKind(enum.StrEnum):
    """A kind of file tokconf reads from elsewhere; its value is what a message calls it. Each kind has
    its own size cap (`CAP_MIB`, overridden by `TOKCONF_MAX_<NAME>_MB`): a file over it is refused
    before anything is read from it."""

    RECORDING = "recording"
    DECODING = "decoding"
    XFAIL = "expected-failure file"
    CORPUS = "corpus file"
    FOUND = "found file"
    TOKENIZER_JSON = "tokenizer.json"
    VOCAB = "vocab file"

    @property
    def variable(self) -> str:
        """The environment variable that overrides the cap, in MiB: `TOKCONF_MAX_RECORDING_MB`, …"""
        return f"TOKCONF_MAX_{self.name}_MB"

    @property
    def cap(self) -> int:
        """The bytes a file of this kind may hold: `CAP_MIB`'s figure, or the override's. Read on every
        use, so a test or a wrapper can set it for one call."""
        text = os.environ.get(self.variable, "").strip()
        if not text:
            return CAP_MIB[self] << 20
        if not (text.isascii() and text.isdigit() and len(text) <= 9 and int(text) > 0):
            raise TokconfError(
                f"{self.variable}={text[:40]!r} is not a size in MiB",
                f"set it to a whole number of MiB above zero (the default is {CAP_MIB[self]}), or unset it",
            )
        return int(text) << 20


# The caps, in MiB (docs/recording-format.md, "Size caps"). Parsing YAML takes about 20 times a
# file's size in memory (12x for the largest recording, 21x for the largest decoding), so a YAML cap
# bounds memory too.
CAP_MIB: dict[FileKind, int] = {
    # The largest bundled recording is 4.3 MB (deepseek-llm: 3,700 cases of long inputs); a recording
    # grows with its corpus, not with the vocabulary. 7x that: about 700 MB to parse.
    FileKind.RECORDING: 32,
    # The largest decoding is 4.3 MB (nomic-bert-moe's 250,000 pieces; gemma-4's 262,000: 3.5 MB); it
    # grows with the vocabulary: 32 MiB holds a vocabulary of two million tokens.
    FileKind.DECODING: 32,
    # Hand-written, a few KB; even one entry per case of every bundled vocabulary and mode (100 bytes
    # each) stays under 8 MiB, and globs cover more.
    FileKind.XFAIL: 8,
    # The largest corpus file is 146 KB (documents.yaml; `repeat` keeps long inputs short); `tokconf
    # record` reads the found files in corpora/found as corpus files too, so this is FOUND's figure.
    FileKind.CORPUS: 16,
    # A vocabulary's facts (7 KB for gemma-4) and one case per finding (under 1 KB each): 16 MiB is
    # over 16,000 findings of one vocabulary.
    FileKind.FOUND: 16,
    # Read by the `tokenizers` library, not by tokconf: the largest published ones are about 33 MB
    # (gemma-3's); 4x that.
    FileKind.TOKENIZER_JSON: 128,
    # A vocab file may be a whole model's GGUF (docs/benchmarks.md measures one): it is hashed in 1 MiB
    # chunks and the reference maps only its header, so this cap bounds time, not memory. The largest
    # single-file models published are about 75 GB (70B parameters at 8 bits).
    FileKind.VOCAB: 128 << 10,
}


def _file_type(mode: int) -> str:
    """What a file that is not a regular file is, for a message."""
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):  # fmt: skip
        if test(mode):
            return name
    return "not a regular file"


def _refuse_type(path: Path, what: str, mode: int) -> TokconfError:
    link = f" (a link to {os.path.realpath(path)})" if path.is_symlink() else ""
    return TokconfError(
        f"cannot read {what} {path}{link}: it is {_file_type(mode)}, not a regular file (refused unread)",
        "give a regular file: tokconf never reads a FIFO, a device, a socket or a folder (it could block or never end)",
    )


def _refuse_size(path: Path, kind: FileKind, size: str) -> TokconfError:
    return TokconfError(
        f"cannot read {kind} {path}: it holds {size}, over the {kind} cap ({kind.cap >> 20} MiB)",
        f'if it is one, raise the cap: {kind.variable}=<MiB> (docs/recording-format.md, "Size caps")',
    )


def _checked_stat(path: Path, what: str) -> os.stat_result:
    """The status of `path` (links followed), refused unless it is a regular file. `stat` never opens
    the file: a device is not even opened (opening one can act, as a tape rewinds)."""
    try:
        status = os.stat(path)
    except OSError as error:
        raise TokconfError(f"cannot read {what} {path}: {error.strerror}") from None
    if not stat.S_ISREG(status.st_mode):
        raise _refuse_type(path, what, status.st_mode)
    return status


class _Capped(io.RawIOBase):
    """A regular file's descriptor, read no further than a cap: the byte after it (the file grew while
    read) is refused, so a reader holds at most the cap whatever happens to the file meanwhile."""

    def __init__(self, descriptor: int, path: Path, kind: FileKind | None) -> None:
        self._descriptor, self._path, self._kind = descriptor, path, kind
        self._room = kind.cap if kind is not None else -1  # -1: no cap

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._descriptor

    def _read(self, size: int) -> bytes:
        """At most `size` bytes, one read; refused once more than the cap has been read."""
        data = os.read(self._descriptor, size if self._kind is None else min(size, self._room + 1))
        if self._kind is not None:
            if len(data) > self._room:
                raise _refuse_size(self._path, self._kind, "more bytes than that (it grew while read)")
            self._room -= len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        with memoryview(buffer) as view, view.cast("B") as flat:
            data = self._read(len(flat))
            flat[: len(data)] = data
            return len(data)

    def readall(self) -> bytes:
        """To the end, 1 MiB a read (`RawIOBase.readall` reads 8 KiB a time, through `readinto`)."""
        chunks = []
        while chunk := self._read(1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        if not self.closed:
            os.close(self._descriptor)
        super().close()


def open_bounded(path: Path, kind: FileKind | None) -> BinaryIO:
    """`path` open for reading, once it is known to be a regular file within `kind`'s cap (None: any
    size, for files tokconf hashes that are no kind of its own, as a library); reading past the cap
    (a file growing meanwhile) raises. Anything else is a `TokconfError` naming the file.

    The path is checked by `stat` before it is opened, and the open descriptor again by `fstat` (the
    file may have been swapped between the two): `O_NONBLOCK`, so even a FIFO swapped in never blocks
    the open."""
    what = kind.value if kind is not None else "file"
    _checked_stat(path, what)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        raise TokconfError(f"cannot read {what} {path}: {error.strerror}") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise _refuse_type(path, what, status.st_mode)
        if kind is not None and status.st_size > kind.cap:
            raise _refuse_size(path, kind, f"{status.st_size:,} bytes")
    except BaseException:
        os.close(descriptor)
        raise
    return io.BufferedReader(_Capped(descriptor, path, kind))


def read_bounded(path: Path, kind: FileKind) -> bytes:
    """The bytes of a file from elsewhere, at most `kind.cap` of them (see `open_bounded`); of a file a
    run pinned, the bytes it held since the run began (`pinned`), read once."""
    if (pin := _held(path)) is not None:
        return pin.raw
    try:
        with open_bounded(path, kind) as handle:
            raw = handle.read()
    except OSError as error:  # a read error (EIO) after the open
        raise TokconfError(f"cannot read {kind} {path}: {error.strerror}") from None
    _as_pinned(path, hashlib.sha256(raw).hexdigest())
    return raw


@dataclass(frozen=True)
class _Pin:
    """A file a run judges from, as the run began: its bytes, their sha256, what `stat` said of it, and
    its kind (whose cap a check of it again reads within). Every judged file is held for the run: its
    memory is the judged files' total (the bundled b11192 set: about 150 MiB), read once."""

    raw: bytes
    sha256: str
    status: tuple[int, ...]
    kind: FileKind


_PINNED: dict[Path, _Pin] = {}  # what `pinned` holds: the files a run judges from, by `_keys`


def _status(path: Path) -> tuple[int, ...]:
    """What changes when a file is written, replaced or a link on its path pointed elsewhere (its
    ctime, which no writer can set back, included); () for a path that no longer stats."""
    try:
        found = os.stat(path)
    except OSError:
        return ()
    return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


@contextlib.contextmanager
def pinned(files: Iterable[tuple[Path, FileKind]]) -> Iterator[None]:
    """Read every file a run will judge from (its recordings and their decodings) once, before any
    port process starts, and hold its bytes and sha256 while the run lasts: every later read of it
    (its provenance, its cases, a decoding naming its digest) is of those bytes, not the disk again,
    and one whose file is no longer those bytes is refused. With the sandbox (`tokconf.core.sandbox`)
    no port can write them; kept instead, one could rewrite and re-seal the next vocabulary's recording
    while an earlier one is checked, and that must end the run with an error, never a verdict on the
    rewritten file. Forked processes of the run (`--jobs`) hold the same pins."""
    added = []
    try:
        for path, kind in files:
            status = _status(path)
            raw = read_bounded(path, kind)
            pin = _Pin(raw, hashlib.sha256(raw).hexdigest(), status, kind)
            for key in _keys(path):
                if key not in _PINNED:
                    _PINNED[key] = pin
                    added.append(key)
        yield
    finally:
        for key in added:
            _PINNED.pop(key, None)


def _held(path: Path) -> _Pin | None:
    """A pinned file's pin (None for any other), once its file is still the one pinned: what `stat` says
    of it unchanged, or, where it changed (a `touch`), its bytes hashed again and still those pinned."""
    pin = next((_PINNED[key] for key in _keys(path) if key in _PINNED), None) if _PINNED else None
    if pin is None or _status(path) == pin.status:
        return pin
    digest = hashlib.sha256()
    try:
        with open_bounded(path, pin.kind) as handle:  # within its cap: a huge file swapped in is refused at once
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    except (OSError, TokconfError):
        digest.update(b"unreadable")  # gone, over its cap, no regular file now: not the bytes pinned
    _as_pinned(path, digest.hexdigest())
    return pin


def _keys(path: Path) -> tuple[Path, ...]:
    """Where a pinned file is known: the path as given (absolute, its links not followed) and the file it
    leads to. A read through the path as given after a link on it was pointed elsewhere (a link swapped
    while the run lasts) is then held to the pinned bytes, not taken for another, unpinned file. A link
    that loops now leads nowhere: the path as given is still held to its pin (and the read refused)."""
    given = Path(os.path.abspath(path))
    try:
        return (given, path.resolve())
    except (OSError, RuntimeError):  # a link loop (RuntimeError before Python 3.13)
        return (given,)


def _as_pinned(path: Path, sha256: str) -> None:
    pin = next((_PINNED[key] for key in _keys(path) if key in _PINNED), None) if _PINNED else None
    was = pin.sha256 if pin is not None else None
    if was is not None and was != sha256:
        raise TokconfError(
            f"{path} changed during the run: its sha256 was {was[:16]}… when the run began, it is {sha256[:16]}… now",
            "something wrote it while the check ran (a port kept with --sandbox off, or NOT SANDBOXED, can): "
            "restore it and run the check again",
        )


def is_pinned(path: Path) -> bool:
    """Whether the run pinned a file at `path` (as `pinned` keys it), whatever is there now."""
    return bool(_PINNED) and any(key in _PINNED for key in _keys(path))


def held_bytes(path: Path) -> bytes | None:
    """The bytes of a file the run pinned (`pinned`), still the file's, or None when it pinned none at
    that path: a reader of part of a file (a recording's head) reads the pinned bytes, not the disk."""
    pin = _held(path)
    return pin.raw if pin is not None else None


def regular_file(path: Path, kind: FileKind) -> Path:
    """`path`, once it is a regular file within `kind`'s cap, for a file a library opens itself (a
    tokenizer.json, a GGUF file): what could block or never end is refused before the library sees it.
    Opened and closed (`open_bounded`), nothing read; a file swapped after this is the library's to
    read."""
    open_bounded(path, kind).close()
    return path


def sha256_file(path: Path, kind: FileKind | None = None) -> str:
    """The sha256 of a file, read in chunks so a 100 MB vocab does not sit in memory twice. Only a
    regular file is hashed (a FIFO would block, `/dev/zero` never end), and with `kind`, one within its
    cap (see `open_bounded`). A pinned file's is the one taken when the run began (`pinned`)."""
    if (pin := _held(path)) is not None:
        return pin.sha256
    digest = hashlib.sha256()
    try:
        with open_bounded(path, kind) as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as error:
        raise TokconfError(f"cannot read {kind or 'file'} {path}: {error.strerror}") from None
    _as_pinned(path, digest.hexdigest())
    return digest.hexdigest()


def yaml_files(paths: Iterable[Path], what: str) -> list[Path]:
    """Every `*.yaml` under the given files or folders: folders sorted by path, files as given. An
    entry that is not a regular file (a FIFO, a link to a device, a folder named `x.yaml`) is refused
    here, naming it: skipped, it would hide, and read, it could block or never end."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            entries = sorted(path.rglob("*.yaml"))
        elif path.exists():
            entries = [path]
        else:
            raise TokconfError(f"{what} path {path} does not exist", f"give a {what} file or folder")
        for entry in entries:
            _checked_stat(entry, what)
        found.extend(entries)
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
