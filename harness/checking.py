"""The check engine: an implementation's answers against a recording, case by case and mode by mode.

Both front ends use it: `tokconf check` (fast, no per-case overhead) and the pytest plugin (one
test item per case and mode). A vocabulary's cases are sent to the implementation in one batch, so
the time goes to the implementation, not to the harness.

Verdicts: `passed` (same ids, or both refused), `failed` (different ids, or one side refused),
`error` (the implementation broke: crashed, hung, spoke garbage), `unsupported` (it declined the
vocabulary, or an input it cannot be given; counted, never passed), `xfailed`/`xpassed` (listed
in the expected-failure file; an xpass fails the run, so a fixed divergence gets its entry removed).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.decoding import DETOKENIZE, PIECE_KINDS, Decoding
from harness.errors import TokconfError
from harness.impls import Decoder, Implementation, Session, Unsupported, VocabInfo
from harness.outcome import UNSUPPORTED_CASE, Outcome, Refusal
from harness.provision import fetched_source, sha256_file, source_dir
from harness.recording import MODES, Recording

VERDICTS = ("passed", "failed", "error", "unsupported", "xfailed", "xpassed")
PROGRAM_FAILURE = "program failure:"


@dataclass(frozen=True)
class Selection:
    """Which part of the recordings to check."""

    vocabs: frozenset[str] = frozenset()
    modes: frozenset[str] = frozenset()
    cases: frozenset[str] = frozenset()

    def wants(self, vocab: str, mode: str, case: str) -> bool:
        return (
            (not self.vocabs or vocab in self.vocabs)
            and (not self.modes or mode in self.modes)
            and (not self.cases or case in self.cases)
        )


@dataclass(frozen=True)
class CaseResult:
    vocab: str
    mode: str
    case: str
    verdict: str
    data: bytes
    expected: Outcome
    actual: Outcome | None
    reason: str = ""


@dataclass
class ExpectedFailures:
    """`vocab/mode/case` (or `vocab/*/case`) -> reason and upstream link, from a YAML file."""

    entries: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path | None) -> ExpectedFailures:
        if path is None:
            return cls()
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as error:
            raise TokconfError(f"cannot read expected-failure file {path}: {error}") from None
        entries = doc.get("expected_failures") if isinstance(doc, dict) else None
        if not isinstance(entries, list):
            raise TokconfError(f"{path}: needs an `expected_failures` list", "see docs/checking.md")
        found = {}
        for entry in entries:
            if not isinstance(entry, dict) or not {"case", "reason"} <= set(entry):
                raise TokconfError(f"{path}: each entry needs `case` (vocab/mode/case id) and `reason`: {entry}")
            found[str(entry["case"])] = {"reason": str(entry["reason"]), "link": str(entry.get("link", ""))}
        return cls(found)

    def lookup(self, vocab: str, mode: str, case: str) -> dict[str, str] | None:
        return self.entries.get(f"{vocab}/{mode}/{case}") or self.entries.get(f"{vocab}/*/{case}")


def verdict(expected: Outcome, actual: Outcome) -> tuple[str, str]:
    """Compare one answer with the recording."""
    if isinstance(actual, Refusal) and actual.reason.startswith(PROGRAM_FAILURE):
        return "error", actual.reason
    if isinstance(actual, Refusal) and actual.reason.startswith(UNSUPPORTED_CASE):
        return "unsupported", actual.reason
    if isinstance(expected, Refusal):
        if isinstance(actual, Refusal):
            return "passed", ""
        return "failed", f"llama.cpp refused ({expected.reason}) but the implementation returned ids"
    if isinstance(actual, Refusal):
        return "failed", f"the implementation refused: {actual.reason}"
    if actual == expected:
        return "passed", ""
    return "failed", "different ids"


def vocab_file(recording: Recording, vocab_dir: Path | None) -> Path:
    """The GGUF file a recording was made from, checked by sha256."""
    name = str(recording.provenance["vocab"]["file"])
    if vocab_dir is None:
        build = int(recording.provenance["llama_cpp"]["build"])
        if fetched_source(build) is None:
            raise TokconfError(
                f"the vocab files of b{build} are not here",
                f"run `tokconf llama fetch --build {build}` (a 37 MB download) or pass --vocab-dir",
            )
        vocab_dir = source_dir(build) / "models"
    path = vocab_dir / name
    if not path.is_file():
        raise TokconfError(f"vocab file {path} is missing", "pass --vocab-dir with the folder holding it")
    if sha256_file(path) != recording.vocab_sha256:
        raise TokconfError(
            f"{path} has sha256 {sha256_file(path)}, but the recording was made from {recording.vocab_sha256}",
            "use the vocab file the recording names (tokconf llama fetch for its build)",
        )
    return path


FACTS_CASE = "facts"
DECODE = "decode"  # decoding checks' mode; their cases: pieces-special, pieces-plain and the DETOKENIZE settings


def check_recording(
    recording: Recording,
    impl: Implementation,
    vocab: Path,
    selection: Selection = Selection(),
    xfails: ExpectedFailures | None = None,
    decoding: Decoding | None = None,
) -> Iterator[CaseResult]:
    """Every selected case and mode of one recording, judged; then the facts the implementation
    exposes; then, with the recording's decoding, its pieces and detokenized cases."""
    name = recording.vocab_name
    wanted = [
        (case, mode) for case in recording.cases for mode in MODES if mode in case.outcomes
        if selection.wants(name, mode, case.id)
    ]  # fmt: skip
    facts = recording.facts
    info = VocabInfo(vocab, facts["vocab_type"], facts.get("model"), facts.get("pre"))
    try:
        session = impl.open(info)
    except Unsupported as why:
        for case, mode in wanted:
            yield CaseResult(name, mode, case.id, "unsupported", case.data, case.outcomes[mode], None, str(why))
        return
    try:
        answers = session.encode_many([(case.data, *MODES[mode]) for case, mode in wanted])
        exposed = session.facts()
        decoded = _check_decoding(recording, decoding, session, selection) if decoding else []
    finally:
        session.close()
    xfails = xfails or ExpectedFailures()
    for (case, mode), actual in zip(wanted, answers, strict=True):
        expected = case.outcomes[mode]
        judged, reason = verdict(expected, actual)
        listed = xfails.lookup(name, mode, case.id)
        if listed and judged != "passed":
            judged, reason = "xfailed", f"{listed['reason']} {listed['link']}".strip()
        elif listed:
            judged, reason = "xpassed", f"listed as an expected failure ({listed['reason']}) but it passes now"
        yield CaseResult(name, mode, case.id, judged, case.data, expected, actual, reason)
    if not selection.cases:
        yield from _check_facts(name, facts, exposed)
    yield from decoded


def _check_decoding(
    recording: Recording, decoding: Decoding, session: Session, selection: Selection
) -> list[CaseResult]:
    """One result per decoding check: every piece (special on, off), every case detokenized (two ways)."""
    name = recording.vocab_name
    kinds = [k for k in (*PIECE_KINDS, *DETOKENIZE) if not selection.cases and selection.wants(name, DECODE, k)]
    decoder = session.decoder()
    if decoder is None:
        why = "the implementation exposes no decoding (token_to_piece, decode and n_tokens)"
        return [CaseResult(name, DECODE, kind, "unsupported", b"", [], None, why) for kind in kinds]
    results = []
    for kind in kinds:
        try:
            if kind in PIECE_KINDS:
                wrong, total = _compare_pieces(decoding, decoder, PIECE_KINDS[kind])
            else:
                wrong, total = _compare_detokenized(recording, decoding, decoder, kind)
        except TokconfError:  # the decoding file, not the implementation
            raise
        except Exception as error:  # the implementation broke while decoding
            results.append(CaseResult(name, DECODE, kind, "error", b"", [], None, f"{type(error).__name__}: {error}"))
            continue
        reason = ""
        if wrong:
            shown = "; ".join(f"{what}: llama.cpp {want!r}, implementation {got!r}" for what, want, got in wrong[:3])
            reason = f"{len(wrong)} of {total} differ — {shown}"
        results.append(CaseResult(name, DECODE, kind, "failed" if wrong else "passed", b"", [], [], reason))
    return results


def _compare_pieces(decoding: Decoding, decoder: Decoder, special: bool) -> tuple[list[tuple[str, bytes, bytes]], int]:
    expected = decoding.piece_list(special)
    actual = decoder.pieces(special)
    if len(actual) != len(expected):
        return [("token count", str(len(expected)).encode(), str(len(actual)).encode())], len(expected)
    wrong = [(f"id {i}", want, got) for i, (want, got) in enumerate(zip(expected, actual, strict=True)) if want != got]
    return wrong, len(expected)


def _compare_detokenized(
    recording: Recording, decoding: Decoding, decoder: Decoder, setting: str
) -> tuple[list[tuple[str, bytes, bytes]], int]:
    remove, unparse = DETOKENIZE[setting]
    wrong, total = [], 0
    for case in recording.cases:
        ids = case.outcomes.get("bos")
        if not isinstance(ids, list):
            continue
        total += 1
        try:
            want = decoding.detokenized_text(setting, case.id, case.data)
        except ValueError as error:
            raise TokconfError(
                f"the decoding of {recording.vocab_name}, {setting} {case.id}: {error}",
                "re-record it: tokconf record-decoding",
            ) from None
        got = decoder.detokenize(ids, remove, unparse)
        if got != want:
            wrong.append((case.id, want, got))
    return wrong, total


def _check_facts(vocab: str, facts: dict[str, Any], exposed: dict[str, Any]) -> Iterator[CaseResult]:
    recorded = {
        "add_bos": facts["add_bos"],
        "add_eos": facts["add_eos"],
        "bos": facts["special_ids"]["bos"],
        "eos": facts["special_ids"]["eos"],
        "eog_ids": facts["eog_ids"],
    }
    for fact, value in exposed.items():
        want = recorded[fact]
        ok = value == want
        reason = "" if ok else f"{fact}: the implementation says {value!r}, llama.cpp says {want!r}"
        yield CaseResult(vocab, FACTS_CASE, fact, "passed" if ok else "failed", b"", [], [], reason)
