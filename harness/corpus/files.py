"""The corpus: YAML files of input cases by theme (`corpora/*.yaml`), loaded and validated.

A file is `{theme, description, cases: [...]}`; a case has a stable `id` (unique in its file; the
recorded id is `<file stem>/<id>`), exactly one of `text` (a string, YAML escapes allowed) or
`bytes_hex` (raw bytes, so invalid UTF-8 is recordable), an optional `repeat` count (a 10,000-space
input is stored as one space and `repeat: 10000`, losslessly), and a `why` unless the file says it was
`generated_by` a script. Any deviation is an error naming the file and the case, before anything runs.

`repeat` is shorthand, not a multiplier of memory: a case expands to at most `MAX_CASE_BYTES`, and all
the cases loaded for one run to at most the recording cap (each case's text is written into the
recording, which must be read back). Each is checked before the bytes are made, so a `repeat:
1000000000000` is one error naming the file and the case, never a MemoryError.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..core.errors import TokconfError
from ..core.facts import RECORDING_SCHEMA
from ..core.files import FileKind, read_bounded, yaml_files
from ..core.outcome import MODES
from ..core.plain_yaml import parse_yaml

ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
# The longest input a case may expand to. The largest bundled case is 51 KB (documents/python-reference-50k).
# 1 MiB keeps the longest answer llama.cpp may give it (tokconf.oracles.bound: 4 ids a byte, each up to ten
# digits and a separator: 48 MiB of JSON) within one line of the line protocol (64 MiB).
MAX_CASE_BYTES = 1 << 20
CASE_KEYS = {"id", "text", "bytes_hex", "repeat", "why", "source"}
FILE_KEYS = {"theme", "description", "cases", "generated_by", "source", "license"}


@dataclass(frozen=True)
class Case:
    """One input: its recorded id, its exact bytes, and why it is in the corpus."""

    id: str
    data: bytes
    why: str | None = None


@dataclass(frozen=True)
class CorpusFile:
    """One loaded corpus file and the sha256 of its bytes (part of every recording's provenance)."""

    path: Path
    sha256: str
    cases: tuple[Case, ...]


def _bad(path: Path, where: str, problem: str) -> TokconfError:
    return TokconfError(f"{path}: {where}: {problem}", "fix the corpus file; nothing was recorded")


def _load_yaml(path: Path, raw: bytes) -> Any:
    """A corpus file, or a found file (a recording) read for its inputs: plain data only, as every
    file from elsewhere (`tokconf.core.plain_yaml`)."""
    try:
        return parse_yaml(raw)
    except yaml.YAMLError as error:
        problem = str(error).replace("\n", " ")
        raise _bad(path, "YAML", problem if len(problem) <= 300 else problem[:300] + "…") from None


def _case_data(path: Path, where: str, entry: dict[str, Any]) -> bytes:
    if ("text" in entry) == ("bytes_hex" in entry):
        raise _bad(path, where, "needs exactly one of `text` or `bytes_hex`")
    if "text" in entry:
        if not isinstance(entry["text"], str):
            raise _bad(path, where, "`text` must be a string (quote it)")
        try:
            data = entry["text"].encode("utf-8")
        except UnicodeEncodeError:
            raise _bad(path, where, "`text` has a lone surrogate; use `bytes_hex` for invalid UTF-8") from None
    else:
        try:
            data = bytes.fromhex(str(entry["bytes_hex"]))
        except ValueError:
            raise _bad(path, where, "`bytes_hex` is not hexadecimal") from None
    repeat = entry.get("repeat", 1)
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
        raise _bad(path, where, "`repeat` must be a positive integer")
    if len(data) * repeat > MAX_CASE_BYTES:  # checked before the bytes are made
        raise _bad(path, where, f"`repeat: {repeat}` makes it {len(data) * repeat:,} bytes; a case holds at most "
                                f"{MAX_CASE_BYTES:,} (1 MiB)")  # fmt: skip
    return data * repeat


def _inputs_of_recording(path: Path, doc: dict[str, Any]) -> dict[str, Any]:
    """A recording read as a corpus file: its cases' inputs, ids without the `<stem>/` prefix. This is
    how the findings a fuzz campaign keeps as recordings (`corpora/found/`) stay in the corpus of the
    next `tokconf record`."""
    cases = []
    for entry in doc.get("cases") or []:
        if not isinstance(entry, dict):
            raise _bad(path, "cases", "each case must be a mapping")
        case = {k: v for k, v in entry.items() if k not in MODES}
        case["id"] = str(case.get("id", "")).removeprefix(f"{path.stem}/")
        cases.append(case)
    return {"cases": cases}


def load_corpus_file(path: Path, expanded: int = 0) -> CorpusFile:
    """Load and validate one corpus file (or the inputs of a recording, see `_inputs_of_recording`): a
    regular file within the corpus cap (`read_bounded`). `expanded`: the bytes the files loaded before
    it for the same run expand to (the module docstring's bound)."""
    raw = read_bounded(path, FileKind.CORPUS)
    doc = _load_yaml(path, raw)
    if isinstance(doc, dict) and doc.get("schema") == RECORDING_SCHEMA:
        doc = _inputs_of_recording(path, doc)
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        raise _bad(path, "top level", "must be a mapping with a `cases` list")
    unknown = set(doc) - FILE_KEYS
    if unknown:
        raise _bad(path, "top level", f"unknown keys {sorted(unknown)}")
    generated = "generated_by" in doc
    seen: set[str] = set()
    cases = []
    room = FileKind.RECORDING.cap - expanded
    for index, entry in enumerate(doc["cases"]):
        where = f"case #{index}"
        if not isinstance(entry, dict):
            raise _bad(path, where, "must be a mapping")
        case_id = entry.get("id")
        if not isinstance(case_id, str) or not ID_PATTERN.match(case_id):
            raise _bad(path, where, f"`id` {case_id!r} must match {ID_PATTERN.pattern}")
        where = f"case {case_id!r}"
        if case_id in seen:
            raise _bad(path, where, "duplicate id")
        seen.add(case_id)
        unknown = set(entry) - CASE_KEYS
        if unknown:
            raise _bad(path, where, f"unknown keys {sorted(unknown)}")
        why = entry.get("why")
        if not generated and not (isinstance(why, str) and why.strip()):
            raise _bad(path, where, "hand-written cases need a `why`")
        data = _case_data(path, where, entry)
        room -= len(data)
        if room < 0:
            cap = FileKind.RECORDING
            raise _bad(path, where, f"the corpus up to this case expands to more than the {cap.cap >> 20} MiB of "
                                    f"input one recording may hold ({cap.variable}); record it in parts")  # fmt: skip
        cases.append(Case(f"{path.stem}/{case_id}", data, why))
    return CorpusFile(path, hashlib.sha256(raw).hexdigest(), tuple(cases))


def load_corpus(paths: Iterable[Path]) -> list[CorpusFile]:
    """Load every `*.yaml` under the given files or folders, sorted by path for a stable order."""
    loaded: list[CorpusFile] = []
    expanded = 0
    for path in yaml_files(paths, "corpus"):
        loaded.append(load_corpus_file(path, expanded))
        expanded += sum(len(case.data) for case in loaded[-1].cases)
    stems: dict[str, Path] = {}
    for corpus_file in loaded:
        other = stems.setdefault(corpus_file.path.stem, corpus_file.path)
        if other != corpus_file.path:
            raise TokconfError(
                f"corpus files {other} and {corpus_file.path} share the name {corpus_file.path.stem!r}",
                "case ids are <file name>/<id>; rename one of them",
            )
    return loaded
