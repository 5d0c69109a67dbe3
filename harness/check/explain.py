"""`tokconf check --explain`: a port's failures as a few causes.

Each failing case is shrunk by delta debugging (Zeller's ddmin, over the input's characters; an
invalid byte is one unit) to a minimal input on which the implementation still answers other than
llama.cpp. Inputs that are not in the recording are judged against the reference tokenizer, which
is token-identical to llama.cpp on every bundled vocabulary; where it cannot read a vocabulary the
live llama.cpp of the recording's build answers instead. Failures with the same minimal input are
one cause.

Shrinking every one of 2,000 failures would ask the implementation hundreds of thousands of times,
so a case is first offered to the causes already found, shortest input first: a case whose input
holds a cause's minimal input, and fails the same way there, is counted under that cause without
being shrunk again. The known patterns (`Pattern`) name a cause where the evidence is exact.
"""

from __future__ import annotations

import enum
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.check.contract import Verdict, judge
from harness.check.engine import CaseResult, CheckedFile
from harness.core.facts import VocabFacts
from harness.core.outcome import MODES, Mode, Outcome, Refusal, RefusalKind, Request, is_utf8
from harness.implementations.base import Implementation, Session, VocabInfo
from harness.llama.build import require_build
from harness.oracle.client import LibllamaOracle

MAX_ASKS = 600  # candidate inputs tried per shrink, at most: a cap on the cost of one huge document
EXAMPLES = 5  # original cases shown per cause

Expected = Callable[[list[Request]], list[Outcome]]  # llama.cpp's answers (through the reference or live)


class Pattern(enum.Enum):
    """A cause whose mechanism the ids show exactly."""

    BOS_MISSING = "BOS missing: the ids are llama.cpp's without its first, the BOS token"
    BOS_EXTRA = "BOS added where llama.cpp adds none"
    EOS_MISSING = "EOS missing: the ids are llama.cpp's without its last, the EOS token"
    EOS_EXTRA = "EOS added where llama.cpp adds none"
    INVALID_UTF8_REFUSED = "invalid UTF-8 refused: llama.cpp tokenizes these bytes"
    REFUSED = "refused where llama.cpp gives ids"
    NOT_REFUSED = "ids where llama.cpp refuses the input"
    SPECIAL_NOT_PARSED = "a special token's text not parsed as the token"
    SPECIAL_PARSED = "a special token's text parsed as the token where llama.cpp keeps it as text"
    NFC = "NFC normalization applied: the ids are llama.cpp's for the NFC form of the input"
    NFD = "NFD normalization applied: the ids are llama.cpp's for the NFD form of the input"
    NFKC = "NFKC normalization applied: the ids are llama.cpp's for the NFKC form of the input"
    NFKD = "NFKD normalization applied: the ids are llama.cpp's for the NFKD form of the input"


@dataclass
class Cause:
    """The failures one mechanism explains: the shortest of their minimal inputs, and the character
    all of them need (the culprit) or the pattern they show."""

    vocab: str
    minimal: bytes
    mode: Mode  # the mode it was shrunk in
    expected: Outcome  # llama.cpp's (or the reference's) answer on the minimal input
    actual: Outcome  # the implementation's
    pattern: Pattern | None
    culprit: bytes | None  # the character whose replacement makes each minimal input pass
    shrunk: bool = True  # False when MAX_ASKS ran out before the input was minimal
    cases: list[CaseResult] = field(default_factory=list)
    variants: set[bytes] = field(default_factory=set)  # every minimal input found for it


def _unusual(unit: bytes) -> tuple[int, bytes]:
    """How unusual a character is, to pick a culprit: invalid bytes and non-ASCII first, ASCII
    letters and digits last."""
    if len(unit) > 1 or unit[0] > 0x7F:
        return (4, unit)
    char = chr(unit[0])
    return (0 if char.isalnum() else 1 if char in " \n" else 2 if char.isprintable() else 3, unit)


def units(data: bytes) -> list[bytes]:
    """The input as characters, an invalid byte being a unit of its own: what ddmin removes."""
    text = data.decode("utf-8", errors="surrogateescape")
    return [c.encode("utf-8", errors="surrogateescape") for c in text]


def ddmin(parts: list[bytes], fails: Callable[[list[bytes]], list[bool]]) -> tuple[bytes, bool]:
    """A 1-minimal sub-sequence of `parts` (joined) that still fails; `fails` judges a batch of
    candidates at once. Returns it and whether it is minimal (False when MAX_ASKS ran out)."""
    if fails([b""])[0]:
        return b"", True
    asked = 1
    granularity = 2
    while len(parts) >= 2:
        size = -(-len(parts) // granularity)
        starts = range(0, len(parts), size)
        subsets = [parts[i : i + size] for i in starts]
        complements = [parts[:i] + parts[i + size :] for i in starts] if granularity > 2 else []
        candidates = subsets + complements
        if asked + len(candidates) > MAX_ASKS:
            return b"".join(parts), False
        verdicts = fails([b"".join(c) for c in candidates])
        asked += len(candidates)
        if any(verdicts[: len(subsets)]):
            parts = subsets[verdicts.index(True)]
            granularity = 2
        elif any(verdicts[len(subsets) :]):
            parts = complements[verdicts[len(subsets) :].index(True)]
            granularity = max(granularity - 1, 2)
        elif granularity >= len(parts):
            break
        else:
            granularity = min(2 * granularity, len(parts))
    return b"".join(parts), True


class Explainer:
    """Shrinks and groups the failures of one vocabulary, with the implementation's session open."""

    def __init__(self, vocab: str, facts: VocabFacts, session: Session, expected: Expected) -> None:
        self.vocab = vocab
        self.facts = facts
        self.session = session
        self.expected = expected
        self.causes: list[Cause] = []

    def _answers(self, requests: list[Request]) -> tuple[list[Outcome], list[Outcome]]:
        return self.expected(requests), self.session.encode_many(requests)

    def _diverges(self, mode: Mode) -> Callable[[list[bytes]], list[bool]]:
        flags = MODES[mode]

        def fails(inputs: list[bytes]) -> list[bool]:
            want, got = self._answers([(data, *flags) for data in inputs])
            return [judge(w, g)[0] is Verdict.FAILED for w, g in zip(want, got, strict=True)]

        return fails

    def explain(self, failures: list[CaseResult]) -> list[Cause]:
        """Every failure under a cause; causes by the number of cases they explain."""
        for result in sorted(failures, key=lambda r: (len(r.data), r.case, r.section)):
            mode: Mode = result.section  # type: ignore[assignment]
            pattern = self._whole_input_pattern(result)
            cause = self._known(result, mode, pattern)
            if cause is None:
                cause = self._shrink(result, mode, pattern)
            cause.cases.append(result)
        return sorted(self.causes, key=lambda c: (-len(c.cases), len(c.minimal), c.minimal))

    def _known(self, result: CaseResult, mode: Mode, pattern: Pattern | None) -> Cause | None:
        """A cause already found that explains this case: the same whole-input pattern, or else a
        minimal input this input holds, on which the implementation fails in this mode too."""
        if pattern is not None:
            return next((c for c in self.causes if c.pattern is pattern), None)
        held = [(c, v) for c in self.causes for v in sorted(c.variants) if v and v in result.data]
        if not held:
            return None
        verdicts = self._diverges(mode)([variant for _, variant in held])
        return next((c for (c, _), fails in zip(held, verdicts, strict=True) if fails), None)

    def _shrink(self, result: CaseResult, mode: Mode, pattern: Pattern | None) -> Cause:
        """Shrink the case; its cause is the one with the same pattern, or the same culprit."""
        minimal, complete = ddmin(units(result.data), self._diverges(mode))
        (want,), (got,) = self._answers([(minimal, *MODES[mode])])
        pattern = pattern or self._minimal_pattern(minimal, mode, want, got)
        culprits = [] if pattern else self._culprits(minimal, mode)
        for cause in self.causes:
            same = cause.culprit in culprits if cause.culprit else cause.minimal == minimal
            if cause.pattern is pattern and (pattern is not None or same):
                cause.variants.add(minimal)
                if len(minimal) < len(cause.minimal):  # the shortest example shows it best
                    cause.minimal, cause.mode, cause.expected, cause.actual = minimal, mode, want, got
                return cause
        culprit = culprits[0] if culprits else None
        cause = Cause(self.vocab, minimal, mode, want, got, pattern, culprit, complete, variants={minimal})
        self.causes.append(cause)
        return cause

    def _culprits(self, minimal: bytes, mode: Mode) -> list[bytes]:
        """The characters of a minimal input whose replacement by a plain letter makes it pass, most
        unusual first: minimal inputs of one bug differ in their context (` <U+0085>b`, `↵↵<U+0085>`)
        but share these."""
        parts = units(minimal)
        if len(parts) < 2:
            return [minimal] if minimal else []
        plain = [b"b" if part == b"a" else b"a" for part in parts]
        replaced = [b"".join([*parts[:i], plain[i], *parts[i + 1 :]]) for i in range(len(parts))]
        still = self._diverges(mode)(replaced)
        return sorted({part for part, fails in zip(parts, still, strict=True) if not fails}, key=_unusual, reverse=True)

    def _whole_input_pattern(self, result: CaseResult) -> Pattern | None:
        """Patterns the original case shows by itself (cases sharing one are one cause, unshrunk)."""
        want, got = result.expected, result.actual
        if isinstance(want, list) and isinstance(got, list):
            return self._special_ids_pattern(want, got)
        if isinstance(got, Refusal) and got.kind is RefusalKind.REFUSED and isinstance(want, list):
            return Pattern.INVALID_UTF8_REFUSED if not is_utf8(result.data) else None
        return None

    def _special_ids_pattern(self, want: list[int], got: list[int]) -> Pattern | None:
        """BOS or EOS missing or added: the ids are llama.cpp's but for that one token."""
        ids = self.facts["special_ids"]
        bos = (ids.get("bos", -1), 0, Pattern.BOS_MISSING, Pattern.BOS_EXTRA)
        eos = (ids.get("eos", -1), -1, Pattern.EOS_MISSING, Pattern.EOS_EXTRA)
        for token, at, missing, extra in (bos, eos):
            if token < 0:
                continue
            if want and want[at] == token and got == (want[1:] if at == 0 else want[:-1]):
                return missing
            if got and got[at] == token and want == (got[1:] if at == 0 else got[:-1]):
                return extra
        return None

    def _minimal_pattern(self, minimal: bytes, mode: Mode, want: Outcome, got: Outcome) -> Pattern | None:
        """Patterns the minimal input shows."""
        if isinstance(got, Refusal) and isinstance(want, list):
            return Pattern.INVALID_UTF8_REFUSED if not is_utf8(minimal) else Pattern.REFUSED
        if isinstance(want, Refusal) and isinstance(got, list):
            return Pattern.NOT_REFUSED
        if isinstance(want, list) and isinstance(got, list) and (pattern := self._special_ids_pattern(want, got)):
            return pattern
        for token, special in self.facts["special_texts"].items():
            if special and special == minimal:
                if want == [token] and got != [token]:
                    return Pattern.SPECIAL_NOT_PARSED
                if got == [token] and want != [token]:
                    return Pattern.SPECIAL_PARSED
        if not is_utf8(minimal):
            return None
        text = minimal.decode("utf-8")
        forms = {p: unicodedata.normalize(p.name, text).encode() for p in NORMALIZATIONS}  # type: ignore[arg-type]
        tried = [(p, form) for p, form in forms.items() if form != minimal]
        answers = self.expected([(form, *MODES[mode]) for _, form in tried]) if tried else []
        return next((p for (p, _), answer in zip(tried, answers, strict=True) if answer == got), None)


NORMALIZATIONS = (Pattern.NFC, Pattern.NFD, Pattern.NFKC, Pattern.NFKD)


def reference_expectation(vocab: Path) -> Expected | None:
    """The reference tokenizer as the judge of new inputs, or None where it cannot read the vocab."""
    from reference_impl import Tokenizer, UnsupportedVocab
    from reference_impl.gguf_reader import GGUFError

    try:
        tokenizer = Tokenizer.from_gguf(vocab)
    except (UnsupportedVocab, GGUFError):
        return None

    def expected(requests: list[Request]) -> list[Outcome]:
        out: list[Outcome] = []
        for data, add_special, parse_special in requests:
            try:
                out.append(tokenizer.encode(data, add_special, parse_special))
            except ValueError as refusal:  # where llama.cpp aborts (InvalidCodepoint, MergeAbort, ...)
                out.append(Refusal(str(refusal)))
        return out

    return expected


def explain_file(checked: CheckedFile, impl: Implementation) -> list[Cause]:
    """The causes of one checked recording's failures, asking the implementation again (a new
    session) and the reference, or the live llama.cpp where the reference cannot read the vocab."""
    failures = [r for r in checked.results if r.verdict is Verdict.FAILED and r.section in MODES]
    if not failures:
        return []
    recording = checked.recording
    info = VocabInfo.of(checked.vocab, recording.vocab_name, recording.vocab_sha256, recording.facts)
    session = impl.open(info)
    try:
        expected = reference_expectation(checked.vocab)
        if expected is not None:
            return Explainer(recording.vocab_name, recording.facts, session, expected).explain(failures)
        with LibllamaOracle(require_build(recording.build), checked.vocab) as oracle:
            explainer = Explainer(recording.vocab_name, recording.facts, session, oracle.tokenize_many)
            return explainer.explain(failures)
    finally:
        session.close()
