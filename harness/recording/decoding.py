"""Decoding recordings: llama.cpp's `llama_token_to_piece` of every id and `llama_detokenize` of every
recorded case (docs/recording-format.md, "Decoding recordings").

One file per vocabulary next to its id recording (`qwen2.decoding.yaml` beside `qwen2.yaml`), so
the id recordings stay small to load and unchanged when decodings are added. The file names the
id recording it decodes by sha256: detokenize inputs are that recording's `bos` ids.

Pieces are written one per id in id order (UTF-8 as text, anything else as `{hex: …}`); pieces
with special=false only where they differ from special=true (control and unknown tokens render
empty then). A case's detokenized text is written only where it differs from the case's input,
so the usual round trip costs nothing, and as one edit of that input (`{at, cut, put}`: replace
`cut` bytes at offset `at` by `put`), so a rendered BOS costs a few bytes. Every case with ids is
decoded and compared all the same.

Like a recording, a decoding is sealed by `provenance.digest` (the sha256 of every other byte) and
refused, naming the file, when it was cut short or edited anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ..core.errors import TokconfError
from ..core.files import FileKind, atomic_write, is_pinned, sha256_file
from ..core.plain_yaml import parse_yaml, shown
from .format import SUFFIX_DECODING
from .yaml_io import (
    Flow,
    SealedFormat,
    corrupt,
    dump_yaml,
)

SCHEMA = "tokconf-decoding/1"
SEALED_BEFORE = b"pieces:"  # the top-level line the digest line precedes
# llama_detokenize settings recorded for each case's `bos` ids.
Setting = Literal["remove-special", "unparse-special"]
PieceKind = Literal["pieces-special", "pieces-plain"]
DETOKENIZE: dict[Setting, tuple[bool, bool]] = {
    "remove-special": (True, False),  # what a user is shown: BOS/EOS dropped, control tokens empty
    "unparse-special": (False, True),  # everything rendered: the text that tokenizes back
}
PIECE_KINDS: dict[PieceKind, bool] = {"pieces-special": True, "pieces-plain": False}


@dataclass
class Decoding:
    """A decoding file in memory: every piece, and each case's detokenized text per setting."""

    provenance: dict[str, Any]
    pieces: list[bytes]
    pieces_plain: dict[int, bytes]  # only ids whose special=false piece differs
    # setting -> case id -> the edit of the case's input that gives llama.cpp's text (`splice`)
    detokenized: dict[str, dict[str, Edit]] = field(default_factory=dict)

    def piece_list(self, special: bool) -> list[bytes]:
        if special:
            return self.pieces
        return [self.pieces_plain.get(i, piece) for i, piece in enumerate(self.pieces)]

    def detokenized_text(self, setting: str, case_id: str, data: bytes) -> bytes:
        """The recorded text; a case not listed round-tripped to its own input."""
        edit = self.detokenized.get(setting, {}).get(case_id)
        return data if edit is None else edit.apply(data)


@dataclass(frozen=True)
class Edit:
    """Replace `cut` bytes at offset `at` by `put`."""

    at: int
    cut: int
    put: bytes

    def apply(self, data: bytes) -> bytes:
        if not (self.at >= 0 and self.cut >= 0 and self.at + self.cut <= len(data)):
            raise ValueError(f"an edit at {self.at} cutting {self.cut} bytes does not fit an input of {len(data)}")
        return data[: self.at] + self.put + data[self.at + self.cut :]


def splice(data: bytes, text: bytes) -> Edit:
    """`text` as one edit of the input `data`: replace `cut` bytes at `at` by `put` (minimal span).

    Most differences are a rendered BOS, a leading space or one cleaned-up space: a few bytes,
    where writing the whole text again would repeat the input.
    """
    at = 0
    limit = min(len(data), len(text))
    while at < limit and data[at] == text[at]:
        at += 1
    tail = 0
    while tail < limit - at and data[len(data) - 1 - tail] == text[len(text) - 1 - tail]:
        tail += 1
    return Edit(at, len(data) - at - tail, text[at : len(text) - tail])


def path_for(recording_path: Path) -> Path:
    """Where the decoding of a recording file lives."""
    return recording_path.with_name(recording_path.stem + SUFFIX_DECODING)


def _bytes_node(data: bytes) -> Any:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"hex": data.hex()}


def _bytes(path: Path, node: Any, where: str) -> bytes:
    if isinstance(node, str):
        return node.encode("utf-8")
    if isinstance(node, dict) and isinstance(node.get("hex"), str):
        try:
            return bytes.fromhex(node["hex"])
        except ValueError:
            pass
    raise corrupt(path, f"{where}: expected text or {{hex: …}}, found {shown(node)}")


def _count(value: object) -> int:
    """A non-negative int as the file wrote it: an id, an offset, a length (never `int()` of a string,
    which would take `1_5` or Arabic-Indic digits)."""
    if type(value) is int and value >= 0:  # a bool is no count
        return value
    raise ValueError(f"expected a non-negative int, found {shown(value)}")


def dumps(decoding: Decoding) -> str:
    """The YAML text of a decoding, sealed by `provenance.digest` (the sha256 of every other byte)."""
    doc = {
        "schema": SCHEMA,
        "provenance": decoding.provenance,
        "pieces": [_bytes_node(p) for p in decoding.pieces],
        "pieces_plain": {i: _bytes_node(p) for i, p in sorted(decoding.pieces_plain.items())},
        "detokenize": {
            setting: {
                case: Flow(at=edit.at, cut=edit.cut, put=_bytes_node(edit.put))
                for case, edit in decoding.detokenized.get(setting, {}).items()
            }
            for setting in DETOKENIZE
        },
    }
    return FORMAT.seal(dump_yaml(doc).encode("utf-8")).decode("utf-8")


def from_document(path: Path, doc: Any) -> Decoding:
    """Validate a loaded YAML document and build the in-memory decoding (its digest is checked by
    `load`, which has the file's bytes; the provenance in memory leaves it out)."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        found = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise corrupt(path, f"not a {SCHEMA} file (schema: {shown(found)})")
    if not isinstance(doc.get("provenance"), dict):
        raise corrupt(path, "`provenance` must be a mapping")
    try:
        pieces = [  # text inline: this list has a piece for each of up to 262,144 tokens
            node.encode("utf-8") if isinstance(node, str) else _bytes(path, node, f"piece {i}")
            for i, node in enumerate(doc["pieces"])
        ]
        plain = {_count(i): _bytes(path, node, f"plain piece {i}") for i, node in (doc["pieces_plain"] or {}).items()}
        detok: dict[str, dict[str, Edit]] = {
            setting: {
                _case_id(case): Edit(_count(node["at"]), _count(node["cut"]), _bytes(path, node["put"], setting))
                for case, node in (doc["detokenize"].get(setting) or {}).items()
            }
            for setting in DETOKENIZE
        }
        provenance = {k: v for k, v in doc["provenance"].items() if k != "digest"}
        return Decoding(provenance, pieces, plain, detok)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise corrupt(path, f"malformed content ({type(error).__name__}: {str(error)[:200]})") from None


def _case_id(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"a case id must be a string, found {shown(value)}")
    return value


FORMAT = SealedFormat(
    "decoding",
    from_document,
    SEALED_BEFORE,
    unsealed=(
        "if you trust where it came from, `tokconf seal --trust RECORDING` seals it with the recording beside it; "
        "otherwise record it again: tokconf record-decoding RECORDING"
    ),
)


def load(path: Path) -> Decoding:
    """Read one decoding file: every field checked, then the file's bytes against its digest."""
    return FORMAT.read(path)


def read_provenance(path: Path) -> dict[str, Any]:
    """The `provenance:` block alone, from the head of the file (the pieces that follow are megabytes):
    what `load_for` checks before it reads the rest (and `load` then checks against the digest)."""
    doc = FORMAT.head(path)
    if doc.get("schema") != SCHEMA:
        raise corrupt(path, f"not a {SCHEMA} file (schema: {shown(doc.get('schema'))})")
    return {k: v for k, v in doc["provenance"].items() if k != "digest"}


def load_for(recording_path: Path) -> Decoding | None:
    """The decoding beside a recording, if there is one; refused, before the bulk of it is read, if it
    decodes another recording. Something there that is no regular file (a FIFO, a link to a device or
    to nothing) is refused by the read, naming it, not taken for no decoding."""
    path = path_for(recording_path)
    if not (path.exists() or path.is_symlink() or is_pinned(path)):  # a pinned one gone is "changed", not none
        return None
    recorded = read_provenance(path).get("recording")
    if not isinstance(recorded, dict) or recorded.get("sha256") != sha256_file(recording_path, FileKind.RECORDING):
        raise TokconfError(
            f"{path} decodes another version of {recording_path.name} (sha256 differs)",
            f"re-record it: tokconf record-decoding {recording_path}",
        )
    return load(path)


def write(path: Path, decoding: Decoding) -> None:
    """Atomic, and only after the text reads back to the same decoding, digest included."""
    text = dumps(decoding)
    raw = text.encode("utf-8")
    if FORMAT.sealed(path, raw, parse_yaml(raw)) != decoding:
        raise TokconfError(f"{path}: the YAML form does not read back identically; nothing was written")
    atomic_write(path, text, "decoding")


def reseal(path: Path, raw: bytes, doc: Any, recording_was: str, recording_is: str) -> bytes:
    """A decoding's bytes as this tokconf seals them, for `tokconf seal --trust`, once its recording's
    bytes had sha256 `recording_was` and have `recording_is` (`format.reseal`; the two are equal for a
    recording sealed already): its `provenance.recording.sha256` line naming them, and its digest line
    added or renewed; every other byte kept. A digest it has already must hold first. `doc`: what `raw`
    parses to."""
    decoding = from_document(path, doc)
    if "digest" in doc["provenance"]:
        FORMAT.check(path, raw, doc)
    named = decoding.provenance.get("recording")
    if not isinstance(named, dict) or named.get("sha256") not in (recording_was, recording_is):
        raise TokconfError(
            f"{path} decodes another version of its recording (sha256 differs): not sealed",
            f"record it again: tokconf record-decoding {path.name.removesuffix(SUFFIX_DECODING)}.yaml",
        )
    head = raw.find(b"\n" + SEALED_BEFORE + b"\n")
    old, new = f"    sha256: {named['sha256']}\n".encode(), f"    sha256: {recording_is}\n".encode()
    if head < 0 or raw.count(old, 0, head) != 1:
        raise corrupt(path, "`provenance.recording.sha256` is not one line of `provenance:` as tokconf writes it")
    at = raw.index(old, 0, head)
    sealed = FORMAT.seal(raw[:at] + new + raw[at + len(old) :])
    renamed = replace(decoding, provenance=decoding.provenance | {"recording": named | {"sha256": recording_is}})
    if FORMAT.sealed(path, sealed, parse_yaml(sealed)) != renamed:
        raise TokconfError(f"{path}: sealed, it does not read back identically; nothing was written")
    return sealed
