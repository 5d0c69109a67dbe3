"""The YAML style recordings and decodings share, and their one reader.

Written with libyaml in a fixed key order, leaf mappings and lists on one line, no line folding,
so re-recording unchanged inputs gives a byte-identical file and `git diff` shows changed cases line
by line. Read with the C loader, and the parsed document of a large file kept in the cache under the
sha256 of its bytes: libyaml takes 0.5-1 s for a 4 MB recording, a kept document loads in 20 ms,
and a test suite or a CI job loads the same recordings in many processes.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from harness.core.errors import TokconfError
from harness.core.files import atomic_write, cache_root
from harness.core.render import INVISIBLE


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


def parse_yaml(text: str | bytes) -> Any:
    """YAML text parsed with the C safe loader."""
    return yaml.load(text, Loader=yaml.CSafeLoader)


class CorruptRecording(TokconfError):
    """A recording or decoding file that cannot be read back as the schema says."""


def corrupt(path: Path, problem: str) -> CorruptRecording:
    return CorruptRecording(
        f"{path}: {problem}",
        "restore it from git or re-record it with `tokconf record` (see docs/recording-format.md)",
    )


def read_yaml(path: Path, what: str) -> Any:
    """A recording-style YAML file, parsed; an unreadable or invalid file is a `TokconfError`."""
    return read_yaml_raw(path, what)[1]


def read_yaml_raw(path: Path, what: str) -> tuple[bytes, Any]:
    """A recording-style YAML file's bytes, and the document they parse to."""
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise TokconfError(f"cannot read {what} {path}: {error.strerror}") from None
    try:
        return raw, _parse_kept(raw)
    except yaml.YAMLError as error:
        raise corrupt(path, f"invalid YAML ({str(error).splitlines()[0]})") from None


KEEP_FROM = 256 << 10  # smaller files parse in milliseconds: keeping them would only fill the folder
KEPT_LIMIT = 1 << 30  # the kept documents' total size; the least recently used go first beyond it


def kept_dir() -> Path:
    """Where parsed documents are kept: per Python version, as `marshal`'s format is."""
    return cache_root() / "parsed" / f"py{sys.version_info[0]}{sys.version_info[1]}-m{marshal.version}"


def _parse_kept(raw: bytes) -> Any:
    """`parse_yaml(raw)`, from the kept document when there is one.

    An entry is named by the sha256 of the YAML bytes, so an edited file never meets an old entry,
    and holds the sha256 of its own payload, so a damaged entry is parsed again, never believed.
    The cache is only a speed-up: an entry that cannot be written (read-only or full disk) is skipped.
    `marshal` holds exactly the types the safe loader makes, and cannot run code when read.
    """
    if len(raw) < KEEP_FROM:
        return parse_yaml(raw)
    entry = kept_dir() / f"{hashlib.sha256(raw).hexdigest()}.marshal"
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
    try:
        with path.open("rb") as handle:
            for line in handle:
                if line.startswith(stop):
                    break
                head.append(line)
    except OSError as error:
        raise TokconfError(f"cannot read {what} {path}: {error.strerror}") from None
    try:
        doc = parse_yaml(b"".join(head))
    except yaml.YAMLError as error:
        raise corrupt(path, f"invalid YAML ({str(error).splitlines()[0]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("provenance"), dict):
        raise corrupt(path, f"no `provenance` before `{stop.decode().rstrip(':')}`")
    return doc
