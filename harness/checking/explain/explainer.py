"""`tokconf check --explain`: a port's failures as a few causes, each a replayable mechanism.

Cases are taken shortest first. A case is first offered to the causes already found: it belongs to
the smallest set of them whose mechanisms, replayed together, turn llama.cpp's answer into the
port's (`Model`), so no case is shrunk twice for one fault, and a case with two faults (a missing
BOS and a character in the wrong class) is under both. A case no set reproduces is shrunk by ddmin
(`tokconf.core.shrink`) to a minimal input on which the port still answers other than the known
causes predict ("explained again with the BOS put back"); the minimal input is classified by trying
each kind's mechanism on it (`_candidates`: most are switches of the reference tokenizer, llama.cpp's
pipeline in Python, flipped one at a time, then two at a time where none alone reproduces it), and the
case is offered again. What no switch reproduces falls back to `character` (all its minimal inputs need
one character), the last resort: once every switch is known its cases are offered to them again and
its characters to the switches over characters they widen (`_retire_characters`). What even that does
not hold is listed as unexplained.
"""

from __future__ import annotations

import copy
import itertools
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from ...core.facts import VocabFacts
from ...core.outcome import MODES, Mode, Outcome, Refusal, RefusalKind, is_utf8
from ...core.render import visible
from ...core.shrink import ddmin, holds, units
from ...implementations.base import Session
from ..contract import Verdict
from ..engine import CaseResult
from .classes import SAMPLE, class_of
from .kinds import (
    NORMAL_FORMS,
    SPLIT_RULES,
    Boundary,
    ByteMapped,
    Character,
    ContextRule,
    Kind,
    Latin1Bytes,
    LetterClass,
    LetterRule,
    MappedBeforeSplit,
    Mechanism,
    MergeOrder,
    MergesIgnored,
    Normalized,
    NulTruncated,
    NumberClass,
    RawBytes,
    RawTail,
    Reclassed,
    Refusing,
    Renumbered,
    Replaced,
    Resplit,
    SpacePrefix,
    SpecialIsolated,
    SpecialsCut,
    SpecialStartOnly,
    SpecialStrip,
    Stage,
    Substituted,
    SymbolCut,
    TokenizerModel,
    Widening,
    WordPieceCleaning,
)
from .model import Model
from .probes import plain, probes, unusual

ROUNDS = 3  # shrinks per case at most: each finds one more fault the case holds
SHRINKS = 60  # shrinks per vocabulary at most: what is left then is listed as unexplained
PASSED_CHECKED = 400  # passed cases holding the minimal input's characters a candidate is replayed on, at most
SPARED_NAMED = 4  # members of a class a `character` cause may leave out and still name the class
HELD_CHECKED = 8  # variants of `character` causes a case holds that the port is asked about, at most
PAIRED = 8  # candidates that change a minimal input's answer tried two at a time, at most
MASKING = frozenset({Kind.NUL_TRUNCATED, Kind.TOO_LONG_REFUSED, Kind.REFUSED, Kind.INVALID_UTF8_REFUSED})
LOOKUP_BOUNDS = (8, 12, 15, 16, 24, 31, 32, 48, 63, 64, 127, 128, 255, 256)  # key buffer sizes ports use
FailsFn = Callable[[list[bytes]], list[bool]]
# A port refusing: it raised Refused, or says the llama.cpp it wraps aborted and it caught that.
REFUSING = frozenset({RefusalKind.REFUSED, RefusalKind.ABORTED})


def same(predicted: Outcome | None, actual: Outcome | None, mechanisms: Sequence[Mechanism] = ()) -> bool:
    """Whether a prediction is the port's answer: equal ids, or both refusals; a `not-refused`
    cause predicts "some ids" where llama.cpp refuses."""
    if predicted is None or actual is None:
        return False
    if isinstance(predicted, Refusal):
        if isinstance(actual, Refusal):
            return actual.kind in REFUSING
        return any(m.kind is Kind.NOT_REFUSED for m in mechanisms)
    return predicted == actual


@dataclass
class Cause:
    """The failures one mechanism explains: the shortest minimal input that shows it, both answers
    on it (the port's with its own pieces where it decodes), and every case under it."""

    vocab: str
    mechanism: Mechanism
    minimal: bytes
    mode: Mode  # the mode the minimal input was found in
    expected: Outcome  # llama.cpp's answer on the minimal input
    actual: Outcome  # the port's
    actual_pieces: tuple[bytes, ...] | None = None  # the port's own pieces of `actual`
    shrunk: bool = True  # False when the shrinking budget ran out before the input was minimal
    cases: list[CaseResult] = field(default_factory=list)
    variants: set[bytes] = field(default_factory=set)  # every minimal input found for it

    @property
    def kind(self) -> Kind:
        return self.mechanism.kind

    @property
    def label(self) -> str:
        return self.mechanism.label()


@dataclass
class Explanation:
    """One vocabulary's causes, most cases first, and the failed cases none of them explains."""

    causes: list[Cause]
    unexplained: list[CaseResult]
    shrinks: int = 0  # how many times ddmin ran: what the benchmark reports
    error: str = ""  # why the vocabulary could not be explained (its failures are all unexplained)


class Explainer:
    """Shrinks and groups the failures of one vocabulary, with the implementation's session open."""

    def __init__(
        self,
        vocab: str,
        facts: VocabFacts,
        session: Session,
        model: Model,
        specials: dict[int, bytes],
        passing: list[CaseResult],
    ) -> None:
        self.vocab = vocab
        self.facts = facts
        self.specials = specials  # every token a port may take for special: `explain.special_texts`
        # passed cases a mechanism must leave as they are: a mechanism that fits a minimal input but
        # would change what the port answers right (refusing every input with a space) is not the port's
        self.passing = sorted(passing, key=lambda r: (len(r.data), r.case))
        self.sound: dict[str, bool] = {}  # a candidate mechanism's repr: whether the passed cases agree
        self.session = session
        self.model = model
        self.causes: list[Cause] = []
        self.shrinks = 0
        self._pieces: list[bytes] | bool | None = False  # the port's own pieces: False until asked
        self._alone: dict[int, bool] = {}  # a special token: whether the port parses its text alone in plain mode

    # ---- the port --------------------------------------------------------------------------

    def _port(self, inputs: Sequence[bytes], mode: Mode) -> list[Outcome]:
        return self.session.encode_many([(data, *MODES[mode]) for data in inputs])

    def _port_pieces(self, ids: Outcome) -> tuple[bytes, ...] | None:
        if self._pieces is False:
            decoder = self.session.decoder()
            try:
                self._pieces = decoder.pieces(True) if decoder is not None else None
            except Exception:  # a port's broken decoding is its decoding check's error, not explain's
                self._pieces = None
        pieces = self._pieces
        if not isinstance(pieces, list) or not isinstance(ids, list) or not all(0 <= i < len(pieces) for i in ids):
            return None
        return tuple(pieces[i] for i in ids)

    # ---- placing a case --------------------------------------------------------------------

    def explain(self, failures: list[CaseResult]) -> Explanation:
        """Every failure under the causes whose replay reproduces it; causes by cases explained."""
        unexplained: list[CaseResult] = []
        for result in [*failures, *self.passing]:  # the judge knows every recorded answer: replays are free
            if result.expected is not None:
                self.model.judge.remember((result.data, *MODES[mode_of(result)]), result.expected)
        for result in sorted(failures, key=lambda r: (len(r.data), r.case, r.section)):
            if not self._place(result):
                unexplained.append(result)
        for cause in list(self.causes):
            self._letter_rule(cause)
        self._retire_characters()
        # causes folded first: a case offered again to a cause about to be folded would be split
        # between the two, or left unexplained where only the larger holds it with another cause
        self._consolidate()
        unexplained = self._placed_again(unexplained)
        self._unmask()
        causes = sorted(self.causes, key=lambda c: (-len(c.cases), len(c.minimal), c.minimal))
        return Explanation([c for c in causes if c.cases], unexplained, self.shrinks)

    def _placed_again(self, unexplained: list[CaseResult]) -> list[CaseResult]:
        """The cases left unexplained offered once more to the causes as they ended (a case placed
        before the cause it needs was found, once the shrinking budget was spent, is theirs now);
        those still left."""
        left = []
        for result in unexplained:
            found = self._reproducing(self._replayable(result.data, mode_of(result)), result)
            for cause in found or []:
                _join(cause, [result])
            if not found:
                left.append(result)
        return left

    def _letter_rule(self, cause: Cause) -> None:
        """A port reading code points of several categories otherwise than llama.cpp is likely to follow
        a rule, not a table: every non-ASCII code point but whitespace a letter (memvanta's `u_letter`),
        or none a letter (a scanner's `[A-Za-z]`). Tried as soon as a letter-class cause spans two
        categories (the cases after are then placed by replay, not shrunk each), and taken where it
        reproduces the cause's cases and holds on the code points not met yet (`_rule_holds`). Its
        other characters (a digit no case was shrunk to) then need no cause of their own."""
        narrow = cause.mechanism
        if not isinstance(narrow, LetterClass) or narrow.rule is not LetterRule.TABLE:
            return
        if len({unicodedata.category(chr(p)) for p in narrow.points}) < 2:
            return
        rule = LetterRule.BEYOND_ASCII if narrow.letter else LetterRule.ASCII_ONLY
        wide = replace(narrow, points=set(narrow.points), rule=rule)
        known = [c.mechanism for c in self.causes if c is not cause and not isinstance(c.mechanism, Character)]
        if not self._rule_holds(wide, narrow, cause.mode, known):
            return
        cause.mechanism = wide
        others = [c for c in self.causes if c is not cause]
        if not all(self._reproducing([cause, *others], r) for r in cause.cases):
            cause.mechanism = narrow

    def _retire_characters(self) -> None:
        """`character` is the last resort: once every switch cause is known, a case under a
        `character` cause that the named causes reproduce is theirs (it was placed before the
        switch that holds it was found or widened), culprits a named cause's characters cover
        leave the `character` cause, and a `character` cause left with no case is dropped."""
        self._absorb_characters()
        named = [c for c in self.causes if not isinstance(c.mechanism, Character)]
        covered: set[bytes] = set()
        for cause in named:
            if isinstance(cause.mechanism, Widening):
                covered |= {chr(p).encode() for p in cause.mechanism.points}
            elif isinstance(cause.mechanism, Reclassed):
                covered |= {chr(p).encode() for p in cause.mechanism.flips}
            elif isinstance(cause.mechanism, Substituted):
                covered |= set(cause.mechanism.chars)
        for cause in [c for c in self.causes if isinstance(c.mechanism, Character)]:
            kept: list[CaseResult] = []
            for result in cause.cases:
                known = [c for c in named if c.mechanism.applies(result.data, mode_of(result))]
                found = self._reproducing(known, result) if known else None
                if found:
                    for other in found:
                        _join(other, [result])
                else:
                    kept.append(result)
            cause.cases = kept
            character = cause.mechanism
            assert isinstance(character, Character)
            if character.culprits - covered != character.culprits and character.culprits - covered:
                character.culprits -= covered
                character.spared = [c for c in character.spared if c not in covered]
            if not cause.cases:
                self.causes.remove(cause)

    def _absorb_characters(self) -> None:
        """A named switch over characters (a whitespace table, a class of numbers) widened by the
        culprits of `character` causes (and the characters of a rule broken after whitespace), where
        the widened switch, with the other named causes, reproduces every case of those causes and
        leaves the passed cases as they are: one fault, found before the switch that holds it was
        complete (RE2's ASCII `\\s` met as U+2005 first, U+205F and U+000B later). All such causes
        at once first (their cases often hold two of their characters), then one at a time."""
        absorbable = [c for c in self.causes if isinstance(c.mechanism, (Character, ContextRule))]
        if len(absorbable) > 1 and self._absorbed(absorbable):
            return
        for cause in absorbable:
            self._absorbed([cause])

    def _absorbed(self, group: list[Cause]) -> bool:
        """Whether one named switch over characters, widened by the group's characters, took the
        group's cases (the group's causes then dropped)."""
        points: set[int] = set()
        for cause in group:
            mechanism = cause.mechanism
            if isinstance(mechanism, Character):
                culprits = mechanism.culprits
            else:
                assert isinstance(mechanism, ContextRule)
                culprits = {chr(p).encode() for p in mechanism.points}
            points |= {ord(t) for c in culprits if len(t := c.decode("utf-8", "replace")) == 1}
        held = {id(c) for c in group}
        targets = [c for c in self.causes if id(c) not in held and isinstance(c.mechanism, (Reclassed, Widening))]
        for named in targets:
            wider = copy.deepcopy(named.mechanism)
            if isinstance(wider, Reclassed):  # only points whose class the flip changes
                space = next(iter(wider.flips.values()))
                wider.flips.update({p: space for p in points if (p in _whitespace()) != space})
            else:
                assert isinstance(wider, Widening)
                wider.points |= points
            known = [c.mechanism for c in self.causes if c is not named and id(c) not in held]
            known = [m for m in known if not isinstance(m, Character)]
            if not self._sound(wider, b"".join(chr(p).encode() for p in sorted(points)), known):
                continue
            narrower, named.mechanism = named.mechanism, wider
            kept = list(self.causes)
            self.causes = [c for c in self.causes if id(c) not in held]  # the group's cases held without it
            cases = [r for cause in group for r in cause.cases]
            found = [self._reproducing(self._replayable(r.data, mode_of(r)), r) for r in cases]
            if not all(found):
                named.mechanism, self.causes = narrower, kept
                continue
            for result, holding in zip(cases, found, strict=True):
                for other in holding or []:
                    _join(other, [result])
            for cause in group:
                cause.cases = []
            return True
        return False

    def _consolidate(self) -> None:
        """Fold a cause into another that explains all its cases as well, the smaller into the
        larger first: a minimal input may fit two mechanisms (U+00A0 read as a space is also what
        NFKC does; U+0374 is changed alike by NFC and NFD), and the first found is not always the
        port's."""
        for small in sorted(self.causes, key=lambda c: len(c.cases)):
            under: dict[int, list[Cause]] = {}
            for cause in self.causes:
                for result in cause.cases:
                    under.setdefault(id(result), []).append(cause)
            for large in sorted(self.causes, key=lambda c: -len(c.cases)):
                if large is small or isinstance(large.mechanism, Character):
                    continue
                if all(
                    self._fits([c.mechanism for c in self._instead(under[id(r)], small, large)], r) for r in small.cases
                ):
                    _join(large, small.cases)
                    small.cases = []
                    self.causes.remove(small)
                    break

    @staticmethod
    def _instead(causes: list[Cause], old: Cause, new: Cause) -> list[Cause]:
        return [c for c in causes if c is not old and c is not new] + [new]

    def _place(self, result: CaseResult) -> bool:
        mode = mode_of(result)
        for _ in range(ROUNDS):
            known = self._replayable(result.data, mode)
            found = self._reproducing(known, result) or self._extended(known, result)
            if found:
                for cause in [*found, *self._masked(found, known, result)]:  # distinct causes: once each
                    cause.cases.append(result)
                return True
            held = self._held(result, mode, known)
            if held is None:
                shrunk = self._shrink(result, mode)
                if shrunk is None:
                    return False
                held = shrunk if isinstance(shrunk.mechanism, Character) else None
            if held is not None:  # with the known causes that change this case too: it may need both
                for cause in [held, *self._changing(known, result)]:  # a character cause is never known
                    cause.cases.append(result)
                return True
        return False

    def _changing(self, known: list[Cause], result: CaseResult) -> list[Cause]:
        """The known causes whose mechanism, replayed alone, changes llama.cpp's answer on a case: what
        a case under a `character` cause needs besides it (a missing BOS and a character's fault)."""
        mode = mode_of(result)
        return [c for c in known if not same(self.model.predict([c.mechanism], result.data, mode), result.expected)]

    def _replayable(self, data: bytes, mode: Mode) -> list[Cause]:
        """The causes whose mechanism could change this input's answer, most cases first."""
        return [
            c
            for c in sorted(self.causes, key=lambda c: -len(c.cases))
            if not isinstance(c.mechanism, Character) and c.mechanism.applies(data, mode)
        ]

    def _reproducing(self, known: list[Cause], result: CaseResult) -> list[Cause] | None:
        """The smallest set of known causes whose replay gives the port's answer: each alone, then
        all together reduced one at a time."""
        if isinstance(result.actual, Refusal):  # every cause that refuses this input, not only the first
            refusing = [c for c in known if isinstance(c.mechanism, Refusing) and c.mechanism.refuses(result.data)]
            if refusing:
                return refusing
        for cause in known:
            if self._fits([cause.mechanism], result):
                return [cause]
        if len(known) < 2 or not self._fits([c.mechanism for c in known], result):
            return None
        needed = list(known)
        for cause in known:
            fewer = [c for c in needed if c is not cause]
            if self._fits([c.mechanism for c in fewer], result):
                needed = fewer
        return needed

    def _unmask(self) -> None:
        """Once every cause is known, each case under a masking cause is put under the causes it
        hides as well (a short case is placed before the cause it hides is found: `\\x00` alone
        comes before any text GPT-2's byte mapping changes)."""
        for cause in [c for c in self.causes if c.kind in MASKING]:
            for result in cause.cases:
                under = [c for c in self.causes if any(r is result for r in c.cases)]
                known = self._replayable(result.data, mode_of(result))
                for hidden in self._masked(under, known, result):
                    hidden.cases.append(result)

    def _masked(self, found: list[Cause], known: list[Cause], result: CaseResult) -> list[Cause]:
        """The known causes a masking cause hides on this case: a port that cuts the input at NUL or
        refuses it answers as if its other faults were not there, but fixing the mask alone would
        not make the case pass where another known cause changes llama.cpp's answer on it (GPT-2's
        byte mapping on `\\x00` after the cut is fixed)."""
        if not any(c.kind in MASKING for c in found):
            return []
        others = [c for c in known if all(c is not f for f in found) and c.kind not in MASKING]
        masks = [f.mechanism for f in found]
        return [c for c in self._changing(others, result) if self._fits([*masks, c.mechanism], result)]

    def _extended(self, known: list[Cause], result: CaseResult) -> list[Cause] | None:
        """A known special-token or numbering cause grown by this case's tokens, without shrinking:
        a port with a wrong special-token table fails on each of hundreds of tokens in the same way."""
        mode = mode_of(result)
        # read off llama.cpp's answer and off it with the known causes replayed: an EOS added after a
        # renumbered special token (llama3-tokenizer-js) hides the renumbering from the bare answers
        predicted = self.model.predict([c.mechanism for c in known], result.data, mode)
        wants = [result.expected] + ([predicted] if predicted not in (None, result.expected) else [])
        for mechanism in itertools.chain.from_iterable(
            self._cheap_candidates(result.data, mode, want, result.actual) for want in wants
        ):
            existing = next((c for c in self.causes if c.mechanism.key() == mechanism.key()), None)
            if existing is None:
                continue
            others = [c for c in known if c is not existing]
            if self._fits([*[c.mechanism for c in others], mechanism], result):
                existing.mechanism.absorb(mechanism)
                return self._reproducing([existing, *others], result)
        return None

    def _held(self, result: CaseResult, mode: Mode, known: list[Cause]) -> Cause | None:
        """A `character` cause one of whose minimal inputs (with any of its culprits in the culprit's
        place) this input holds, on which the port fails in this mode too."""
        held = [
            (c, v)
            for c in self.causes
            if isinstance(c.mechanism, Character)
            for v in c.mechanism.variants()
            if v and holds(result.data, v)
        ][:HELD_CHECKED]
        if not held:
            return None
        fails = self._fails(mode, [c.mechanism for c in known])([v for _, v in held])
        return next((c for (c, _), failing in zip(held, fails, strict=True) if failing), None)

    # ---- shrinking and classifying ---------------------------------------------------------

    def _fails(self, mode: Mode, context: Sequence[Mechanism]) -> FailsFn:
        """ddmin's test: the port answers other than llama.cpp with the known causes replayed, and
        other than llama.cpp itself (an input only a wrong known cause mispredicts, `ㄱ` while an NFKD
        cause stands where the port's fault is NFC, is no example of any fault)."""

        def fails(inputs: list[bytes]) -> list[bool]:
            predicted = self.model.predict_many(context, inputs, mode)
            plain = self.model.judge.answers([(data, *MODES[mode]) for data in inputs])
            actual = self._port(inputs, mode)
            return [
                _answered(a) and not same(p, a, context) and not same(o, a)
                for p, o, a in zip(predicted, plain, actual, strict=True)
            ]

        return fails

    def _shrink(self, result: CaseResult, mode: Mode) -> Cause | None:
        """A new cause (or a known one grown) from this case's minimal input; None where the case
        does not fail with the known causes replayed, its minimal input names nothing, or the
        vocabulary's shrinking budget is spent."""
        if self.shrinks >= SHRINKS:
            return None
        # every known mechanism, not only those that change the whole case: a candidate shorter input
        # may need one (the empty input a port refuses, while its case is refused for invalid UTF-8)
        context = [c.mechanism for c in self.causes if not isinstance(c.mechanism, Character)]
        fails = self._fails(mode, context)
        if not fails([result.data])[0]:
            return None
        self.shrinks += 1
        minimal, complete = ddmin(units(result.data), fails)
        (want,) = self.model.predict_many(context, [minimal], mode)
        (got,) = self._port([minimal], mode)
        if want is None:
            return None
        mechanism = self._classify(minimal, mode, context, want, got, result)
        if isinstance(mechanism, Widening):
            self._widen(mechanism, minimal, mode, context)
        moved: list[CaseResult] = []
        if isinstance(mechanism, Character) and context:
            mechanism, moved = self._reexamined(minimal, mode, got, result) or (mechanism, [])
        if mechanism is None:
            return None
        existing = next((c for c in self.causes if _folds(c.mechanism, mechanism)), None)
        if existing is not None:
            existing.mechanism.absorb(mechanism)
            _join(existing, moved)
            (plain,) = self.model.judge.answers([(minimal, *MODES[mode])])
            if not same(plain, got):  # an example of the fault itself, not of a known cause mispredicting
                existing.variants.add(minimal)
                if len(minimal) < len(existing.minimal):  # the shortest example shows it best
                    self._show(existing, minimal, mode, got)
            self._letter_rule(existing)
            return existing
        cause = Cause(self.vocab, mechanism, minimal, mode, want, got, shrunk=complete, cases=moved, variants={minimal})
        self._show(cause, minimal, mode, got)
        self.causes.append(cause)
        self._letter_rule(cause)
        return cause

    def _reexamined(
        self, minimal: bytes, mode: Mode, got: Outcome, result: CaseResult
    ) -> tuple[Mechanism, list[CaseResult]] | None:
        """A mechanism that fits the minimal input without the known causes, where none fits with
        them: a known cause was the wrong one of two that fit its own minimal input (a port that
        appends EOS `<|endoftext|>` to the empty input looks like one that prepends BOS, the same
        token). A known cause whose every case it reproduces is dropped, its cases moved to it."""
        (want,) = self.model.judge.answers([(minimal, *MODES[mode])])
        mechanism = self._classify(minimal, mode, [], want, got, result)
        if mechanism is None or isinstance(mechanism, Character):
            return None
        moved: dict[int, CaseResult] = {}
        for cause in [c for c in self.causes if not isinstance(c.mechanism, Character)]:
            if all(self._fits([mechanism], r) for r in cause.cases):
                self.causes.remove(cause)
                moved.update((id(r), r) for r in cause.cases)
        return mechanism, list(moved.values())

    def _sound(self, mechanism: Mechanism, minimal: bytes, context: Sequence[Mechanism] = ()) -> bool:
        """Whether the mechanism leaves as they are the passed cases it applies to that hold the
        minimal input's unusual characters (every one of them, up to `PASSED_CHECKED`, shortest
        first; all it applies to where the minimal input has none): replayed, it gives llama.cpp's
        answer there, wherever the known tokenizer switches alone do."""
        odd = [u for u in set(units(minimal)) if unusual(u)[0] > 0]
        # judged with the switches already known: a switch that only exists under another
        # (WordPiece's cleaning under WordPiece run on a Unigram vocabulary), a whitespace table under
        # the port's own regex (RE2's ASCII `\s` under Llama 3's regex on gpt-2)
        under = [m for m in context if m.stage is not Stage.VERDICT and not isinstance(m, Character)]
        key = repr((mechanism, under, sorted(odd)))
        if key not in self.sound:
            sample = [
                r
                for r in self.passing
                if mechanism.applies(r.data, mode_of(r)) and (not odd or any(holds(r.data, u) for u in odd))
            ][:PASSED_CHECKED]
            self.sound[key] = self._passed_alike(mechanism, under, sample)
        return self.sound[key]

    def _passed_alike(self, mechanism: Mechanism, under: list[Mechanism], sample: list[CaseResult]) -> bool:
        """Whether the mechanism, replayed with the known switches, gives llama.cpp's answer on these
        passed cases, wherever the known switches alone do."""
        for mode in MODES:
            of_mode = [r for r in sample if r.section == mode]
            predicted = self.model.predict_many([*under, mechanism], [r.data for r in of_mode], mode)
            known = self.model.predict_many(under, [r.data for r in of_mode], mode) if under else None
            for i, (p, r) in enumerate(zip(predicted, of_mode, strict=True)):
                # a passed case the known switches alone mispredict passes by two faults cancelling
                # (a tie-break and a split that happen to agree): no evidence either way
                if not same(p, r.expected, [mechanism]) and (known is None or same(known[i], r.expected, under)):
                    return False
        return True

    def _rule_holds(self, rule: LetterClass, table: LetterClass, mode: Mode, context: list[Mechanism]) -> bool:
        """Whether a letter rule holds beyond the code points found so far (`table`): on the passed
        cases holding the most code points it reads otherwise (up to `PASSED_CHECKED`), and on
        probes asking the port about `SAMPLE` of those code points spread over them, each between two
        ASCII letters (`a一a` is one word to a letter, three pieces to no letter). The shortest passed
        cases with non-ASCII text are mostly one character, which a rule reads alike; and where the
        port fails on every text mixing scripts, no passed case tells ASCII letters only from CJK
        ideographs as the only non-ASCII letters: the port is asked."""
        under = [m for m in context if m.stage is not Stage.VERDICT]
        key = repr((rule.rule, rule.letter, under, mode))
        if key not in self.sound:
            moved = set(rule.table()) - table.points
            held = {id(r): sum(ord(c) in moved for c in set(r.data.decode("utf-8", "replace"))) for r in self.passing}
            sample = sorted((r for r in self.passing if held[id(r)]), key=lambda r: -held[id(r)])[:PASSED_CHECKED]
            spread = sorted(moved)[:: max(1, len(moved) // SAMPLE)]
            asked = [b"a" + chr(p).encode() + b"a" for p in spread]
            trial = [*under, rule]
            predicted = self.model.predict_many(trial, asked, mode)
            answers = self._port(asked, mode)
            probed = all(same(p, a, trial) for p, a in zip(predicted, answers, strict=True) if _answered(a))
            self.sound[key] = probed and self._passed_alike(rule, under, sample)
        return self.sound[key]

    def _contradicted(self, context: list[Mechanism], candidates: list[Mechanism], minimal: bytes, mode: Mode) -> bool:
        """Whether a probe (`probes`) contradicts candidate mechanisms (with the known ones): on a
        probe whose context alone they predict, they predict other than the port answers; or on the
        context alone (the filler), which the known causes predict, they predict a change the port
        does not make. Where mechanisms fit a minimal input by accident (a whitespace class flipped
        that happens to give a missing contraction's ids), the port answers as its real fault does.
        A filler the known causes do not predict meets another fault: no evidence either way.

        Where the candidates' answer on the minimal input holds the vocabulary's unknown token, that
        agreement is no evidence (any mechanism that makes a word unknown to the vocabulary gives
        `[UNK]`: GPT-2's byte mapping on a WordPiece vocabulary does, for a port that fails to strip
        accents): a probe must then confirm them, answered as they predict where their answer differs
        from llama.cpp's and holds more than unknown and boundary tokens (`x é y` is `x [UNK] y` to a
        port keeping accents, one `[UNK]` to one mapping bytes)."""
        trial = [*context, *candidates]
        found = probes(minimal)
        fillers = [p.filler for p in found]
        predicted = self.model.predict_many(trial, [p.data for p in found] + fillers, mode)
        known = self.model.predict_many(context, [p.data for p in found] + fillers, mode)
        actual = self._port([p.data for p in found] + fillers, mode)
        half = len(found)
        unknown = self.model.mutants.unknown
        head, tail = self.model.edges(True)
        bare = {unknown, *head, *tail}
        confirmed = False
        for i in range(half):
            filler = actual[half + i]
            if not _answered(filler):
                continue
            if not same(predicted[half + i], filler, trial):
                if same(known[half + i], filler, context):
                    return True  # a change where the port makes none
                continue
            if _answered(actual[i]) and not same(predicted[i], actual[i], trial):
                return True
            answer = predicted[i]
            if isinstance(answer, list) and answer != known[i] and any(t not in bare for t in answer):
                confirmed = True
        (on_minimal,) = self.model.predict_many(trial, [minimal], mode)
        return unknown >= 0 and isinstance(on_minimal, list) and unknown in on_minimal and not confirmed

    def _fits(self, mechanisms: Sequence[Mechanism], result: CaseResult) -> bool:
        """Whether replaying these mechanisms gives the port's answer on a case."""
        return same(self.model.predict(mechanisms, result.data, mode_of(result)), result.actual, mechanisms)

    def _show(self, cause: Cause, minimal: bytes, found_in: Mode, got: Outcome) -> None:
        """The cause's example: the minimal input in the first mode where this cause alone makes the
        port's answer (a whitespace fault found in bos mode is shown in plain mode, not beside a
        missing BOS), else in the mode it was found in, with llama.cpp's answer and the port's own
        pieces. The mode printed is the mode both answers are of."""
        shown, actual = found_in, got
        for mode in MODES:
            (answer,) = (got,) if mode == found_in else self._port([minimal], mode)
            (plain_answer,) = self.model.judge.answers([(minimal, *MODES[mode])])
            alone = self.model.predict([cause.mechanism], minimal, mode)
            if not same(plain_answer, answer) and same(alone, answer, [cause.mechanism]):
                shown, actual = mode, answer
                break
        (expected,) = self.model.judge.answers([(minimal, *MODES[shown])])
        cause.minimal, cause.mode, cause.expected, cause.actual = minimal, shown, expected, actual
        cause.actual_pieces = self._port_pieces(actual)

    def _classify(
        self, minimal: bytes, mode: Mode, context: list[Mechanism], want: Outcome, got: Outcome, whole: CaseResult
    ) -> Mechanism | None:
        """The first kind, most specific first, whose mechanism replayed with the known ones gives
        the port's answer on the minimal input, leaves the passed cases with its characters as they
        are and is contradicted by no probe, preferring one that reproduces the whole case too (a
        minimal input may fit two mechanisms: U+3000 read as a space is also what NFKC does to it);
        else two boundary tokens at once (WordPiece's [CLS] and [SEP] both missing: the first is
        named, the second found with it replayed); else the `character` fallback, generalized."""
        fitting: Mechanism | None = None
        for mechanism in self._candidates(minimal, mode, want, got):
            if self._holds_up(context, [mechanism], minimal, mode, got):
                if same(self.model.predict([*context, mechanism], whole.data, mode), whole.actual, [mechanism]):
                    if isinstance(mechanism, Replaced):  # the other policy too: then the answers cannot tell
                        other = Replaced(Kind.INVALID_UTF8_REPLACED, Stage.INPUT, per_byte=not mechanism.per_byte)
                        if self._holds_up(context, [other], minimal, mode, got):
                            mechanism.per_byte = None
                    if isinstance(mechanism, Resplit) and mechanism.rule.pre_type:  # another model's regex alike
                        mechanism.alike = tuple(
                            rule
                            for rule in SPLIT_RULES
                            if rule.pre_type and rule is not mechanism.rule
                            and rule.regexes(self.model.mutants.reference.encoder.regexes) is not None
                            and self._holds_up(context, [replace(mechanism, rule=rule, alike=())], minimal, mode, got)
                            and same(self.model.predict([*context, replace(mechanism, rule=rule)], whole.data, mode),
                                     whole.actual)
                        )  # fmt: skip
                    return mechanism
                fitting = fitting or mechanism
        if fitting is not None:
            return fitting
        pair = self._two_switches(minimal, mode, context, want, got, whole)
        if pair is not None:
            return pair
        bounds = [m for m in self._cheap_candidates(minimal, mode, want, got) if isinstance(m, Boundary)]
        for first, second in itertools.combinations(bounds, 2):
            if first.at_start != second.at_start and self._holds_up(context, [first, second], minimal, mode, got):
                return first
        culprits = self._culprits(minimal, mode, context)
        if not culprits:
            return None
        return self._generalized(minimal, mode, context, culprits[0])

    def _two_switches(
        self, minimal: bytes, mode: Mode, context: list[Mechanism], want: Outcome, got: Outcome, whole: CaseResult
    ) -> Mechanism | None:
        """Where no switch alone reproduces the minimal input, the smallest set of two: each of the
        candidates that changes llama.cpp's answer on it (at most `PAIRED`) with any other candidate
        (Go's per-byte U+FFFD and ollama's whole-word lookup give `���` one token: the lookup alone
        changes nothing there). The first of the pair is named; the second is found with it replayed,
        as its own cause."""
        moving: list[Mechanism] = []
        others: list[Mechanism] = []
        for mechanism in self._candidates(minimal, mode, want, got):
            # a switch of the whole pipeline (the byte mapping's place) changes nearly every answer, and a
            # class per code point is one more table each: paired, they would crowd out the switches
            if isinstance(mechanism, (Boundary, Character, MappedBeforeSplit, LetterClass)):
                continue
            if mechanism.stage is Stage.VERDICT:
                continue
            changes = not same(self.model.predict([*context, mechanism], minimal, mode), want, [mechanism])
            (moving if changes and len(moving) < PAIRED else others).append(mechanism)
        for first in moving:
            for second in [m for m in moving if m is not first] + others:
                if _folds(first, second) or type(first) is type(second):
                    continue
                trial = [*context, first, second]
                if not same(self.model.predict(trial, minimal, mode), got, trial):
                    continue
                if self._holds_up(context, [first, second], minimal, mode, got):
                    return first
        return None

    def _holds_up(
        self, context: list[Mechanism], candidates: list[Mechanism], minimal: bytes, mode: Mode, got: Outcome
    ) -> bool:
        """Whether candidate mechanisms, with the known ones, give the port's answer on the minimal
        input, leave the passed cases as they are, and survive the probes."""
        trial = [*context, *candidates]
        if not same(self.model.predict(trial, minimal, mode), got, trial):
            return False
        # each candidate judged with the others of its set: two switches at once (a heap's merge order
        # under a whole-word lookup) are sound together where neither is alone
        sound = all(
            self._sound(self._merged(m), minimal, [*context, *(o for o in candidates if o is not m)])
            for m in candidates
        )
        return sound and not self._contradicted(context, candidates, minimal, mode)

    def _merged(self, mechanism: Mechanism) -> Mechanism:
        """A candidate as the known cause of its key would become with it (the known letter numbers
        and this one): judged alone on passed cases, one letter number flipped where the port flips
        them all would be contradicted by `ⅠⅡ`, which both read alike."""
        known = next((c.mechanism for c in self.causes if _folds(c.mechanism, mechanism)), None)
        if known is None or isinstance(known, Character):
            return mechanism
        merged = copy.deepcopy(known)
        merged.absorb(mechanism)
        return merged

    def _widen(self, mechanism: Widening, minimal: bytes, mode: Mode, context: list[Mechanism]) -> None:
        """Widen a mechanism over one code point to the members of its class (`classes.class_of`)
        that, put in its place in the minimal input, fail too and are predicted by the widened
        mechanism: one contraction fault after `\\n` is one after every whitespace but U+0020. A table
        of letters or numbers is tried over all of a category up to `classes.WHOLE_TABLE` members (one
        script left out is all of its letters, which a sample meets in one or two)."""
        (point,) = mechanism.points
        culprit = chr(point).encode()
        family = class_of(culprit, whole=isinstance(mechanism, (LetterClass, NumberClass)))
        if family is None:
            return
        parts = units(minimal)
        if isinstance(mechanism, LetterClass):
            parts = self._judged_alone(parts, culprit, mode, context)
        others = [m for m in family.members if m != culprit and len(m.decode("utf-8", "surrogateescape")) == 1]
        tried = [b"".join(m if p == culprit else p for p in parts) for m in others]
        failing = [i for i, fails in enumerate(self._fails(mode, context)(tried)) if fails]
        if not failing:
            return
        wide = copy.deepcopy(mechanism)
        wide.points |= {ord(others[i].decode()) for i in failing}
        trial = [*context, wide]
        predicted = self.model.predict_many(trial, [tried[i] for i in failing], mode)
        actual = self._port([tried[i] for i in failing], mode)
        for i, want, got in zip(failing, predicted, actual, strict=True):
            if same(want, got, trial):
                mechanism.points.add(ord(others[i].decode()))

    def _judged_alone(self, parts: list[bytes], culprit: bytes, mode: Mode, context: list[Mechanism]) -> list[bytes]:
        """The minimal input's units with its other non-ASCII characters made ASCII letters, where it
        still fails so: each member of the culprit's class is then judged alone in its place (`٣٤`
        with `0` for `٣` fails by `٤`, a digit the port reads as a letter too, not by `0`)."""
        mine = [p if p == culprit or p.isascii() else b"a" for p in parts]
        if mine == parts or not self._fails(mode, context)([b"".join(mine)])[0]:
            return parts
        return mine

    def _generalized(self, minimal: bytes, mode: Mode, context: list[Mechanism], culprit: bytes) -> Character:
        """A `character` cause for a culprit, with every member of its class (`classes.class_of`)
        that fails in the culprit's place in the minimal input (the port asked, llama.cpp judging
        with the known causes replayed). The class is named when nearly all of it fails (all but
        a few, which the label lists); else the failing members are listed."""
        mechanism = Character(Kind.CHARACTER, Stage.VERDICT, culprit=culprit, culprits={culprit})
        mechanism.templates.add((minimal, culprit))
        if minimal != culprit and not self._fails(mode, context)([culprit])[0]:
            mechanism.alone = False  # the label names the input, not a character the port gets right alone
            return mechanism
        family = class_of(culprit)
        if family is None:
            return mechanism
        parts = units(minimal)
        others = [m for m in family.members if m != culprit]
        tried = [b"".join(m if p == culprit else p for p in parts) for m in others]
        failing = {m for m, fails in zip(others, self._fails(mode, context)(tried), strict=True) if fails}
        mechanism.culprits |= failing
        spared = [m for m in others if m not in failing]
        if len(spared) <= SPARED_NAMED and len(failing) >= len(spared):
            mechanism.family, mechanism.spared = family.name, spared
        return mechanism

    def _cheap_candidates(
        self, data: bytes, mode: Mode, want: Outcome | None, got: Outcome | None
    ) -> Iterator[Mechanism]:
        """Mechanisms read off the answers themselves: BOS/EOS, refusals, special tokens, numbering."""
        add_special, parse_special = MODES[mode]
        if isinstance(got, Refusal) and isinstance(want, list):
            if not is_utf8(data):
                yield Refusing(Kind.INVALID_UTF8_REFUSED, Stage.VERDICT)
            return
        if isinstance(want, Refusal) and isinstance(got, list):
            yield Refusing(Kind.NOT_REFUSED, Stage.VERDICT)
            return
        if not isinstance(want, list) or not isinstance(got, list):
            return
        ids, texts = self.facts["special_ids"], self.specials
        for name, kinds in self._boundaries():
            token = ids.get(name, -1)
            if token >= 0:
                for kind in kinds:
                    yield Boundary(kind, Stage.OUTPUT, token=token, text=self._text(token), add_special={add_special})
        held = {t: s for t, s in sorted(texts.items()) if s and s in data}
        if held:
            kind = Kind.SPECIAL_NOT_PARSED if parse_special else Kind.SPECIAL_PARSED
            yield SpecialsCut(kind, Stage.TOKENIZER, parse_special=parse_special, tokens=dict(held))
            if not parse_special:  # user-defined tokens are cut out without parse_special too
                yield SpecialsCut(Kind.SPECIAL_NOT_PARSED, Stage.TOKENIZER, parse_special=False, tokens=dict(held))
                yield SpecialIsolated(Kind.SPECIAL_ISOLATED, Stage.INPUT, tokens=dict(held))
            cut = {t: s for t, s in sorted(texts.items()) if s}  # every special text the port may know
            plain = self._parses_alone(*next(iter(held.items())))
            for doubled in (False, True):
                yield SpecialStartOnly(Kind.SPECIAL_START_ONLY, Stage.INPUT, tokens=cut, plain=plain, doubled=doubled)
        remap = self._renumbering(want, got)
        if remap:
            kind = Kind.SPECIAL_WRONG_ID if all(w in texts for w in remap) else Kind.VOCAB_MISMATCH
            yield Renumbered(kind, Stage.OUTPUT, remap=remap, texts={w: self._text(w) for w in remap})

    def _parses_alone(self, token: int, text: bytes) -> bool:
        """Whether the port parses a special token's text, alone, with parse_special off: a binding
        matching `startswith` does in every mode, gpt-tokenizer's sticky regex only with special
        parsing on. Asked once per token."""
        if token not in self._alone:
            (answer,) = self._port([text], "plain")
            self._alone[token] = isinstance(answer, list) and token in answer
        return self._alone[token]

    def _boundaries(self) -> list[tuple[str, tuple[Kind, ...]]]:
        """The tokens llama.cpp puts around a text and the kinds of their faults: BOS and EOS, or for
        WordPiece [CLS] and [SEP] (llama_tokenize_impl's WPM case adds both with add_special, whatever
        add_bos and add_sep say)."""
        if self.facts["vocab_type"] == "wpm":
            return [("bos", (Kind.CLS_MISSING,)), ("sep", (Kind.SEP_MISSING,))]
        return [("bos", (Kind.BOS_MISSING, Kind.BOS_ADDED)), ("eos", (Kind.EOS_MISSING, Kind.EOS_ADDED))]

    def _renumbering(self, want: list[int], got: list[int]) -> dict[int, int] | None:
        """llama.cpp's ids to the port's, where the answers differ only in numbering and there is
        evidence it is numbering (mapping a minimal input's ids onto the port's always "works"):
        special tokens as other special tokens or as ids beyond the vocabulary (transformers' BOS
        32257 for deepseek-coder's 32013), or the port's own pieces of its ids equal to llama.cpp's
        pieces of its ids."""
        if len(want) != len(got):
            return None
        pairs = {(w, g) for w, g in zip(want, got, strict=True) if w != g}
        remap = dict(pairs)
        if not remap or len(remap) != len(pairs):
            return None
        texts, size = self.specials, self.facts["n_tokens"]
        if all(w in texts and (g in texts or g >= size) for w, g in remap.items()):  # a special token the
            return remap  # port numbers as another one, or as an id the vocabulary does not have
        reference = self.model.mutants.reference
        if reference is None or not all(0 <= w < reference.n_tokens for w in want):
            return None
        ours = self._port_pieces(got)
        theirs = [reference.token_to_piece(w, True) for w in want]
        return remap if ours is not None and list(ours) == theirs else None

    def _text(self, token: int) -> str:
        texts = self.specials
        if token in texts:
            return texts[token].decode("utf-8", "replace")
        reference = self.model.mutants.reference
        if reference is not None and 0 <= token < reference.n_tokens:
            return visible(bytes(reference.token_to_piece(token, True)), 40)
        return "?"

    def _candidates(self, minimal: bytes, mode: Mode, want: Outcome, got: Outcome) -> Iterator[Mechanism]:
        """Every kind's mechanism that could explain this minimal input, cheapest and surest first."""
        if isinstance(got, Refusal) and isinstance(want, list):
            if not is_utf8(minimal):
                yield Refusing(Kind.INVALID_UTF8_REFUSED, Stage.VERDICT)
            else:
                culprits = sorted(set(units(minimal)), key=unusual, reverse=True)
                yield Refusing(Kind.REFUSED, Stage.VERDICT, chars={culprits[0]} if culprits else set())
            longest = self._longest_taken(minimal, mode)
            if longest is not None:
                yield Refusing(Kind.TOO_LONG_REFUSED, Stage.VERDICT, over=longest)
            return
        yield from self._cheap_candidates(minimal, mode, want, got)
        if not isinstance(want, list) or not isinstance(got, list):
            return
        if b"\0" in minimal:
            yield NulTruncated(Kind.NUL_TRUNCATED, Stage.INPUT)
        if not is_utf8(minimal):
            yield RawBytes(Kind.INVALID_UTF8_BYTES, Stage.INPUT)
            yield RawTail(Kind.INVALID_UTF8_BYTES, Stage.INPUT)
            yield Latin1Bytes(Kind.INVALID_UTF8_BYTES, Stage.INPUT)
            yield Replaced(Kind.INVALID_UTF8_REPLACED, Stage.INPUT, per_byte=True)
            yield Replaced(Kind.INVALID_UTF8_REPLACED, Stage.INPUT)
            reference = self.model.mutants.reference
            if reference is not None and reference.kind == "spm":
                yield SymbolCut(Kind.INVALID_UTF8_CUT, Stage.TOKENIZER)
        whitespace = _whitespace()
        chars = sorted({u for u in units(minimal) if _spacelike(u, whitespace)}, key=unusual, reverse=True)
        for char in chars:
            text = char.decode("utf-8", errors="surrogateescape")
            bpe_char = len(text) == 1 and self.model.mutants.is_bpe
            # A rule broken right after llama.cpp's whitespace is tried before the class flip: where the
            # two predict the same ids on every probe (U+000C beside a contraction in GPT-2's byte-level
            # vocabulary merges with nothing either way) the port's class is the one llama.cpp has, and a
            # port whose class differs contradicts the rule on the probes that double the character.
            if bpe_char and ord(text) in whitespace and char != b" ":
                for contraction, prefix in ((True, False), (False, True), (True, True)):
                    broken = ContextRule(Kind.WHITESPACE_CONTEXT, Stage.TOKENIZER, {ord(text)})
                    broken.contraction, broken.prefix = contraction, prefix
                    yield broken
            for target in (b" ", b"\n"):
                if char != target:
                    yield Substituted(Kind.WHITESPACE_CLASS, Stage.INPUT, chars={char: target}, target=target)
            if bpe_char:
                yield Reclassed(Kind.WHITESPACE_CLASS, Stage.TOKENIZER, flips={ord(text): ord(text) not in whitespace})
        yield from self._switches(mode)
        points = sorted({ord(u.decode()) for u in units(minimal) if len(u) > 1 and is_utf8(u)})  # non-ASCII
        if self.model.mutants.is_bpe:
            for point in points:
                if _is_number(point):
                    yield NumberClass(Kind.NUMBER_CLASS, Stage.TOKENIZER, {point})
        for kind in NORMAL_FORMS:
            yield Normalized(kind, Stage.INPUT)
        yield ByteMapped(Kind.BYTE_MAPPING, Stage.INPUT)
        if self.model.mutants.is_bpe:
            regexes = self.model.mutants.reference.encoder.regexes
            pre = self.facts["pre"] or "default"
            for rule in SPLIT_RULES:
                if rule.regexes(regexes) is not None:
                    yield Resplit(Kind.PRETOKENIZER_SPLIT, Stage.TOKENIZER, rule=rule, pre=pre)
            ignore = not self.model.mutants.reference.encoder.ignore_merges
            yield MergesIgnored(Kind.IGNORE_MERGES, Stage.TOKENIZER, ignore=ignore)
            if not ignore:  # the lookup bounded by a buffer's size: the longest bound that holds up
                for over in sorted((b for b in LOOKUP_BOUNDS if b < len(minimal)), reverse=True):
                    yield MergesIgnored(Kind.IGNORE_MERGES, Stage.TOKENIZER, ignore=False, over=over)
            # last: one candidate per code point of the minimal input, each a table of its own to replay;
            # whitespace read otherwise is the whitespace class's (RE2's `\s` leaves U+00A0 out)
            for point in (p for p in points if p not in whitespace):
                yield LetterClass(Kind.LETTER_CLASS, Stage.TOKENIZER, {point}, letter=not _is_letter(point))

    def _switches(self, mode: Mode) -> Iterator[Mechanism]:
        """The reference tokenizer's switches for this vocabulary's model, each flipped alone:
        SentencePiece's space prefix, BPE's merge order, WordPiece's cleaning steps (also where a
        known cause already runs WordPiece on another model's vocabulary), and WordPiece in place
        of a Unigram model."""
        reference = self.model.mutants.reference
        if reference is None:
            return
        from tokconf_reference.tokenizer import ATTR_LSTRIP, ATTR_RSTRIP

        if any(attr & (ATTR_LSTRIP | ATTR_RSTRIP) for attr in reference.attrs):
            yield SpecialStrip(Kind.SPECIAL_STRIP, Stage.TOKENIZER)
        if reference.kind in ("spm", "ugm"):
            yield SpacePrefix(Kind.SPACE_PREFIX, Stage.TOKENIZER, add=not reference.add_space_prefix)
        if self.model.mutants.is_bpe:
            for tie_break in ("heap", "right"):
                yield MergeOrder(Kind.MERGE_ORDER, Stage.TOKENIZER, tie_break=tie_break)
            if reference.encoder.byte_encode:
                yield MappedBeforeSplit(Kind.BYTE_MAPPED_SPLIT, Stage.TOKENIZER)
        wordpiece = reference.kind == "wpm" or any(c.kind is Kind.TOKENIZER_MODEL for c in self.causes)
        if wordpiece:
            for step in ("strip_accents", "drop_controls", "ascii_symbols", "whole_punctuation", "hf_cjk_bound"):
                yield WordPieceCleaning(Kind.WORDPIECE_CLEANING, Stage.TOKENIZER, off={step})
        if reference.kind == "ugm":
            yield TokenizerModel(Kind.TOKENIZER_MODEL, Stage.TOKENIZER, model="wpm", vocab_model="ugm")

    def _longest_taken(self, minimal: bytes, mode: Mode) -> int | None:
        """The longest input the port takes, where its refusing the minimal input may be its length
        alone: the longest run of `a` under the minimal input's length it does not refuse, found by
        bisection (about log2 of the length in asks), since a minimal input shrunk within a budget
        may stay far over the limit (a 6,000-byte file refused past 2,048 bytes). A port that
        refuses even the empty run has no length limit to name."""
        if not minimal:
            return None
        low, high = 0, len(minimal)  # `a` * low taken (checked first), `a` * high assumed refused
        (first,) = self._port([b""], mode)
        if isinstance(first, Refusal):
            return None
        while high - low > 1:
            middle = (low + high) // 2
            (answer,) = self._port([b"a" * middle], mode)
            low, high = (low, middle) if isinstance(answer, Refusal) else (middle, high)
        return low if low > 0 else None

    def _culprits(self, minimal: bytes, mode: Mode, context: list[Mechanism]) -> list[bytes]:
        """The characters of a minimal input whose replacement by a plain letter makes it pass, most
        unusual first: minimal inputs of one bug differ in their context (` <U+0085>b`, `↵↵<U+0085>`)
        but share these."""
        parts = units(minimal)
        if len(parts) < 2:
            return [minimal] if minimal else []
        replaced = [b"".join([*parts[:i], plain(parts[i]), *parts[i + 1 :]]) for i in range(len(parts))]
        still = self._fails(mode, context)(replaced)
        return sorted({p for p, failing in zip(parts, still, strict=True) if not failing}, key=unusual, reverse=True)


def _spacelike(unit: bytes, whitespace: frozenset[int]) -> bool:
    """Whether some tokenizer may count this character as whitespace: llama.cpp's whitespace, and
    what other libraries' tables add (Python's `str.isspace` takes U+001C..U+001F, JavaScript's `\\s`
    U+FEFF): separators, controls and format characters. A letter never is, however well a
    whitespace mechanism happens to fit its minimal input."""
    text = unit.decode("utf-8", errors="surrogateescape")
    if len(text) != 1 or 0xDC80 <= ord(text) <= 0xDCFF:
        return False
    return ord(text) in whitespace or text.isspace() or unicodedata.category(text) in ("Zs", "Zl", "Zp", "Cc", "Cf")


def _is_number(point: int) -> bool:
    """Whether llama.cpp counts a code point as a number (`\\p{N}`: unicode_cpt_flags' is_number)."""
    from tokconf_reference.unicode import NUMBER, flags

    return bool(flags(point) & NUMBER)


def _is_letter(point: int) -> bool:
    """Whether llama.cpp counts a code point as a letter (`\\p{L}`: unicode_cpt_flags' is_letter)."""
    from tokconf_reference.unicode import LETTER, flags

    return bool(flags(point) & LETTER)


def _whitespace() -> frozenset[int]:
    """llama.cpp's whitespace code points (unicode.cpp's unicode_set_whitespace)."""
    from tokconf_reference.unicode import WHITESPACE

    return frozenset(WHITESPACE)


def _answered(outcome: Outcome) -> bool:
    """Ids or a refusal: not a port's error or decline, which says nothing of a mechanism."""
    return not isinstance(outcome, Refusal) or outcome.kind in REFUSING


def _folds(known: Mechanism, new: Mechanism) -> bool:
    """Whether a new mechanism is a known cause's: the same key, or for `character` causes a culprit
    in common (one fault met through two minimal inputs, `\\r'd` and `\\n't`)."""
    if isinstance(known, Character) and isinstance(new, Character):
        return bool(known.culprits & new.culprits)
    if isinstance(known, Resplit) and isinstance(new, Resplit):  # one rule both fit: one regex fault
        return bool(set(known.rules()) & set(new.rules()))
    return known.key() == new.key()


def _join(cause: Cause, results: list[CaseResult]) -> None:
    """Add cases to a cause, each once (by identity: equal results of two cases are two cases)."""
    held = {id(r) for r in cause.cases}
    cause.cases += [r for r in results if id(r) not in held]


def mode_of(result: CaseResult) -> Mode:
    """The mode of a case `--explain` works on (never facts or decoding: `explained_failures`)."""
    assert result.section in MODES
    return result.section


def explained_failures(results: list[CaseResult]) -> list[CaseResult]:
    """The results `--explain` works on: failed cases of the tokenizing modes."""
    return [r for r in results if r.verdict is Verdict.FAILED and r.section in MODES]
