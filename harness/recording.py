"""Recordings: YAML files of what llama.cpp answered, one per vocabulary (docs/recording-format.md).

Written with libyaml in a fixed key order, one line per case and mode, so re-recording unchanged
inputs gives a byte-identical file and `git diff` of two recordings shows changed cases line by line.
Ids are one string of space-separated decimals, as in llama.cpp's own `.out` files: a YAML list makes
every id a scalar the loader must resolve, and the bundled set then takes a minute to load, not
seconds. Every write is atomic (temporary file, fsync, rename) and is read back and compared
before it replaces anything, so a recording is never half written or silently lossy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.errors import TokconfError
from harness.outcome import Outcome, Refusal
from harness.paths import yaml_files

SCHEMA = "tokconf-recording/1"
SUFFIX_DECODING = ".decoding.yaml"  # a recording's decoding companion (harness.decoding), not a recording

# mode name -> (add_special, parse_special), as llama_tokenize takes them.
MODES: dict[str, tuple[bool, bool]] = {
    "plain": (False, False),  # llama.cpp's own tests/test-tokenizer-0 setting
    "special": (False, True),
    "bos": (True, True),  # llama-tokenize's default for vocabs that add BOS
}


@dataclass
class RecordedCase:
    """One input and its outcome in every recorded mode."""

    id: str
    data: bytes
    outcomes: dict[str, Outcome]
    why: str | None = None


@dataclass
class Recording:
    """A whole recording file in memory."""

    provenance: dict[str, Any]
    facts: dict[str, Any]
    cases: list[RecordedCase] = field(default_factory=list)

    @property
    def vocab_name(self) -> str:
        return str(self.provenance["vocab"]["name"])

    @property
    def vocab_sha256(self) -> str:
        return str(self.provenance["vocab"]["sha256"])


class Flow(dict[str, Any]):
    """A small mapping written on one line (`{error: …}`, `{text: …}`, a provenance entry)."""


class _Dumper(yaml.CSafeDumper):
    """libyaml's dumper; cases and lists of cases in block style, `Flow` mappings on one line."""


class FlowList(list[Any]):
    """A list of scalars written on one line (`eog_ids`)."""


class _Text(str):
    """An input text: double-quoted (escapes visible) when it holds control characters or edge spaces.

    The rule looks only at ASCII and C1 controls, never at the running Python's Unicode tables, so
    the output is the same on every Python version; libyaml escapes the rest as YAML requires.
    """


def _represent_text(dumper: yaml.CSafeDumper, text: _Text) -> yaml.ScalarNode:
    visible = not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in text) and text == text.strip(" ")
    style = None if visible and text else '"'
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(text), style=style)


_Dumper.add_representer(_Text, _represent_text)
_Dumper.add_representer(Flow, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v, flow_style=True))
_Dumper.add_representer(FlowList, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True))


def _text_fields(data: bytes) -> dict[str, str]:
    try:
        return {"text": _Text(data.decode("utf-8"))}
    except UnicodeDecodeError:
        return {"bytes_hex": data.hex()}


def _outcome_node(outcome: Outcome) -> Any:
    return Flow(error=outcome.reason) if isinstance(outcome, Refusal) else " ".join(map(str, outcome))


def _facts_node(facts: dict[str, Any]) -> dict[str, Any]:
    node: dict[Any, Any] = {k: v for k, v in facts.items() if k not in ("token_attributes", "special_texts")}
    node["special_ids"] = Flow(facts["special_ids"])
    node["eog_ids"] = FlowList(facts["eog_ids"])
    node["token_attributes"] = dict(sorted(facts["token_attributes"].items()))
    node["special_texts"] = {i: Flow(_text_fields(t)) for i, t in sorted(facts["special_texts"].items())}
    return node


def to_document(recording: Recording) -> dict[str, Any]:
    """The plain-data form written to YAML."""
    cases = []
    for case in recording.cases:
        node: dict[str, Any] = {"id": case.id, **_text_fields(case.data)}
        if case.why:
            node["why"] = case.why
        node.update({mode: _outcome_node(o) for mode, o in case.outcomes.items()})
        cases.append(node)
    provenance = {k: Flow(v) if isinstance(v, dict) and k != "corpus" else v for k, v in recording.provenance.items()}
    if "modes" in provenance:
        provenance["modes"] = {m: Flow(flags) for m, flags in recording.provenance["modes"].items()}
    return {"schema": SCHEMA, "provenance": provenance, "facts": _facts_node(recording.facts), "cases": cases}


def dumps(recording: Recording) -> str:
    """The YAML text of a recording: stable order, leaf lists in flow style, no line folding."""
    return dump_yaml(to_document(recording))


def dump_yaml(doc: dict[str, Any]) -> str:
    """Recordings' YAML style: keys in the given order, block style, no line folding."""
    return yaml.dump(
        doc,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 30,
    )


class CorruptRecording(TokconfError):
    """A recording file that cannot be read back as the schema says."""


def corrupt(path: Path, problem: str) -> CorruptRecording:
    return CorruptRecording(
        f"{path}: {problem}",
        "restore it from git or re-record it with `tokconf record` (see docs/recording-format.md)",
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
            return [int(i) for i in node.split()]
        except ValueError:
            pass
    elif isinstance(node, int) and not isinstance(node, bool):  # a lone id someone wrote unquoted
        return [node]
    elif isinstance(node, dict) and isinstance(node.get("error"), str):
        return Refusal(node["error"])
    raise corrupt(path, f"case {case_id!r}: an outcome must be a string of ids ('1 2 3') or {{error: reason}}")


def _facts(node: dict[str, Any]) -> dict[str, Any]:
    facts = dict(node)
    facts["special_texts"] = {
        int(i): (t["text"].encode("utf-8") if "text" in t else bytes.fromhex(t["bytes_hex"]))
        for i, t in node.get("special_texts", {}).items()
    }
    facts["token_attributes"] = {int(i): a for i, a in node.get("token_attributes", {}).items()}
    return facts


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
            outcomes = {mode: _outcome(path, case_id, node[mode]) for mode in MODES if mode in node}
            cases.append(RecordedCase(case_id, _case_data(path, node), outcomes, node.get("why")))
        return Recording(doc["provenance"], _facts(doc["facts"]), cases)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise corrupt(path, f"malformed content ({type(error).__name__}: {error})") from None


def read_yaml(path: Path, what: str) -> Any:
    """A recording-style YAML file parsed with the C loader (the whole bundled set loads in seconds)."""
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise TokconfError(f"cannot read {what} {path}: {error.strerror}") from None
    try:
        return yaml.load(raw, Loader=yaml.CSafeLoader)
    except yaml.YAMLError as error:
        raise corrupt(path, f"invalid YAML ({str(error).splitlines()[0]})") from None


def load(path: Path) -> Recording:
    """Read one recording file."""
    return from_document(path, read_yaml(path, "recording"))


def recording_files(paths: list[Path]) -> list[Path]:
    """Recording files under the given files or folders, sorted."""
    found = [p for p in yaml_files(paths, "recording") if not p.name.endswith(SUFFIX_DECODING)]
    if not found:
        raise TokconfError(f"no recordings (*.yaml) under {', '.join(map(str, paths))}", "run `tokconf record`")
    return found


def write(path: Path, recording: Recording) -> None:
    """Write atomically, after proving the YAML reads back to exactly the same recording."""
    text = dumps(recording)
    again = from_document(path, yaml.load(text, Loader=yaml.CSafeLoader))
    if again.cases != recording.cases or again.facts != recording.facts:
        raise TokconfError(f"{path}: the YAML form does not read back identically; nothing was written")
    atomic_write(path, text)


def atomic_write(path: Path, text: str) -> None:
    """Temporary file, fsync, rename: a reader sees the old file or the new one, never half of one."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        raise TokconfError(f"cannot write {path}: {error.strerror}", "choose a writable --out folder") from None
