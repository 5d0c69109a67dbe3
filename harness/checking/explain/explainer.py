"""`tokconf check --explain`: a port's failures as a few causes, each a replayable mechanism.

Cases are taken shortest first. A case is first offered to the causes already found: it belongs to
the smallest set of them whose mechanisms, replayed together, turn llama.cpp's answer into the
port's (`Model`), so no case is shrunk twice for one fault, and a case with two faults (a missing
BOS and a character in the wrong class) is under both. A case no set reproduces is shrunk by ddmin
(`tokconf.core.shrink`) to a minimal input on which the port still answers other than the known
causes predict ("explained again with the BOS put back"); the minimal input is classified by trying
each kind's mechanism on it (`_candidates`), and the case is offered again. What no mechanism
reproduces falls back to `character` (all its minimal inputs need one character), and what even
that does not hold is listed as unexplained.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from ...core.facts import VocabFacts
from ...core.outcome import MODES, Mode, Outcome, Refusal, RefusalKind, is_utf8
from ...core.render import visible
from ...core.shrink import ddmin, holds, units
from ...implementations.base import Session
from ..contract import Verdict
from ..engine import CaseResult
from .kinds import (
    NORMAL_FORMS,
    SPLIT_RULES,
    Boundary,
    ByteMapped,
    Character,
    Kind,
    Mechanism,
    MergesIgnored,
    Normalized,
    NulTruncated,
    Reclassed,
    Refusing,
    Renumbered,
    Replaced,
    Resplit,
    SpecialsCut,
    Stage,
    Substituted,
)
from .model import Model

ROUNDS = 3  # shrinks per case at most: each finds one more fault the case holds
SHRINKS = 60  # shrinks per vocabulary at most: what is left then is listed as unexplained
PASSED_CHECKED = 40  # passed cases a candidate mechanism is replayed on
FailsFn = Callable[[list[bytes]], list[bool]]


def same(predicted: Outcome | None, actual: Outcome | None, mechanisms: Sequence[Mechanism] = ()) -> bool:
    """Whether a prediction is the port's answer: equal ids, or both refusals; a `not-refused`
    cause predicts "some ids" where llama.cpp refuses."""
    if predicted is None or actual is None:
        return False
    if isinstance(predicted, Refusal):
        if isinstance(actual, Refusal):
            return actual.kind is RefusalKind.REFUSED
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
        for result in failures:  # the judge knows every recorded answer: replays of them are free
            if result.expected is not None:
                self.model.judge.remember((result.data, *MODES[mode_of(result)]), result.expected)
        for result in sorted(failures, key=lambda r: (len(r.data), r.case, r.section)):
            if not self._place(result):
                unexplained.append(result)
        self._consolidate()
        causes = sorted(self.causes, key=lambda c: (-len(c.cases), len(c.minimal), c.minimal))
        return Explanation([c for c in causes if c.cases], unexplained, self.shrinks)

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
                for cause in found:
                    cause.cases.append(result)
                return True
            held = self._held(result, mode, known)
            if held is not None:
                held.cases.append(result)
                return True
            shrunk = self._shrink(result, mode)
            if shrunk is None:
                return False
            if isinstance(shrunk.mechanism, Character):
                shrunk.cases.append(result)
                return True
        return False

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

    def _extended(self, known: list[Cause], result: CaseResult) -> list[Cause] | None:
        """A known special-token or numbering cause grown by this case's tokens, without shrinking:
        a port with a wrong special-token table fails on each of hundreds of tokens in the same way."""
        mode = mode_of(result)
        for mechanism in self._cheap_candidates(result.data, mode, result.expected, result.actual):
            existing = next((c for c in self.causes if c.mechanism.key() == mechanism.key()), None)
            if existing is None:
                continue
            others = [c for c in known if c is not existing]
            if self._fits([*[c.mechanism for c in others], mechanism], result):
                existing.mechanism.absorb(mechanism)
                return self._reproducing([existing, *others], result)
        return None

    def _held(self, result: CaseResult, mode: Mode, known: list[Cause]) -> Cause | None:
        """A `character` cause one of whose minimal inputs this input holds, on which the port fails
        in this mode too."""
        held = [
            (c, v)
            for c in self.causes
            if isinstance(c.mechanism, Character)
            for v in sorted(c.variants)
            if v and holds(result.data, v)
        ]
        if not held:
            return None
        fails = self._fails(mode, [c.mechanism for c in known])([v for _, v in held])
        return next((c for (c, _), failing in zip(held, fails, strict=True) if failing), None)

    # ---- shrinking and classifying ---------------------------------------------------------

    def _fails(self, mode: Mode, context: Sequence[Mechanism]) -> FailsFn:
        """ddmin's test: the port answers other than llama.cpp with the known causes replayed."""

        def fails(inputs: list[bytes]) -> list[bool]:
            predicted = self.model.predict_many(context, inputs, mode)
            actual = self._port(inputs, mode)
            return [
                not (isinstance(a, Refusal) and a.kind is not RefusalKind.REFUSED) and not same(p, a, context)
                for p, a in zip(predicted, actual, strict=True)
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
        moved: list[CaseResult] = []
        if isinstance(mechanism, Character) and context:
            mechanism, moved = self._reexamined(minimal, mode, got, result) or (mechanism, [])
        if mechanism is None:
            return None
        existing = next((c for c in self.causes if c.mechanism.key() == mechanism.key()), None)
        if existing is not None:
            existing.mechanism.absorb(mechanism)
            existing.variants.add(minimal)
            _join(existing, moved)
            if len(minimal) < len(existing.minimal):  # the shortest example shows it best
                self._show(existing, minimal, mode, got)
            return existing
        cause = Cause(self.vocab, mechanism, minimal, mode, want, got, shrunk=complete, cases=moved, variants={minimal})
        self._show(cause, minimal, mode, got)
        self.causes.append(cause)
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

    def _sound(self, mechanism: Mechanism) -> bool:
        """Whether the mechanism leaves the passed cases it applies to as they are (the first
        `PASSED_CHECKED` of them, shortest first): replayed, it gives llama.cpp's answer there."""
        key = repr(mechanism)
        if key not in self.sound:
            applies = (r for r in self.passing if mechanism.applies(r.data, mode_of(r)))
            sample = [r for _, r in zip(range(PASSED_CHECKED), applies, strict=False)]
            predicted = (self.model.predict([mechanism], r.data, mode_of(r)) for r in sample)
            self.sound[key] = all(same(p, r.expected, [mechanism]) for p, r in zip(predicted, sample, strict=True))
        return self.sound[key]

    def _fits(self, mechanisms: Sequence[Mechanism], result: CaseResult) -> bool:
        """Whether replaying these mechanisms gives the port's answer on a case."""
        return same(self.model.predict(mechanisms, result.data, mode_of(result)), result.actual, mechanisms)

    def _show(self, cause: Cause, minimal: bytes, found_in: Mode, got: Outcome) -> None:
        """The cause's example: the minimal input in the first mode where this cause alone makes the
        port's answer (a whitespace fault found in bos mode is shown in plain mode, not beside a
        missing BOS), with llama.cpp's answer and the port's own pieces."""
        shown, actual = found_in, got
        for mode in MODES:
            (answer,) = (got,) if mode == found_in else self._port([minimal], mode)
            (plain,) = self.model.judge.answers([(minimal, *MODES[mode])])
            alone = self.model.predict([cause.mechanism], minimal, mode)
            if not same(plain, answer) and same(alone, answer, [cause.mechanism]):
                shown, actual = mode, answer
                break
        (expected,) = self.model.judge.answers([(minimal, *MODES[shown])])
        cause.minimal, cause.mode, cause.expected, cause.actual = minimal, shown, expected, actual
        cause.actual_pieces = self._port_pieces(actual)

    def _classify(
        self, minimal: bytes, mode: Mode, context: list[Mechanism], want: Outcome, got: Outcome, whole: CaseResult
    ) -> Mechanism | None:
        """The first kind, most specific first, whose mechanism replayed with the known ones gives
        the port's answer on the minimal input, preferring one that reproduces the whole case too (a
        minimal input may fit two mechanisms: U+3000 read as a space is also what NFKC does to it);
        else the `character` fallback."""
        fitting: Mechanism | None = None
        for mechanism in self._candidates(minimal, mode, want, got):
            trial = [*context, mechanism]
            if not same(self.model.predict(trial, minimal, mode), got, trial) or not self._sound(mechanism):
                continue
            if same(self.model.predict(trial, whole.data, mode), whole.actual, trial):
                return mechanism
            fitting = fitting or mechanism
        if fitting is not None:
            return fitting
        culprits = self._culprits(minimal, mode, context)
        if not culprits:
            return None
        return Character(Kind.CHARACTER, Stage.VERDICT, culprit=culprits[0])

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
        for name, kinds in (("bos", (Kind.BOS_MISSING, Kind.BOS_ADDED)), ("eos", (Kind.EOS_MISSING, Kind.EOS_ADDED))):
            token = ids.get(name, -1)
            if token >= 0:
                text = texts.get(token, b"").decode("utf-8", "replace")
                for kind in kinds:
                    yield Boundary(kind, Stage.OUTPUT, token=token, text=text, add_special={add_special})
        held = {t: s for t, s in texts.items() if s and s in data}
        if held:
            kind = Kind.SPECIAL_NOT_PARSED if parse_special else Kind.SPECIAL_PARSED
            yield SpecialsCut(kind, Stage.TOKENIZER, parse_special=parse_special, tokens=dict(held))
            if not parse_special:  # user-defined tokens are cut out without parse_special too
                yield SpecialsCut(Kind.SPECIAL_NOT_PARSED, Stage.TOKENIZER, parse_special=False, tokens=dict(held))
        remap = self._renumbering(want, got)
        if remap:
            kind = Kind.SPECIAL_WRONG_ID if all(w in texts for w in remap) else Kind.VOCAB_MISMATCH
            yield Renumbered(kind, Stage.OUTPUT, remap=remap, texts={w: self._text(w) for w in remap})

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
                culprits = sorted(set(units(minimal)), key=_unusual, reverse=True)
                yield Refusing(Kind.REFUSED, Stage.VERDICT, chars={culprits[0]} if culprits else set())
            return
        yield from self._cheap_candidates(minimal, mode, want, got)
        if not isinstance(want, list) or not isinstance(got, list):
            return
        if b"\0" in minimal:
            yield NulTruncated(Kind.NUL_TRUNCATED, Stage.INPUT)
        if not is_utf8(minimal):
            yield Replaced(Kind.INVALID_UTF8_REPLACED, Stage.INPUT)
        whitespace = _whitespace()
        chars = sorted({u for u in units(minimal) if _spacelike(u, whitespace)}, key=_unusual, reverse=True)
        for char in chars:
            for target in (b" ", b"\n"):
                if char != target:
                    yield Substituted(Kind.WHITESPACE_CLASS, Stage.INPUT, chars={char: target}, target=target)
            text = char.decode("utf-8", errors="surrogateescape")
            if len(text) == 1 and self.model.mutants.is_bpe:
                to_space = ord(text) not in whitespace
                flips = {ord(text): to_space}
                yield Reclassed(Kind.WHITESPACE_CLASS, Stage.TOKENIZER, flips=flips, to_space=to_space)
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

    def _culprits(self, minimal: bytes, mode: Mode, context: list[Mechanism]) -> list[bytes]:
        """The characters of a minimal input whose replacement by a plain letter makes it pass, most
        unusual first: minimal inputs of one bug differ in their context (` <U+0085>b`, `↵↵<U+0085>`)
        but share these."""
        parts = units(minimal)
        if len(parts) < 2:
            return [minimal] if minimal else []
        plain = [_plain(part) for part in parts]
        replaced = [b"".join([*parts[:i], plain[i], *parts[i + 1 :]]) for i in range(len(parts))]
        still = self._fails(mode, context)(replaced)
        return sorted({p for p, failing in zip(parts, still, strict=True) if not failing}, key=_unusual, reverse=True)


_PLAIN = {1: (b"a", b"b"), 2: ("ä".encode(), "ö".encode()), 3: ("一".encode(), "二".encode())}
_PLAIN[4] = ("𝐀".encode(), "𝐁".encode())


def _plain(unit: bytes) -> bytes:
    """A plain letter of the same UTF-8 length, other than `unit`: replacing a character by it leaves
    the input's length as it was (a port whose fault depends on length is not blamed on a character)."""
    first, second = _PLAIN.get(len(unit), _PLAIN[1])
    return second if unit == first else first


def _unusual(unit: bytes) -> tuple[int, bytes]:
    """How unusual a character is, to pick a culprit: invalid bytes and non-ASCII first, ASCII
    letters and digits last."""
    if len(unit) > 1 or unit[0] > 0x7F:
        return (4, unit)
    char = chr(unit[0])
    return (0 if char.isalnum() else 1 if char in " \n" else 2 if char.isprintable() else 3, unit)


def _spacelike(unit: bytes, whitespace: frozenset[int]) -> bool:
    """Whether some tokenizer may count this character as whitespace: llama.cpp's whitespace, and
    what other libraries' tables add (Python's `str.isspace` takes U+001C..U+001F, JavaScript's `\\s`
    U+FEFF): separators, controls and format characters. A letter never is, however well a
    whitespace mechanism happens to fit its minimal input."""
    text = unit.decode("utf-8", errors="surrogateescape")
    if len(text) != 1 or 0xDC80 <= ord(text) <= 0xDCFF:
        return False
    return ord(text) in whitespace or text.isspace() or unicodedata.category(text) in ("Zs", "Zl", "Zp", "Cc", "Cf")


def _whitespace() -> frozenset[int]:
    """llama.cpp's whitespace code points (unicode.cpp's unicode_set_whitespace)."""
    from reference_impl.unicode import WHITESPACE

    return frozenset(WHITESPACE)


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
