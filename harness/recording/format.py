"""Recordings: YAML files of what llama.cpp answered, one per vocabulary (docs/recording-format.md).

Ids are one string of space-separated decimals, as in llama.cpp's own `.out` files: a YAML list makes
every id a scalar the loader must resolve, and the bundled set then takes a minute to load, not
seconds. Every write is atomic and is read back and compared before it replaces anything, so a
recording is never half written or silently lossy. A recording may come from elsewhere: reading
checks every field a consumer relies on, so a damaged or hostile file is refused with its path and
the field, never a traceback, and then its digest (`provenance.digest`, over every other byte), so
a file edited anywhere, facts and provenance included, is refused rather than believed.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Collection
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path
from typing import Any

from ..core.errors import TokconfError
from ..core.facts import RECORDING_SCHEMA, Provenance, VocabFacts, is_bare_file_name, is_token_id
from ..core.files import FileKind, atomic_write, recordings_shown, yaml_files
from ..core.outcome import MODES, Mode, Outcome, Refusal, ids_from_text
from ..core.plain_yaml import parse_yaml, shown
from .yaml_io import (
    Flow,
    FlowList,
    SealedFormat,
    corrupt,
    dump_yaml,
    text_fields,
)

SCHEMA = RECORDING_SCHEMA
SEALED_BEFORE = b"facts:"  # the top-level line the digest line precedes
CASE_KEYS = {"id", "text", "bytes_hex", "why", *MODES}
MAX_ID_LENGTH = 512  # a case id: `found-<vocab file stem>/fuzz-<12 hex>` is the longest tokconf writes
MAX_TOKENS = 1 << 31  # llama_token is an int32_t
# Provenance keys that describe the file, not what was recorded: left out in memory, written by `dumps`.
SEAL_KEYS = ("digest", "cases")  # `cases`: the digest of the cases alone an older tokconf wrote
SUFFIX_DECODING = ".decoding.yaml"  # a recording's decoding companion (tokconf.recording.decoding)


@dataclass
class RecordedCase:
    """One input and its outcome in every recorded mode."""

    id: str
    data: bytes
    outcomes: dict[Mode, Outcome]
    why: str | None = None


class VocabGroup(enum.Enum):
    """Where a recording's vocabulary comes from, the groups of the check table."""

    SHIPPED = "shipped"  # a test vocabulary llama.cpp ships in models/
    SYNTHETIC = "synthetic"  # made by a tokconf recipe (tokconf.synth)
    USER = "user"  # any other file: a real model, a found file, a port's own


@dataclass
class Recording:
    """A whole recording file in memory."""

    provenance: Provenance
    facts: VocabFacts
    cases: list[RecordedCase] = field(default_factory=list)

    @property
    def vocab_name(self) -> str:
        return self.provenance["vocab"]["name"]

    @property
    def vocab_sha256(self) -> str:
        return self.provenance["vocab"]["sha256"]

    @property
    def build(self) -> int:
        return self.provenance["llama_cpp"]["build"]

    @property
    def group(self) -> VocabGroup:
        vocab = self.provenance["vocab"]
        if "synthetic" in vocab:
            return VocabGroup.SYNTHETIC
        if vocab["file"].startswith("ggml-vocab-") and "campaigns" not in self.provenance:
            return VocabGroup.SHIPPED
        return VocabGroup.USER


def _outcome_node(outcome: Outcome) -> Any:
    return Flow(error=outcome.reason) if isinstance(outcome, Refusal) else " ".join(map(str, outcome))


def _facts_node(facts: VocabFacts) -> dict[str, Any]:
    node: dict[Any, Any] = {k: v for k, v in facts.items() if k not in ("token_attributes", "special_texts")}
    node["special_ids"] = Flow(facts["special_ids"])
    node["eog_ids"] = FlowList(facts["eog_ids"])
    node["token_attributes"] = dict(sorted(facts["token_attributes"].items()))
    node["special_texts"] = {i: Flow(text_fields(t)) for i, t in sorted(facts["special_texts"].items())}
    return node


def to_document(recording: Recording) -> dict[str, Any]:
    """The plain-data form written to YAML (its digest is added by `dumps`)."""
    cases = []
    for case in recording.cases:
        node: dict[str, Any] = {"id": case.id, **text_fields(case.data)}
        if case.why:
            node["why"] = case.why
        node.update({mode: _outcome_node(o) for mode, o in case.outcomes.items()})
        cases.append(node)
    source: dict[str, Any] = dict(recording.provenance)
    provenance = {k: Flow(v) if isinstance(v, dict) and k != "corpus" else v for k, v in source.items()}
    if "modes" in provenance:
        provenance["modes"] = {m: Flow(flags) for m, flags in source["modes"].items()}
    return {"schema": SCHEMA, "provenance": provenance, "facts": _facts_node(recording.facts), "cases": cases}


def dumps(recording: Recording, visible: bool = False) -> str:
    """The YAML text of a recording: stable order, leaf lists in flow style, no line folding, sealed
    by `provenance.digest` (the sha256 of every other byte), so a truncated or edited file is refused
    on load."""
    text = dump_yaml(to_document(recording), visible).encode("utf-8")
    return FORMAT.seal(text).decode("utf-8")


def _outcome(path: Path, case_id: str, mode: str, node: Any) -> Outcome:
    if isinstance(node, str):
        try:
            return ids_from_text(node)
        except ValueError:  # not only digits and single spaces, or an id of thousands of digits
            pass
    elif isinstance(node, dict) and len(node) == 1 and isinstance(node.get("error"), str):
        return Refusal(node["error"])
    raise corrupt(
        path,
        f"case {shown(case_id)} {mode}: an outcome must be a string of ASCII decimal ids with one space between "
        f"them ('1 2 3') or {{error: reason}}, not {shown(node)}",
    )


def _case(path: Path, node: Any) -> RecordedCase:
    """One case, checked: a string id, exactly one input, a string `why` if any, and an outcome for
    every mode, nothing else."""
    if not isinstance(node, dict):
        raise corrupt(path, f"each case must be a mapping, not {shown(node)}")
    case_id = node.get("id")
    if not isinstance(case_id, str) or not 0 < len(case_id) <= MAX_ID_LENGTH:
        raise corrupt(path, f"a case's `id` must be a string of 1 to {MAX_ID_LENGTH} characters, not {shown(case_id)}")
    if not CASE_KEYS >= node.keys() >= MODES.keys():
        unknown, missing = node.keys() - CASE_KEYS, [m for m in MODES if m not in node]
        if unknown:
            names = ", ".join(shown(key) for key in sorted(map(str, unknown))[:3])
            raise corrupt(path, f"case {shown(case_id)}: unknown keys [{names}] (a case has id, input, why, modes)")
        raise corrupt(path, f"case {shown(case_id)}: no outcome for mode {missing[0]!r} (every case has all three)")
    why = node.get("why")
    if why is not None and not isinstance(why, str):
        raise corrupt(path, f"case {shown(case_id)}: `why` must be a string, not {shown(why)}")
    outcomes: dict[Mode, Outcome] = {mode: _outcome(path, case_id, mode, node[mode]) for mode in MODES}
    return RecordedCase(case_id, _case_data(path, case_id, node), outcomes, why)


def _case_data(path: Path, case_id: str, node: dict[str, Any]) -> bytes:
    text, hex_text = node.get("text"), node.get("bytes_hex")
    if isinstance(text, str) and hex_text is None:
        return text.encode("utf-8")  # libyaml reads no lone surrogate
    if text is None and (data := _from_hex(hex_text)) is not None:
        return data
    raise corrupt(
        path,
        f"case {shown(case_id)} must have exactly one input: `text` (a string) or `bytes_hex` (pairs of hex digits)",
    )


# The fields every consumer reads, with the type each must have: a file lacking one is refused by name.
_REQUIRED: dict[str, tuple[type, ...]] = {
    "provenance.llama_cpp.build": (int,),
    "provenance.vocab.name": (str,),
    "provenance.vocab.file": (str,),
    "provenance.vocab.sha256": (str,),
    "facts.vocab_type": (str,),
    "facts.n_tokens": (int,),
    "facts.add_bos": (bool,),
    "facts.add_eos": (bool,),
    "facts.special_ids": (dict,),
    "facts.eog_ids": (list,),
}


def _require(path: Path, doc: dict[str, Any]) -> None:
    for dotted, types in _REQUIRED.items():
        node: Any = doc
        for key in dotted.split("."):
            node = node.get(key) if isinstance(node, dict) else None
        if not isinstance(node, types) or (types == (int,) and isinstance(node, bool)):
            wanted = " or ".join(t.__name__ for t in types)
            raise corrupt(path, f"`{dotted}` must be {'an' if wanted == 'int' else 'a'} {wanted}, found {shown(node)}")
    if not is_bare_file_name(doc["provenance"]["vocab"]["file"]):
        raise corrupt(
            path,
            f"`provenance.vocab.file` must be a bare file name (no folder, no `..`), not "
            f"{shown(doc['provenance']['vocab']['file'])}: a vocab file is looked for only in --vocab-dir "
            "or tokconf's cache",
        )
    modes = doc["provenance"].get("modes")
    if modes is not None and modes != {m: {"add_special": a, "parse_special": p} for m, (a, p) in MODES.items()}:
        raise corrupt(path, "`provenance.modes` must be the three modes tokconf records (docs/recording-format.md)")
    if not isinstance(doc["provenance"].get("campaigns", []), list):
        raise corrupt(path, "`provenance.campaigns` must be a list (of the fuzz campaigns that found its cases)")
    _check_facts(path, doc["facts"])


def _check_facts(path: Path, facts: dict[str, Any]) -> None:
    """Every id in the facts is a token of the vocabulary, every text a string: what an implementation
    is compared with must be what llama.cpp can have said."""
    n_tokens = facts["n_tokens"]
    if not 0 <= n_tokens < MAX_TOKENS:
        raise corrupt(path, f"`facts.n_tokens` must be from 0 to {MAX_TOKENS - 1}, found {shown(n_tokens)}")

    def token(value: object, allow_none: bool = False) -> bool:
        return is_token_id(value, allow_none) and value < n_tokens  # an int by then

    special_ids, eog_ids = facts["special_ids"], facts["eog_ids"]
    if not all(isinstance(k, str) and token(v, allow_none=True) for k, v in special_ids.items()):
        raise corrupt(path, f"`facts.special_ids` must map names to token ids below {n_tokens} (or -1)")
    if "bos" not in special_ids or "eos" not in special_ids:
        raise corrupt(path, "`facts.special_ids` must have `bos` and `eos`")
    if not all(token(i) for i in eog_ids):
        raise corrupt(path, f"`facts.eog_ids` must be a list of token ids below {n_tokens}")
    attributes, texts = facts.get("token_attributes") or {}, facts.get("special_texts") or {}
    if not (isinstance(attributes, dict) and all(token(i) and isinstance(a, str) for i, a in attributes.items())):
        raise corrupt(path, f"`facts.token_attributes` must map token ids below {n_tokens} to attribute names")
    if not (isinstance(texts, dict) and all(token(i) and _is_text(t) for i, t in texts.items())):
        raise corrupt(
            path, f"`facts.special_texts` must map token ids below {n_tokens} to {{text: …}} or {{bytes_hex: …}}"
        )


def _is_text(node: object) -> bool:
    if not isinstance(node, dict) or len(node) != 1:
        return False
    return isinstance(node.get("text"), str) or _from_hex(node.get("bytes_hex")) is not None


def _from_hex(value: object) -> bytes | None:
    """The bytes of a `bytes_hex` value: pairs of hex digits, nothing else (`bytes.fromhex` alone
    would also take spaces between them)."""
    if not isinstance(value, str):
        return None
    try:
        data = bytes.fromhex(value)
    except ValueError:
        return None
    return data if 2 * len(data) == len(value) else None


def _facts(node: dict[str, Any]) -> VocabFacts:
    facts: dict[str, Any] = dict(node)
    facts["special_texts"] = {
        i: (t["text"].encode("utf-8") if "text" in t else _from_hex(t["bytes_hex"]))
        for i, t in (node.get("special_texts") or {}).items()
    }
    facts["token_attributes"] = dict(node.get("token_attributes") or {})
    typed: VocabFacts = facts  # type: ignore[assignment]  # the keys consumers read are checked by _require
    return typed


def from_document(path: Path, doc: Any) -> Recording:
    """Validate a loaded YAML document and build the in-memory recording (its digest is checked by
    `load`, which has the file's bytes; the provenance in memory leaves it out)."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        found = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise corrupt(path, f"not a {SCHEMA} recording (schema: {shown(found)})")
    for key in ("provenance", "facts", "cases"):
        if key not in doc:
            raise corrupt(path, f"missing `{key}`")
    _require(path, doc)
    if not isinstance(doc["cases"], list) or not doc["cases"]:
        raise corrupt(path, "`cases` must be a non-empty list")
    cases = [_case(path, node) for node in doc["cases"]]
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise corrupt(path, f"duplicate case id {shown(case.id)}")
        seen.add(case.id)
    provenance = {k: v for k, v in doc["provenance"].items() if k not in SEAL_KEYS}
    return Recording(provenance, _facts(doc["facts"]), cases)  # type: ignore[arg-type]  # checked by _require


def read_provenance(path: Path) -> Provenance:
    """A recording's provenance alone, from the head of the file (the cases are megabytes); not
    checked against the digest, which covers the whole file: `load` checks it."""
    doc = FORMAT.head(path)
    if doc.get("schema") != SCHEMA:
        raise corrupt(path, f"not a {SCHEMA} recording (schema: {shown(doc.get('schema'))})")
    provenance: Provenance = {k: v for k, v in doc["provenance"].items() if k not in SEAL_KEYS}  # type: ignore[assignment]
    return provenance


# How a recording is read and sealed; `unsealed`: what to do with one an older tokconf wrote (its digest,
# `provenance.cases`, covers only its cases).
FORMAT = SealedFormat(
    "recording",
    from_document,
    SEALED_BEFORE,
    unsealed=(
        "if you trust where it came from, `tokconf seal --trust PATH` checks its cases and seals it as it is "
        '(its decoding too); otherwise re-record it with `tokconf record` (docs/recording-format.md, "Digest")'
    ),
)


def load(path: Path, kind: FileKind = FileKind.RECORDING) -> Recording:
    """Read one recording file: every field checked, then the file's bytes against its digest. `kind`:
    whose size cap it is read within (`FileKind.FOUND` for the found file a campaign adds to)."""
    return FORMAT.read(path, kind)


def recording_files(paths: list[Path]) -> list[Path]:
    """Recording files under the given files or folders, sorted. A `*.yaml` there that is not a
    regular file (a FIFO, a link to a device) is an error naming it (`yaml_files`), never skipped or
    waited on."""
    found = [p for p in yaml_files(paths, "recording") if not p.name.endswith(SUFFIX_DECODING)]
    if not found:
        raise TokconfError(f"no recordings (*.yaml) under {', '.join(map(str, paths))}", "run `tokconf record`")
    return found


def named_recordings(paths: list[Path], names: Collection[str], option: str = "--vocab") -> list[Path]:
    """The recording files under `paths` of the vocabularies `names` (every one when none is named). A
    name no recording there has is an error naming it: a mistyped `--vocab` beside a right one would
    otherwise leave its vocabulary unchecked while the run passes on the rest."""
    found = recording_files(paths)
    known = {p.stem for p in found}
    missing = sorted(set(names) - known)
    if missing:
        close = {name: get_close_matches(name, known, 1) for name in missing}
        hints = [f"{name!r}: did you mean {m[0]!r}?" for name, m in close.items() if m]
        if not all(close.values()):
            hints.append(f"{len(known)} vocabularies have recordings there, e.g. {', '.join(sorted(known)[:5])}")
        which = "these vocabularies" if len(missing) > 1 else "it"
        raise TokconfError(
            f"{option} {' '.join(missing)}: no recording of {which} in {', '.join(map(recordings_shown, paths))}",
            " ".join(hints),
        )
    return [p for p in found if not names or p.stem in names]


def write(path: Path, recording: Recording, visible: bool = False) -> None:
    """Write atomically, after proving the YAML reads back to exactly the same recording, digest
    included (`visible`: invisible characters escaped, see `dump_yaml`)."""
    text = dumps(recording, visible)
    raw = text.encode("utf-8")
    again = FORMAT.sealed(path, raw, parse_yaml(raw))
    if again.cases != recording.cases or again.facts != recording.facts:
        raise TokconfError(f"{path}: the YAML form does not read back identically; nothing was written")
    atomic_write(path, text, "recording")


def reseal(path: Path, raw: bytes, doc: Any) -> bytes:
    """A recording's bytes as this tokconf seals them, for `tokconf seal --trust`: unchanged when they
    are sealed already (and intact); for a file an older tokconf wrote, whose digest covered its cases
    alone (`provenance.cases: {count, sha256}`, the last line of `provenance:`), that digest checked
    and its line replaced by `provenance.digest`, every other byte kept. Nothing vouched for such a
    file's facts and provenance, so only a user who trusts it may seal it. `doc`: what `raw` parses to."""
    recording = from_document(path, doc)
    if "digest" in doc["provenance"]:
        FORMAT.check(path, raw, doc)
        return raw
    at = raw.find(b"\n" + SEALED_BEFORE + b"\n") + 1
    start = raw.rfind(b"\n", 0, max(at - 1, 0)) + 1
    cases_at = raw.find(b"\ncases:\n") + 1
    line = f"  cases: {{count: {len(recording.cases)}, sha256: {hashlib.sha256(raw[cases_at:]).hexdigest()}}}\n"
    if at <= 0 or cases_at <= 0 or raw[start:at] != line.encode():
        raise corrupt(
            path,
            "neither sealed nor a recording an older tokconf wrote: no `provenance.digest`, and no "
            "`provenance.cases` line matching its cases (they were cut short or edited)",
        )
    sealed = FORMAT.seal(raw[:start] + raw[at:])
    if FORMAT.sealed(path, sealed, parse_yaml(sealed)) != recording:
        raise TokconfError(f"{path}: sealed, it does not read back identically; nothing was written")
    return sealed
