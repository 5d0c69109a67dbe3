"""The interleaving check: the vocabularies an implementation loaded, loaded again one after another
into one process of it, each asked again a sample of the cases it passed alone.

Each vocabulary is checked in a fresh process of the implementation (`tokconf.implementations.command`),
so a port that keeps state across vocabularies (one tokenizer cache for the whole process, a word
cache not keyed by vocabulary) gets the same verdicts however the run is scheduled: serial, `--jobs`,
pytest-xdist. That hides the bug from every front end alike, and an application that loads two models
into one process has it. So every front end then asks the same fixed sequence of this one process —
every vocabulary in recording order, then the first again — and counts each answer that differs from
the one it gave alone as a failure, in a row of its own (section `interleave`).

The sample is a function of the recording and the set of cases that passed, so every front end asks
the same cases, each in every mode it passed: `SPREAD` case ids spread evenly over the recording's
order (the corpus comes first in every recording, so vocabularies share inputs), and the first
`FOCUS` holding a special token's text and the `FOCUS` longest, where a port's caches and special
matchers are; with the facts that passed alone. A leak that shows on none of them is not caught:
sampling bounds the check's cost (every vocabulary loaded twice more), at most a few percent of a run.
The sequence stops at the first vocabulary that does not load after another: each such load may take
the whole `--load-timeout`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from ..core.facts import Fact, VocabFacts
from ..core.outcome import MODES, Mode, Outcome, Refusal
from ..implementations.base import Broken, Implementation, Session, Unsupported, VocabInfo
from ..implementations.command import CommandImplementation
from ..implementations.python import PythonImplementation
from ..recordings.format import RecordedCase, Recording, VocabGroup
from .contract import FACTS, INTERLEAVE, Standing, Verdict, judge
from .engine import CaseResult

SPREAD = 32  # case ids per vocabulary spread over the recording, each in every mode it passed
FOCUS = 8  # and this many holding a special token's text, and this many of the longest


@dataclass(frozen=True)
class Replay:
    """One vocabulary's sample: cases that passed when it was alone in its process."""

    vocab_name: str
    group: VocabGroup
    vocab: VocabInfo
    cases: tuple[tuple[RecordedCase, Mode], ...]
    vocab_facts: VocabFacts  # the recording's, to compare the facts with
    facts: tuple[Fact, ...] = ()  # the facts that passed alone


def replayable(result: CaseResult) -> bool:
    """Whether a result may be in a sample: a case or a fact the implementation passed in a vocabulary
    it loaded (not one both it and llama.cpp refused to load)."""
    return result.section in (*MODES, FACTS) and result.verdict is Verdict.PASSED and result.standing is Standing.LOADED


def sample(recording: Recording, vocab: Path, passed: Iterable[tuple[str, str]]) -> Replay | None:
    """The replay of a checked recording from its passed (section, case) pairs (a fact's name for
    `facts`); None when no case passed (a vocabulary declined, broken, or failing everywhere has
    nothing to compare)."""
    kept = set(passed)
    candidates = [case for case in recording.cases if any((mode, case.id) in kept for mode in MODES)]
    if not candidates:
        return None
    step = max(1, len(candidates) // SPREAD)
    chosen = {case.id for case in candidates[::step][:SPREAD]}
    texts = [text for text in recording.facts.get("special_texts", {}).values() if text]
    # The first FOCUS alone: looking at every case (deepseek-llm has 2,400 texts and 6,340 cases) took
    # 3.6 CPU-s of each whole check over the bundled recordings, this 0.7. (One regex of the texts is
    # faster still on them, but slower by 15x on a case of repeated first bytes, e.g. "<<<<".)
    special = islice((case for case in candidates if any(text in case.data for text in texts)), FOCUS)
    chosen |= {case.id for case in special}
    chosen |= {case.id for case in sorted(candidates, key=lambda c: -len(c.data))[:FOCUS]}
    cases = [(case, mode) for case in candidates if case.id in chosen for mode in MODES if (mode, case.id) in kept]
    facts = tuple(fact for fact in Fact if (FACTS, fact.value) in kept)
    info = VocabInfo.of(vocab, recording.vocab_name, recording.vocab_sha256, recording.facts)
    return Replay(recording.vocab_name, recording.group, info, tuple(cases), recording.facts, facts)


def together(impl: Implementation) -> Implementation | None:
    """The implementation with every vocabulary loaded into one process: a `cmd:` program's or a
    worker's (`SharedProcess`), or a port in tokconf's own process (`--in-process`) as it is. None for
    what has no such process of a port's: tokconf's reference, a llama.cpp (one worker per model)."""
    if isinstance(impl, CommandImplementation):
        return impl.shared()
    if isinstance(impl, PythonImplementation) and not impl.contained:
        return impl
    return None


def interleave(impl: Implementation, replays: list[Replay]) -> list[CaseResult]:
    """Every replay in order, then the first again, in one process; one result per case and fact
    asked. The sequence stops at the first vocabulary that does not load after another (its cases are
    errors, the rest not asked)."""
    shared = together(impl) if len(replays) > 1 else None
    if shared is None:
        return []
    results: list[CaseResult] = []
    previous = replays[-1].vocab_name
    try:
        for turn, replay in enumerate([*replays, replays[0]]):
            asked, loaded = _replayed(shared, replay, previous, "again: " * (turn == len(replays)))
            results += asked
            if not loaded:
                break
            previous = replay.vocab_name
    finally:
        shared.close()
    return results


def _replayed(shared: Implementation, replay: Replay, previous: str, again: str) -> tuple[list[CaseResult], bool]:
    """One vocabulary's sample asked again in the shared process, after `previous` was loaded there;
    and whether it loaded."""
    name = replay.vocab_name

    def result(section: str, case: str, data: bytes, verdict: Verdict, expected: Outcome | None = None,
               answer: Outcome | None = None, reason: str = "") -> CaseResult:  # fmt: skip
        return CaseResult(name, INTERLEAVE, f"{again}{section}/{case}", verdict, data, expected, answer, reason)

    try:
        session = shared.open(replay.vocab)
    except (Unsupported, Broken) as why:
        said = f"loaded alone, but not in a process where {previous} was loaded before: {why}"
        return [result(mode, case.id, case.data, Verdict.ERROR, reason=said) for case, mode in replay.cases], False
    changed = (f"passed with {name} alone in its process, but answered otherwise after {previous} was loaded "
               "into the same process: the implementation keeps state across vocabularies")  # fmt: skip
    out = []
    try:
        aborts = frozenset(i for i, (case, mode) in enumerate(replay.cases) if isinstance(case.outcomes[mode], Refusal))
        answers = session.encode_many([(case.data, *MODES[mode]) for case, mode in replay.cases], aborts)
        for (case, mode), answer in zip(replay.cases, answers, strict=True):
            passed = judge(case.outcomes[mode], answer)[0] is Verdict.PASSED
            verdict = Verdict.PASSED if passed else Verdict.FAILED
            out.append(
                result(mode, case.id, case.data, verdict, case.outcomes[mode], answer, "" if passed else changed)
            )
        out += _facts_again(session, replay, result, changed)
    finally:
        session.close()
    return out, True


def _facts_again(session: Session, replay: Replay, result: Callable[..., CaseResult], changed: str) -> list[CaseResult]:
    """The facts that passed alone, asked again (a port's per-process table of special ids, say)."""
    if not replay.facts:
        return []
    try:
        exposed = session.facts()
    except Broken as broken:
        return [result(FACTS, fact.value, b"", Verdict.ERROR, reason=str(broken)) for fact in replay.facts]
    out = []
    for fact in replay.facts:
        same = exposed.get(fact) == fact.recorded(replay.vocab_facts)
        out.append(
            result(FACTS, fact.value, b"", Verdict.PASSED if same else Verdict.FAILED, reason=changed * (not same))
        )
    return out
