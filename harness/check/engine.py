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

import dataclasses
import enum
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.check.xfail import ExpectedFailures
from harness.core.errors import TokconfError
from harness.core.facts import Fact, VocabFacts
from harness.core.outcome import MODES, Mode, Outcome, Refusal, RefusalKind
from harness.implementations.base import Broken, Decoder, Implementation, Session, Unsupported, VocabInfo
from harness.recordings.decoding import DETOKENIZE, PIECE_KINDS, Decoding, load_for
from harness.recordings.format import Recording, load
from harness.synth.files import recorded_vocab


class Verdict(enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    UNSUPPORTED = "unsupported"
    XFAILED = "xfailed"
    XPASSED = "xpassed"

    @property
    def is_problem(self) -> bool:
        """Whether it fails the gate."""
        return self in (Verdict.FAILED, Verdict.ERROR, Verdict.XPASSED)


# What a result is about: a case in one mode, a vocab fact, or a decoding check (its column in tables).
Section = Mode | Literal["facts", "decode"]
FACTS: Section = "facts"
DECODE: Section = "decode"  # cases: pieces-special, pieces-plain and the DETOKENIZE settings
ALL_FACTS = "*"  # the case of the one pytest item that holds every fact
SECTIONS: tuple[Section, ...] = (*MODES, FACTS, DECODE)


@dataclass(frozen=True)
class Selection:
    """Which part of the recordings to check (empty: all).

    `only`: exactly these (section, case) pairs of one recording, the items a pytest run kept after
    `-k`, `--deselect` or `--lf`, so a run of a few items asks the implementation for those alone
    (None: no such limit)."""

    vocabs: frozenset[str] = frozenset()
    sections: frozenset[str] = frozenset()
    cases: frozenset[str] = frozenset()
    only: frozenset[tuple[Section, str]] | None = None

    def wants(self, vocab: str, section: Section, case: str) -> bool:
        return (
            (not self.vocabs or vocab in self.vocabs)
            and (not self.sections or section in self.sections)
            and (not self.cases or case in self.cases)
            and (self.only is None or (section, case) in self.only)
        )

    @property
    def wants_decoding(self) -> bool:
        return (
            not self.cases
            and (not self.sections or DECODE in self.sections)
            and (self.only is None or any(section == DECODE for section, _ in self.only))
        )

    @property
    def wants_facts(self) -> bool:
        """Facts are checked with every mode selection, not when single cases are asked for."""
        return not self.cases and (self.only is None or (FACTS, ALL_FACTS) in self.only)


@dataclass(frozen=True)
class CaseResult:
    """One judged check: a case in a mode, a fact, or a decoding check."""

    vocab: str
    section: Section
    case: str  # the case id, the fact's name, or the decoding check's name
    verdict: Verdict
    data: bytes = b""
    expected: Outcome | None = None
    actual: Outcome | None = None
    reason: str = ""
    # A failed case's actual ids as the implementation itself decodes them (`token_to_piece`), when it
    # can: a port whose vocabulary differs from the GGUF's is then shown its own pieces.
    actual_pieces: tuple[bytes, ...] | None = None


def judge(expected: Outcome, actual: Outcome) -> tuple[Verdict, str]:
    """Compare one answer with the recording."""
    if isinstance(actual, Refusal) and actual.kind is RefusalKind.BROKEN:
        return Verdict.ERROR, actual.reason
    if isinstance(actual, Refusal) and actual.kind is RefusalKind.UNSUPPORTED:
        return Verdict.UNSUPPORTED, actual.reason
    if isinstance(expected, Refusal):
        if isinstance(actual, Refusal):
            return Verdict.PASSED, ""
        return Verdict.FAILED, f"llama.cpp refused ({expected.reason}) but the implementation returned ids"
    if isinstance(actual, Refusal):
        return Verdict.FAILED, f"the implementation refused: {actual.reason}"
    if actual == expected:
        return Verdict.PASSED, ""
    return Verdict.FAILED, "different ids"


@dataclass
class CheckedFile:
    """A recording file, checked: what the reports need beside the results."""

    recording: Recording
    vocab: Path  # its GGUF file, for pieces in reports
    results: list[CaseResult]


def check_file(
    path: Path,
    impl: Implementation,
    selection: Selection,
    xfails: ExpectedFailures,
    vocab_dir: Path | None,
    stop: Stop | None = None,
    recording: Recording | None = None,
) -> CheckedFile:
    """Load one recording (unless the caller has it loaded already) and its decoding when wanted,
    find its vocab file, and check it."""
    recording = recording or load(path)
    vocab = recorded_vocab(recording.provenance["vocab"], recording.build, vocab_dir)
    decoding = load_for(path) if selection.wants_decoding else None
    results = list(check_recording(recording, impl, vocab, selection, xfails, decoding, stop))
    return CheckedFile(recording, vocab, results)


@dataclass
class Stop:
    """`--maxfail N` / `-x`: stop asking after this many problems (None: never), across vocabularies."""

    maxfail: int | None = None
    problems: int = 0

    @property
    def reached(self) -> bool:
        return self.maxfail is not None and self.problems >= self.maxfail


CHUNK = 512  # cases asked for at a time, so a run can stop early


def check_recording(
    recording: Recording,
    impl: Implementation,
    vocab: Path,
    selection: Selection = Selection(),
    xfails: ExpectedFailures | None = None,
    decoding: Decoding | None = None,
    stop: Stop | None = None,
) -> Iterator[CaseResult]:
    """Every selected case and mode of one recording, judged; then the facts the implementation
    exposes; then, with the recording's decoding, its pieces and detokenized cases. With `stop`, no
    more is asked once it is reached (what was not asked is not judged, and not counted)."""
    name = recording.vocab_name
    wanted = [
        (case, mode) for case in recording.cases for mode in MODES if mode in case.outcomes
        if selection.wants(name, mode, case.id)
    ]  # fmt: skip
    facts = recording.facts
    info = VocabInfo.of(vocab, name, recording.vocab_sha256, facts)
    try:
        session = impl.open(info)
    except (Unsupported, Broken) as why:
        verdict = Verdict.UNSUPPORTED if isinstance(why, Unsupported) else Verdict.ERROR
        reason = str(why)
        if verdict is Verdict.UNSUPPORTED and "load_error" in facts:  # both refuse the vocab: agreement
            verdict, reason = Verdict.PASSED, f"llama.cpp refuses to load it too ({facts['load_error']})"
        for case, mode in wanted:
            yield CaseResult(name, mode, case.id, verdict, case.data, case.outcomes[mode], None, reason)
        return
    stop = stop or Stop()
    xfails = xfails or ExpectedFailures()
    exposed = session.decoder()
    decoder = _Remembered(exposed) if exposed is not None else None
    try:
        for start in range(0, len(wanted), CHUNK):
            if stop.reached:
                return
            chunk = wanted[start : start + CHUNK]
            answers = session.encode_many([(case.data, *MODES[mode]) for case, mode in chunk])
            for (case, mode), actual in zip(chunk, answers, strict=True):
                result = _judged(name, mode, case.id, case.data, case.outcomes[mode], actual, xfails)
                stop.problems += result.verdict.is_problem
                if result.verdict is Verdict.FAILED and isinstance(actual, list) and decoder is not None:
                    result = _with_port_pieces(result, actual, decoder)
                yield result
        if stop.reached:
            return
        if selection.wants_facts and "load_error" not in facts:  # a refused vocab has no facts to compare
            yield from _check_facts(name, facts, session)
        if decoding:
            yield from _check_decoding(recording, decoding, decoder, selection)
    finally:
        session.close()


class _Remembered:
    """An implementation's decoder whose piece lists are asked for once: the first failure shows the
    implementation's own pieces, and the decoding check compares the same list (a failure to give
    them is remembered too, and raised to each)."""

    def __init__(self, decoder: Decoder) -> None:
        self.decoder = decoder
        self._pieces: dict[bool, list[bytes] | Exception] = {}

    def pieces(self, special: bool) -> list[bytes]:
        if special not in self._pieces:
            try:
                self._pieces[special] = self.decoder.pieces(special)
            except Exception as error:  # the implementation broke: `_check_decoding` reports it
                self._pieces[special] = error
        found = self._pieces[special]
        if isinstance(found, Exception):
            raise found
        return found

    def detokenize(self, ids: list[int], remove_special: bool, unparse_special: bool) -> bytes:
        return self.decoder.detokenize(ids, remove_special, unparse_special)


def _with_port_pieces(result: CaseResult, actual: list[int], decoder: Decoder) -> CaseResult:
    """The failed result with the implementation's own pieces of its ids (the GGUF's, if it cannot)."""
    try:
        pieces = decoder.pieces(True)
    except Exception:  # its decoding broke: the decoding checks report that
        return result
    if not all(0 <= i < len(pieces) for i in actual):
        return result
    return dataclasses.replace(result, actual_pieces=tuple(pieces[i] for i in actual))


def _judged(
    vocab: str, mode: Mode, case: str, data: bytes, expected: Outcome, actual: Outcome, xfails: ExpectedFailures
) -> CaseResult:
    judged, reason = judge(expected, actual)
    listed = xfails.lookup(vocab, mode, case)
    if listed and judged is not Verdict.PASSED:
        judged, reason = Verdict.XFAILED, listed.describe()
    elif listed:
        judged, reason = Verdict.XPASSED, f"listed as an expected failure ({listed.reason}) but it passes now"
    return CaseResult(vocab, mode, case, judged, data, expected, actual, reason)


def _check_decoding(
    recording: Recording, decoding: Decoding, decoder: Decoder | None, selection: Selection
) -> list[CaseResult]:
    """One result per decoding check: every piece (special on, off), every case detokenized (two ways)."""
    name = recording.vocab_name
    kinds = [k for k in (*PIECE_KINDS, *DETOKENIZE) if selection.wants(name, DECODE, k)]
    if decoder is None:
        why = (
            "the implementation exposes no decoding (Python: token_to_piece, decode and n_tokens; "
            "cmd: the token_to_piece and detokenize ops of protocol 2)"
        )
        return [CaseResult(name, DECODE, kind, Verdict.UNSUPPORTED, reason=why) for kind in kinds]
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
            results.append(CaseResult(name, DECODE, kind, Verdict.ERROR, reason=f"{type(error).__name__}: {error}"))
            continue
        reason = ""
        if wrong:
            shown = "; ".join(f"{what}: llama.cpp {want!r}, implementation {got!r}" for what, want, got in wrong[:3])
            reason = f"{len(wrong)} of {total} differ — {shown}"
        results.append(CaseResult(name, DECODE, kind, Verdict.FAILED if wrong else Verdict.PASSED, reason=reason))
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


def _check_facts(vocab: str, facts: VocabFacts, session: Session) -> Iterator[CaseResult]:
    """One result per `Fact`: compared when the implementation exposes it, unsupported (counted, never
    passed) when it does not, an error for all when asking for them broke."""
    try:
        exposed = session.facts()
    except Broken as broken:
        for fact in Fact:
            yield CaseResult(vocab, FACTS, fact.value, Verdict.ERROR, reason=str(broken))
        return
    for fact in Fact:
        if fact not in exposed:
            why = f"{fact.value} is not exposed (Python: attribute `{fact.attribute}`; cmd: the `facts` op)"
            yield CaseResult(vocab, FACTS, fact.value, Verdict.UNSUPPORTED, reason=why)
            continue
        value, want = exposed[fact], fact.recorded(facts)
        ok = value == want
        reason = "" if ok else f"{fact.value}: the implementation says {value!r}, llama.cpp says {want!r}"
        yield CaseResult(vocab, FACTS, fact.value, Verdict.PASSED if ok else Verdict.FAILED, reason=reason)
