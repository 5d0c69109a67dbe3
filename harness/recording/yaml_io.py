"""The YAML style recordings and decodings share, their one reader for files from elsewhere, and
the digest that seals them.

Written with libyaml in a fixed key order, leaf mappings and lists on one line, no line folding,
so re-recording unchanged inputs gives a byte-identical file and `git diff` shows changed cases line
by line. Read with the C loader, and the parsed document of a large file kept in the cache under the
sha256 of its bytes: libyaml takes 0.5-1 s for a 4 MB recording, a kept document loads in 20 ms,
and a test suite or a CI job loads the same recordings in many processes.

Every YAML file tokconf reads may come from elsewhere (a recording, a decoding, a found file, an
expected-failure file), so `load_untrusted` reads only plain data (`tokconf.core.plain_yaml`), and
only from a regular file within its kind's size cap (`tokconf.core.files.read_bounded`).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import marshal
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import yaml

from ..core.errors import TokconfError
from ..core.files import FileKind, atomic_write, cache_root, held_bytes, open_bounded, read_bounded
from ..core.plain_yaml import parse_yaml, shown
from ..core.render import INVISIBLE


class Flow(dict[str, Any]):
    """A small mapping written on one line (`{error: …}`, `{text: …}`, a provenance entry)."""


class FlowList(list[Any]):
    """A list of scalars written on one line (`eog_ids`)."""


class Text(str):
    """An input text: double-quoted (escapes visible) when it holds control characters or edge spaces.

    The rule looks only at ASCII and C1 controls, never at the running Python's Unicode tables, so
    the output is the same on every Python version; libyaml escapes the rest as YAML requires.
    """


class _Dumper(yaml.CSafeDumper):
    """libyaml's dumper; cases and lists of cases in block style, `Flow` mappings on one line."""


def _represent_text(dumper: yaml.CSafeDumper, text: Text) -> yaml.ScalarNode:
    visible = not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in text) and text == text.strip(" ")
    style = None if visible and text else '"'
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(text), style=style)


_Dumper.add_representer(Text, _represent_text)
_Dumper.add_representer(Flow, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v, flow_style=True))
_Dumper.add_representer(FlowList, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True))


def text_fields(data: bytes) -> dict[str, str]:
    """An input as `{text: …}` when it is UTF-8, else `{bytes_hex: …}` (the corpus's own two forms)."""
    try:
        return {"text": Text(data.decode("utf-8"))}
    except UnicodeDecodeError:
        return {"bytes_hex": data.hex()}


class _VisibleDumper(_Dumper):
    """The same, with every string that holds an invisible character (U+3000, U+200B, …) double-quoted,
    so `dump_yaml` can spell the character as an escape."""


def _represent_visible(dumper: yaml.CSafeDumper, text: str) -> yaml.ScalarNode:
    if any(c in INVISIBLE for c in text):
        return dumper.represent_scalar("tag:yaml.org,2002:str", str(text), style='"')
    return _represent_text(dumper, Text(text)) if isinstance(text, Text) else dumper.represent_str(text)


_VisibleDumper.add_representer(Text, _represent_visible)
_VisibleDumper.add_representer(str, _represent_visible)


def dump_yaml(doc: dict[str, Any], visible: bool = False) -> str:
    """Recordings' YAML style: keys in the given order, block style, no line folding. `visible`: every
    invisible character as a `\\uXXXX` escape, for files people review (a fuzz finding of U+3000 must
    not read as an empty string); they occur only in double-quoted scalars, where YAML reads the
    escape back as the character. The bundled recordings keep the characters as they are."""
    text = yaml.dump(
        doc,
        Dumper=_VisibleDumper if visible else _Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 30,
    )
    if visible:
        for char in INVISIBLE:
            text = text.replace(char, f"\\u{ord(char):04X}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08X}")
    return text


class CorruptRecording(TokconfError):
    """A file tokconf reads, from tokconf or from elsewhere (a recording, a decoding, a found file, an
    expected-failure file), refused: malformed, hostile, or not the file that was sealed."""


RERECORD = "restore it from git or re-record it with `tokconf record` (see docs/recording-format.md)"


def corrupt(path: Path, problem: str, fix: str = RERECORD) -> CorruptRecording:
    return CorruptRecording(f"{path}: {problem}", fix)


def load_untrusted(path: Path, what: str) -> Any:
    """The document of a YAML file from elsewhere (`what`: "recording", "expected-failure file", …, a
    `FileKind`'s value) as plain data: no anchors or aliases, no repeated keys (`parse_yaml`). An
    unreadable or refused file is a `TokconfError` naming it."""
    return read_untrusted(path, what)[1]


def read_untrusted(path: Path, what: str, kind: FileKind | None = None) -> tuple[bytes, Any]:
    """`load_untrusted`, with the file's bytes (for its digest). Read within the cap of `kind` (default:
    the kind `what` names; a found file is read as a "recording" within the found files' cap)."""
    raw = read_bounded(path, kind or _kind(what))
    try:
        return raw, _parse_kept(raw)
    except yaml.YAMLError as error:
        raise corrupt(path, f"not a {what} tokconf reads ({_first_line(error)})", _fix(what)) from None


def _kind(what: str) -> FileKind:
    """The kind of file `what` names (a `FileKind`'s value); any other word, a file of a caller's own,
    is read as a recording, the largest of the YAML kinds."""
    return next((kind for kind in FileKind if kind.value == what), FileKind.RECORDING)


def _first_line(error: Exception) -> str:
    """The cause of a parse error, cut: libyaml repeats an anchor's name or a bad character verbatim."""
    lines = str(error).splitlines() or [type(error).__name__]
    problem = lines[0] if len(lines) == 1 or not lines[0].startswith("while ") else lines[-2]
    return problem if len(problem) <= 200 else problem[:200] + "…"


def _fix(what: str) -> str:
    if what in ("recording", "decoding"):
        return RERECORD
    return (
        f"a {what} is plain YAML: no anchors, aliases, tags or repeated keys "
        '(docs/recording-format.md, "Files from elsewhere")'
    )


KEEP_FROM = 256 << 10  # smaller files parse in milliseconds: keeping them would only fill the folder
KEPT_LIMIT = 1 << 30  # the kept documents' total size; the least recently used go first beyond it
LOADER_VERSION = 2  # of `_StrictLoader`: documents another loader made are never believed


def kept_dir() -> Path:
    """Where parsed documents are kept: per loader and Python version, as `marshal`'s format is."""
    version = f"v{LOADER_VERSION}-py{sys.version_info[0]}{sys.version_info[1]}-m{marshal.version}"
    return cache_root() / "parsed" / version


def _parse_kept(raw: bytes) -> Any:
    """`parse_yaml(raw)`, from the kept document when there is one.

    An entry is named by the sha256 of the YAML bytes, so an edited file never meets an old entry,
    and holds the sha256 of its own payload, so a damaged entry is parsed again, never believed.
    Only a document `parse_yaml` accepted is kept. The cache is only a speed-up: one that cannot be
    used or written (read-only or full disk, a file in its place) is skipped.
    `marshal` holds exactly the types the loader makes, and cannot run code when read.
    """
    if len(raw) < KEEP_FROM:
        return parse_yaml(raw)
    try:
        entry = kept_dir() / f"{hashlib.sha256(raw).hexdigest()}.marshal"
    except TokconfError:  # no usable cache folder
        return parse_yaml(raw)
    try:
        kept = entry.read_bytes()
        if hashlib.sha256(kept[32:]).digest() == kept[:32]:
            doc = marshal.loads(kept[32:])
            with contextlib.suppress(OSError):  # recently used (a read-only cache still serves it)
                os.utime(entry)
            return doc
    except (OSError, EOFError, ValueError, TypeError):
        pass
    doc = parse_yaml(raw)
    try:
        payload = marshal.dumps(doc)
        entry.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(entry, hashlib.sha256(payload).digest() + payload, "a parsed recording")
        _evict(entry.parent)
    except (OSError, ValueError, TokconfError):
        pass
    return doc


def _evict(folder: Path) -> None:
    """Remove the least recently used entries until the folder holds at most KEPT_LIMIT bytes."""
    entries = []
    for entry in folder.glob("*.marshal"):
        try:
            status = entry.stat()
        except FileNotFoundError:  # evicted by another process meanwhile
            continue
        entries.append((status.st_mtime_ns, status.st_size, entry))
    total = sum(size for _, size, _ in entries)
    for _, size, entry in sorted(entries):
        if total <= KEPT_LIMIT:
            break
        entry.unlink(missing_ok=True)
        total -= size


def read_head(path: Path, stop: bytes, what: str) -> dict[str, Any]:
    """The top-level keys before the line that starts with `stop` (`facts:`, `pieces:`), parsed alone:
    a recording's or decoding's provenance without reading the megabytes that follow it."""
    head: list[bytes] = []
    held = held_bytes(path)  # a file the run pinned: the bytes it judges, not the disk again
    try:
        with io.BytesIO(held) if held is not None else open_bounded(path, _kind(what)) as handle:
            for line in handle:  # a regular file, within the cap: lines end
                if line.startswith(stop):
                    break
                head.append(line)
    except OSError as error:
        raise TokconfError(f"cannot read {what} {path}: {error.strerror}") from None
    try:
        doc = parse_yaml(b"".join(head))
    except yaml.YAMLError as error:
        raise corrupt(path, f"not a {what} tokconf reads ({_first_line(error)})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("provenance"), dict):
        raise corrupt(path, f"no `provenance` before `{stop.decode().rstrip(':')}`")
    return doc


# The digest: `provenance.digest`, the last line of the `provenance:` block, is the sha256 of every other
# byte of the file. Whatever a verdict reads (facts, provenance, cases, pieces) is covered; the line
# leaves itself out, so a file is sealed by adding one line and checked by hashing around it.
DIGEST_VERSION = 1


def _digest_line(sha256: str) -> bytes:
    return f"  digest: {{version: {DIGEST_VERSION}, sha256: {sha256}}}\n".encode()


def _section(raw: bytes, section: bytes) -> int:
    """Where the top-level line `section` (`facts:`, `pieces:`) starts; -1 when there is none."""
    at = raw.find(b"\n" + section + b"\n")
    return at + 1 if at >= 0 else -1


def seal(raw: bytes, section: bytes) -> bytes:
    """`raw` with its digest line: the last line of `provenance:`, right before the top-level line
    `section`. A digest line already there is replaced."""
    at = _section(raw, section)
    if at < 0:
        raise ValueError(f"no top-level `{section.decode()}` line to seal before")
    start = raw.rfind(b"\n", 0, at - 1) + 1
    if raw.startswith(b"  digest: ", start):
        raw, at = raw[:start] + raw[at:], start
    return raw[:at] + _digest_line(hashlib.sha256(raw).hexdigest()) + raw[at:]


T = TypeVar("T")


@dataclass(frozen=True)
class SealedFormat(Generic[T]):
    """A kind of file tokconf seals (recordings, decodings): what it is called (the `FileKind` whose cap
    it is read within), how its document is read, the top-level line its digest line precedes, and what
    to do with a file of it that has no digest. One helper for both, so a recording and its decoding are
    read, sealed and refused alike."""

    what: str
    from_document: Callable[[Path, Any], T]
    section: bytes
    unsealed: str

    def read(self, path: Path, kind: FileKind | None = None) -> T:
        """One file of this kind: every field checked, then its bytes against its digest. `kind`: whose
        size cap it is read within, if not its own."""
        raw, doc = read_untrusted(path, self.what, kind)
        return self.sealed(path, raw, doc)

    def head(self, path: Path) -> dict[str, Any]:
        """The top-level keys before the sealed section (`read_head`), not checked against the digest."""
        return read_head(path, self.section, self.what)

    def seal(self, raw: bytes) -> bytes:
        """`seal` before this kind's section."""
        return seal(raw, self.section)

    def check(self, path: Path, raw: bytes, doc: Any) -> None:
        """`check_seal` on a parsed document of this kind."""
        check_seal(path, raw, doc["provenance"], self.section, self.unsealed)

    def sealed(self, path: Path, raw: bytes, doc: Any) -> T:
        """What a file's bytes and their parsed document hold, checked field by field and then against
        its digest."""
        value = self.from_document(path, doc)
        self.check(path, raw, doc)
        return value


def check_seal(path: Path, raw: bytes, provenance: dict[str, Any], section: bytes, unsealed: str) -> None:
    """The file is the one sealed: `provenance.digest` is the sha256 of its bytes but that line, so a file
    cut short or edited anywhere is refused, naming it. `unsealed`: what to do when it has no digest."""
    claimed = provenance.get("digest")
    if claimed is None:
        raise corrupt(path, "`provenance.digest` is missing (the file was not sealed by this tokconf)", unsealed)
    if not isinstance(claimed, dict):
        raise corrupt(path, f"`provenance.digest` must be a mapping, not {shown(claimed)}")
    version = claimed.get("version")
    if type(version) is not int or version != DIGEST_VERSION:  # `true` == 1 in Python
        raise corrupt(
            path,
            f"`provenance.digest` has version {shown(version)}; this tokconf reads version {DIGEST_VERSION}",
            "use the tokconf version that wrote it, or re-record it",
        )
    sha256 = claimed.get("sha256")
    at = _section(raw, section)
    start = raw.rfind(b"\n", 0, max(at - 1, 0)) + 1
    if not (isinstance(sha256, str) and re.fullmatch("[0-9a-f]{64}", sha256)) or raw[start:at] != _digest_line(sha256):
        raise corrupt(
            path,
            f"`provenance.digest` must be `{{version: {DIGEST_VERSION}, sha256: <64 hex digits>}}`, "
            f"the last line of `provenance:` before `{section.decode()}`",
        )
    view = memoryview(raw)
    digest = hashlib.sha256(view[:start])
    digest.update(view[at:])
    if digest.hexdigest() != sha256:
        raise corrupt(
            path,
            f"the file is not the one sealed: its bytes but the digest line have sha256 {digest.hexdigest()[:16]}…, "
            f"`provenance.digest` says {sha256[:16]}… (it was cut short or edited)",
        )
