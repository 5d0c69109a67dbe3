"""Recordings: YAML files of what llama.cpp answered, one per vocabulary (docs/recording-format.md).

Ids are one string of space-separated decimals, as in llama.cpp's own `.out` files: a YAML list makes
every id a scalar the loader must resolve, and the bundled set then takes a minute to load, not
seconds. Every write is atomic and is read back and compared before it replaces anything, so a
recording is never half written or silently lossy. Reading checks the fields every consumer relies
on, so a damaged file is refused with its path and the field, never a traceback.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import TokconfError
from harness.core.facts import RECORDING_SCHEMA, Provenance, VocabFacts
from harness.core.files import atomic_write, yaml_files
from harness.core.outcome import MODES, Mode, Outcome, Refusal
from harness.recordings.yaml_io import (
    Flow,
    FlowList,
    corrupt,
    dump_yaml,
    parse_yaml,
    read_head,
    read_yaml_raw,
    text_fields,
)

SCHEMA = RECORDING_SCHEMA
CASES_LINE = b"\ncases:\n"  # where the digested section starts
CASE_KEYS = {"id", "text", "bytes_hex", "why", *MODES}
SUFFIX_DECODING = ".decoding.yaml"  # a recording's decoding companion (harness.recordings.decoding)


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
    SYNTHETIC = "synthetic"  # made by a tokconf recipe (harness.synth)
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
    """The plain-data form written to YAML."""
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
    """The YAML text of a recording: stable order, leaf lists in flow style, no line folding, and the
    count and sha256 of its `cases:` section in `provenance.cases`, so a truncated or edited file is
    refused on load (`_verify_cases`)."""
    doc = to_document(recording)
    cases = dump_yaml({"cases": doc.pop("cases")}, visible)
    digest = Flow(count=len(recording.cases), sha256=hashlib.sha256(cases.encode("utf-8")).hexdigest())
    doc["provenance"]["cases"] = digest
    return dump_yaml(doc, visible) + cases


def _verify_cases(path: Path, raw: bytes, doc: dict[str, Any], recording: Recording) -> None:
    """The cases are the ones the provenance counts and hashes: nothing cut off, added or edited."""
    digest = doc["provenance"].get("cases")
    if not isinstance(digest, dict) or not isinstance(digest.get("count"), int) or "sha256" not in digest:
        raise corrupt(path, "`provenance.cases` (the count and sha256 of the cases) is missing")
    at = raw.find(CASES_LINE)
    actual = hashlib.sha256(raw[at + 1 :] if at >= 0 else b"").hexdigest()
    if digest["count"] != len(recording.cases) or digest["sha256"] != actual:
        raise corrupt(
            path,
            f"the cases are not the ones recorded: {len(recording.cases)} cases with sha256 {actual[:16]}…, "
            f"`provenance.cases` says {digest['count']} with {str(digest['sha256'])[:16]}… "
            "(the file was cut short or edited)",
        )


def _case_data(path: Path, node: dict[str, Any]) -> bytes:
    if "text" in node and isinstance(node["text"], str):
        return node["text"].encode("utf-8")
    if "bytes_hex" in node:
        return bytes.fromhex(node["bytes_hex"])
    raise corrupt(path, f"case {node.get('id')!r} has neither `text` nor `bytes_hex`")


def _outcome(path: Path, case_id: str, node: Any) -> Outcome:
    if isinstance(node, str):
        try:
            return list(map(int, node.split()))
        except ValueError:
            pass
    elif isinstance(node, int) and not isinstance(node, bool):  # a lone id someone wrote unquoted
        return [node]
    elif isinstance(node, dict) and isinstance(node.get("error"), str):
        return Refusal(node["error"])
    raise corrupt(path, f"case {case_id!r}: an outcome must be a string of ids ('1 2 3') or {{error: reason}}")


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
            raise corrupt(path, f"`{dotted}` must be {'an' if wanted == 'int' else 'a'} {wanted}, found {node!r}")
    for name in ("bos", "eos"):
        if not isinstance(doc["facts"]["special_ids"].get(name), int):
            raise corrupt(path, f"`facts.special_ids.{name}` must be an int")


def _facts(node: dict[str, Any]) -> VocabFacts:
    facts: dict[str, Any] = dict(node)
    facts["special_texts"] = {
        int(i): (t["text"].encode("utf-8") if "text" in t else bytes.fromhex(t["bytes_hex"]))
        for i, t in (node.get("special_texts") or {}).items()
    }
    facts["token_attributes"] = {int(i): a for i, a in (node.get("token_attributes") or {}).items()}
    typed: VocabFacts = facts  # type: ignore[assignment]  # the keys consumers read are checked by _require
    return typed


def from_document(path: Path, doc: Any) -> Recording:
    """Validate a loaded YAML document and build the in-memory recording."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        found = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise corrupt(path, f"not a {SCHEMA} recording (schema: {found!r})")
    for key in ("provenance", "facts", "cases"):
        if key not in doc:
            raise corrupt(path, f"missing `{key}`")
    cases = []
    seen: set[str] = set()
    try:
        for node in doc["cases"]:
            case_id = str(node["id"])
            if case_id in seen:
                raise corrupt(path, f"duplicate case id {case_id!r}")
            seen.add(case_id)
            outcomes: dict[Mode, Outcome] = {
                mode: _outcome(path, case_id, node[mode]) for mode in MODES if mode in node
            }
            cases.append(RecordedCase(case_id, _case_data(path, node), outcomes, node.get("why")))
        for node in doc["cases"]:
            unknown, missing = set(node) - CASE_KEYS, [m for m in MODES if m not in node]
            if unknown or missing:
                found = f"unknown keys {sorted(unknown)}" if unknown else f"no outcome for mode {missing[0]!r}"
                raise corrupt(
                    path, f"case {node['id']!r}: {found} (a case has id, text or bytes_hex, why and the modes)"
                )
        _require(path, doc)
        if not cases:
            raise corrupt(path, "`cases` must be a non-empty list")
        return Recording(doc["provenance"], _facts(doc["facts"]), cases)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise corrupt(path, f"malformed content ({type(error).__name__}: {error})") from None


def read_provenance(path: Path) -> Provenance:
    """A recording's provenance alone, from the head of the file (the cases are megabytes)."""
    doc = read_head(path, b"facts:", "recording")
    if doc.get("schema") != SCHEMA:
        raise corrupt(path, f"not a {SCHEMA} recording (schema: {doc.get('schema')!r})")
    provenance: Provenance = doc["provenance"]
    return provenance


def load(path: Path) -> Recording:
    """Read one recording file, and check its cases against their digest."""
    raw, doc = read_yaml_raw(path, "recording")
    recording = from_document(path, doc)
    _verify_cases(path, raw, doc, recording)
    return recording


def recording_files(paths: list[Path]) -> list[Path]:
    """Recording files under the given files or folders, sorted."""
    found = [p for p in yaml_files(paths, "recording") if not p.name.endswith(SUFFIX_DECODING)]
    if not found:
        raise TokconfError(f"no recordings (*.yaml) under {', '.join(map(str, paths))}", "run `tokconf record`")
    return found


def write(path: Path, recording: Recording, visible: bool = False) -> None:
    """Write atomically, after proving the YAML reads back to exactly the same recording (`visible`:
    invisible characters escaped, see `dump_yaml`)."""
    text = dumps(recording, visible)
    again = from_document(path, parse_yaml(text))
    if again.cases != recording.cases or again.facts != recording.facts:
        raise TokconfError(f"{path}: the YAML form does not read back identically; nothing was written")
    atomic_write(path, text, "recording")
