"""The check engine: an implementation's answers against a recording, case by case and mode by mode.

Both front ends use it: `tokconf check` (fast, no per-case overhead) and the pytest plugin (one
test item per case and mode). A vocabulary's cases are sent to the implementation in one batch, so
the time goes to the implementation, not to the harness.

What each verdict means, and what PASS means for a run, is the verdict contract
(`tokconf.checking.contract`); this module asks the implementation and applies it case by case.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import TokconfError
from ..core.facts import Fact, VocabFacts
from ..core.outcome import MODES, DeclineContext, InputClass, Mode, Outcome, Refusal, RefusalKind, Request
from ..implementations.base import (
    Broken,
    Decoder,
    Detokenize,
    Implementation,
    LoadRefused,
    Session,
    Unsupported,
    VocabInfo,
)
from ..recording.decoding import DETOKENIZE, PIECE_KINDS, Decoding, PieceKind, Setting, load_for
from ..recording.format import RecordedCase, Recording, load
from ..synth.files import recorded_vocab
from .contract import DECODE, FACTS, Claim, Section, Standing, Verdict, judge, listed
from .xfail import ExpectedFailures

ALL_FACTS = "*"  # the case of the one pytest item that holds every fact


EVERYTHING = Claim()  # no claim: every vocabulary the implementation loads, in every mode checked


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
    claim: Claim = EVERYTHING  # with patterns, what is not claimed is not asked either

    def wants(self, vocab: str, section: Section, case: str) -> bool:
        return (
            self.wants_vocab(vocab)
            and (not self.sections or section in self.sections)
            and (not self.cases or case in self.cases)
            and (self.only is None or (section, case) in self.only)
            and (section not in MODES or self.claim.covers(vocab, section))
        )

    def wants_vocab(self, vocab: str) -> bool:
        return (not self.vocabs or vocab in self.vocabs) and self.claim.covers_vocab(vocab)

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
    standing: Standing = Standing.LOADED  # the vocabulary's, which decides whether it is in scope
    # An unsupported case's input class, verified on its input (`verified`); whether its decline counts
    # against coverage is the command's grant (`contract.Gate.granted`), not the port's.
    declined: InputClass | None = None
    differing: int = 0  # a decoding check's: how many pieces or detokenized cases differ (tokconf.strength counts them)


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
    vocab: Path | None = None,
) -> CheckedFile:
    """Load one recording (unless the caller has it loaded already) and its decoding when wanted,
    find its vocab file (unless the caller has provisioned it), and check it."""
    recording = recording or load(path)
    vocab = vocab or recorded_vocab(recording.provenance["vocab"], recording.build, vocab_dir)
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


CHUNK = 512  # cases asked for at a time when a run may stop early (--maxfail); else all at once, so a
# worker can compute ahead while tokconf judges


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
    refused_by_llama = "load_error" in facts
    info = VocabInfo.of(vocab, name, recording.vocab_sha256, facts)
    try:
        session = impl.open(info)
    except (Unsupported, Broken) as why:
        yield from _not_loaded(recording, wanted, why, selection, decoding is not None)
        return
    if refused_by_llama:  # the implementation loads what llama.cpp refuses: every case fails
        session.close()
        reason = f"llama.cpp refuses to load this vocabulary ({facts['load_error']}), the implementation loaded it"
        for case, mode in wanted:
            yield CaseResult(name, mode, case.id, Verdict.FAILED, case.data, case.outcomes[mode], None, reason,
                             standing=Standing.LLAMA_REFUSES)  # fmt: skip
        return
    stop = stop or Stop()
    xfails = xfails or ExpectedFailures()
    context = DeclineContext(parsed_only_with_parse_special(facts), session.max_input_bytes)
    exposed = session.decoder()
    decoder = _Remembered(exposed) if exposed is not None else None
    try:
        chunk_size = CHUNK if stop.maxfail is not None else max(1, len(wanted))
        for start in range(0, len(wanted), chunk_size):
            if stop.reached:
                return
            chunk = wanted[start : start + chunk_size]
            requests = [(case.data, *MODES[mode]) for case, mode in chunk]
            aborts = frozenset(i for i, (case, mode) in enumerate(chunk) if isinstance(case.outcomes[mode], Refusal))
            answers = session.encode_many(requests, aborts)
            for (case, mode), request, answer in zip(chunk, requests, answers, strict=True):
                actual = verified(answer, request, context)
                result = _judged(name, mode, case.id, case.data, case.outcomes[mode], actual, xfails)
                stop.problems += result.verdict.is_problem
                if result.verdict is Verdict.FAILED and isinstance(actual, list) and decoder is not None:
                    result = _with_port_pieces(result, actual, decoder)
                yield result
        if stop.reached:
            return
        if selection.wants_facts:
            yield from _check_facts(name, facts, session, xfails)
        if decoding:
            yield from _check_decoding(recording, decoding, decoder, selection)
    finally:
        session.close()


def parsed_only_with_parse_special(facts: VocabFacts) -> frozenset[bytes]:
    """The texts of the tokens llama.cpp cuts out of an input only with parse_special: CONTROL and
    UNKNOWN ones (llama_vocab::impl::tokenizer_st_partition)."""
    attributes: dict[int, str] = facts.get("token_attributes", {})
    parsed = {t for t, attr in attributes.items() if {"control", "unknown"} & set(attr.split("|"))}
    return frozenset(text for t, text in facts.get("special_texts", {}).items() if text and t in parsed)


def verified(answer: Outcome, request: Request, context: DeclineContext) -> Outcome:
    """An answer whose decline is checked on its input: a class the input is not of is an error, in
    every front end (a Python `Unsupported`, a worker's, a `cmd:` program's `unsupported`)."""
    if not isinstance(answer, Refusal) or answer.kind is not RefusalKind.UNSUPPORTED or answer.declined is None:
        return answer
    cls = answer.declined.value
    if answer.declined.fits(request, context):  # the class first: a port's words cannot pose as another
        said = f" (the port said: {answer.reason})" if answer.reason and answer.reason != cls else ""
        return Refusal(f"{cls}{said}", RefusalKind.UNSUPPORTED, answer.declined)
    limit = ""
    if answer.declined is InputClass.TOO_LONG:
        limit = f" (declared limit: {context.max_bytes} bytes)" if context.max_bytes else " (no input limit declared)"
    why = f"declined the input as {cls}{limit}, which it is not ({len(request[0])} bytes); it said: {answer.reason}"
    return Refusal(why, RefusalKind.BROKEN)


def _not_loaded(
    recording: Recording,
    wanted: list[tuple[RecordedCase, Mode]],
    why: Exception,
    selection: Selection,
    has_decoding: bool,
) -> Iterator[CaseResult]:
    """Every selected check of a vocabulary the implementation did not open, with one verdict: both
    refusing a vocabulary llama.cpp refuses to load is agreement (passed, but never coverage: see the
    contract); a llama.cpp refusing one the recorded build loaded failed (`LoadRefused`); a declared
    `Unsupported` is unsupported; anything else broke, and is an error. Facts and decoding checks get
    the same verdict, so every front end counts the same items."""
    name, facts = recording.vocab_name, recording.facts
    reason = str(why)
    if "load_error" in facts:
        standing = Standing.LLAMA_REFUSES
        verdict = Verdict.PASSED if isinstance(why, Unsupported) else Verdict.ERROR
        reason = f"llama.cpp refuses to load it too ({facts['load_error']})" if verdict is Verdict.PASSED else reason
    elif isinstance(why, LoadRefused):  # the most important difference two llama.cpps can have
        standing, verdict = Standing.LOAD_REFUSED, Verdict.FAILED
        reason = f"refused to load a vocabulary llama.cpp b{recording.build} loads: {why}"
    elif isinstance(why, Unsupported):
        standing, verdict = Standing.DECLINED, Verdict.UNSUPPORTED
    else:
        standing, verdict = Standing.BROKEN, Verdict.ERROR
    for case, mode in wanted:
        yield CaseResult(name, mode, case.id, verdict, case.data, case.outcomes[mode], None, reason, standing=standing)
    if verdict is Verdict.PASSED:  # no facts or decoding to compare: llama.cpp has none
        return
    if selection.wants_facts:
        for fact in Fact:
            yield CaseResult(name, FACTS, fact.value, verdict, reason=reason, standing=standing)
    if has_decoding:
        for kind in _decoding_checks(name, selection):
            yield CaseResult(name, DECODE, kind, verdict, reason=reason, standing=standing)


def _decoding_checks(name: str, selection: Selection) -> list[PieceKind | Setting]:
    return [k for k in (*PIECE_KINDS, *DETOKENIZE) if selection.wants(name, DECODE, k)]


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

    def detokenize_many(self, requests: list[Detokenize]) -> list[bytes]:
        return self.decoder.detokenize_many(requests)


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
    judged, reason = _listed(vocab, mode, case, *judge(expected, actual), xfails)
    declined = actual.declined if isinstance(actual, Refusal) and judged is Verdict.UNSUPPORTED else None
    return CaseResult(vocab, mode, case, judged, data, expected, actual, reason, declined=declined)


def _listed(vocab: str, section: Section, case: str, verdict: Verdict, reason: str, xfails: ExpectedFailures
            ) -> tuple[Verdict, str]:  # fmt: skip
    """A verdict with the expected-failure file applied (`contract.listed`: failures and passes only)."""
    entry = xfails.lookup(vocab, section, case) if verdict in (Verdict.FAILED, Verdict.PASSED) else None
    if entry is None:
        return verdict, reason
    if verdict is Verdict.FAILED:
        return listed(verdict), f"{entry.describe()} (was: {reason})"
    return listed(verdict), f"listed as an expected failure ({entry.reason}) but it passes now"


def _check_decoding(
    recording: Recording, decoding: Decoding, decoder: Decoder | None, selection: Selection
) -> list[CaseResult]:
    """One result per decoding check: every piece (special on, off), every case detokenized (two ways)."""
    name = recording.vocab_name
    kinds = _decoding_checks(name, selection)
    if decoder is None:
        why = (
            "the implementation exposes no decoding (Python: token_to_piece, decode and n_tokens; "
            "cmd: the token_to_piece and detokenize ops of protocol 2)"
        )
        return [CaseResult(name, DECODE, kind, Verdict.UNSUPPORTED, reason=why) for kind in kinds]
    results = []
    for kind in kinds:
        try:
            if kind == "pieces-special" or kind == "pieces-plain":
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
            shown = "; ".join(
                f"{what}: llama.cpp {_cut(want)}, implementation {_cut(got)}" for what, want, got in wrong[:3]
            )
            reason = f"{len(wrong)} of {total} differ — {shown}"
        verdict = Verdict.FAILED if wrong else Verdict.PASSED
        results.append(CaseResult(name, DECODE, kind, verdict, reason=reason, differing=len(wrong)))
    return results


def _cut(text: bytes, limit: int = 80) -> str:
    """A detokenized text in a reason, cut: a case may be kilobytes long, and the reason names three."""
    return repr(text[:limit]) + (f"… ({len(text)} bytes)" if len(text) > limit else "")


def _compare_pieces(decoding: Decoding, decoder: Decoder, special: bool) -> tuple[list[tuple[str, bytes, bytes]], int]:
    expected = decoding.piece_list(special)
    actual = decoder.pieces(special)
    if len(actual) != len(expected):
        return [("token count", str(len(expected)).encode(), str(len(actual)).encode())], len(expected)
    wrong = [(f"id {i}", want, got) for i, (want, got) in enumerate(zip(expected, actual, strict=True)) if want != got]
    return wrong, len(expected)


def _compare_detokenized(
    recording: Recording, decoding: Decoding, decoder: Decoder, setting: Setting
) -> tuple[list[tuple[str, bytes, bytes]], int]:
    remove, unparse = DETOKENIZE[setting]
    asked: list[tuple[RecordedCase, list[int]]] = [
        (case, ids) for case in recording.cases if isinstance(ids := case.outcomes.get("bos"), list)
    ]
    wanted = []
    for case, _ in asked:
        try:
            wanted.append(decoding.detokenized_text(setting, case.id, case.data))
        except ValueError as error:
            raise TokconfError(
                f"the decoding of {recording.vocab_name}, {setting} {case.id}: {error}",
                "re-record it: tokconf record-decoding",
            ) from None
    texts = decoder.detokenize_many([(ids, remove, unparse) for _, ids in asked])
    wrong = [(case.id, want, got) for (case, _), want, got in zip(asked, wanted, texts, strict=True) if got != want]
    return wrong, len(asked)


def _check_facts(vocab: str, facts: VocabFacts, session: Session, xfails: ExpectedFailures) -> Iterator[CaseResult]:
    """One result per `Fact`: compared when the implementation exposes it, unsupported (counted, never
    passed) when it does not, an error for all when asking for them broke. A fact may be listed in
    the expected-failure file as `vocab/facts/NAME`."""
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
        verdict, reason = _listed(vocab, FACTS, fact.value, Verdict.PASSED if ok else Verdict.FAILED, reason, xfails)
        yield CaseResult(vocab, FACTS, fact.value, verdict, reason=reason)
