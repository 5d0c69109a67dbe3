"""The interleaving check: every vocabulary an implementation loaded, loaded again into one process
of it, each asked again what it passed alone: inputs every vocabulary shares, and a sample of its own.

Each vocabulary is checked in a fresh process of the implementation (`tokconf.implementations.command`),
so a port that keeps state across vocabularies gets the same verdicts however the run is scheduled
(serial, `--jobs`, pytest-xdist). That hides the bug from every front end alike, and an application
that loads two models into one process has it. Two shapes of it, and what catches each:

- **A module-global "current vocabulary"** that each factory call replaces, read by `encode`: never
  wrong while one tokenizer is alive at a time. Caught only with every vocabulary alive at once: each
  is loaded (every factory call made) before any is asked, then they are asked in turns of `TURN`
  requests, alternately in recording order and in reverse, so every vocabulary is asked after
  another was loaded, and between the others' questions.
- **A process-wide cache keyed by the text but not by the vocabulary**: caught only when the same
  text is asked of two vocabularies in one process, and then only where their answers differ. So
  `SHARED` inputs are asked of every vocabulary (the same bytes, each in every mode it passed in
  every vocabulary), those whose recorded answers tell the vocabularies apart first; asked in the
  same turn of every vocabulary, turn after turn in one order then the other, each is asked of A
  then B for some inputs and of B then A for others.

Which inputs are shared is found without holding every recording at once (`--jobs` sends each
vocabulary's sample between processes): each recording offers the `POOL` inputs it passed whose
blake2b digest is lowest (`Replay.offered`). A digest is a function of the bytes alone, so a text
every recording holds and that ranks low in each is offered by each. The bundled recordings share
the corpus (the synthetic ones every other case up to 512 bytes), llama.cpp's own test inputs
(`llama.cpp/*`, 15 of the 19 shipped) and the first 500 fuzz strings (one seed): pools of 256 hold
34 to 256 texts in common between any two of the 128 (deepseek-llm's 6,340 cases share the fewest),
and 34 common to all of them.
Nothing depends on a random seed, and every front end asks the same.

The own sample is a function of the recording and the set of cases that passed: `SPREAD` case ids
spread evenly over the recording's order, the first `FOCUS` holding a special token's text and the
`FOCUS` longest, where a port's caches and special matchers are; with the facts that passed alone.
Each answer is compared with the vocabulary's recording, and only where that vocabulary passed alone:
so it is the answer it gave alone, and one that changed is the sharing's doing (a failure, or the
error it broke with).

A program whose handshake does not say `handles` (docs/line-protocol.md) cannot hold two vocabularies:
it is given them one after another in one process, each `load` replacing the last, in recording order
and then the first again, each asked its questions (the shared ones first) after the one before. That
catches the cache, not the module-global (docs/threat-model.md). A leak that shows on none of the
questions is not caught: they bound the check's cost to loading every vocabulary once more and about
200 answers each (with the reference through its worker over the bundled recordings, 14-20% of the
run, most of it loading: benchmarks/interleave.py).
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import count, islice
from pathlib import Path

from ..core.facts import Fact, VocabFacts
from ..core.outcome import MODES, Mode, Outcome, Refusal
from ..implementations.base import Broken, Implementation, Session, Unsupported, VocabInfo
from ..implementations.command import CommandImplementation
from ..implementations.python import PythonImplementation
from ..recording.format import RecordedCase, Recording, VocabGroup
from .contract import FACTS, INTERLEAVE, Standing, Verdict, judge
from .engine import CaseResult

SPREAD = 32  # case ids per vocabulary spread over the recording, each in every mode it passed
FOCUS = 8  # and this many holding a special token's text, and this many of the longest
POOL = 256  # passed inputs each recording offers to share, those of lowest digest
SHARED = 16  # inputs asked of every vocabulary, each in every mode all of them passed it in
TURN = 8  # requests a vocabulary is asked before the next one is, when all are alive at once

Question = tuple[RecordedCase, Mode]


@dataclass(frozen=True)
class Replay:
    """One vocabulary's sample: cases that passed when it was alone in its process."""

    vocab_name: str
    group: VocabGroup
    vocab: VocabInfo
    cases: tuple[Question, ...]
    vocab_facts: VocabFacts  # the recording's, to compare the facts with
    facts: tuple[Fact, ...] = ()  # the facts that passed alone
    offered: tuple[tuple[RecordedCase, tuple[Mode, ...]], ...] = ()  # to share: lowest digest first, modes passed


def replayable(result: CaseResult) -> bool:
    """Whether a result may be in a sample: a case or a fact the implementation passed in a vocabulary
    it loaded (not one both it and llama.cpp refused to load)."""
    return result.section in (*MODES, FACTS) and result.verdict is Verdict.PASSED and result.standing is Standing.LOADED


def _digest(case: RecordedCase) -> bytes:
    return hashlib.blake2b(case.data, digest_size=16).digest()


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
    distinct = {case.data: case for case in reversed(candidates)}  # the first case of each text
    offered = tuple(
        (case, tuple(mode for mode in MODES if (mode, case.id) in kept))
        for case in heapq.nsmallest(POOL, distinct.values(), key=_digest)
    )
    return Replay(recording.vocab_name, recording.group, info, tuple(cases), recording.facts, facts, offered)


def shared_questions(replays: list[Replay]) -> list[list[Question]]:
    """Each replay's questions on the inputs every replay offered (`SHARED` of them, in the same order
    for every replay, each in every mode all passed it in): first those whose recorded answers differ
    between the vocabularies (where a cache keyed by the text alone answers wrongly), then the others,
    lowest digest first within each."""
    offers = [{case.data: (case, modes) for case, modes in replay.offered} for replay in replays]
    common = []
    for data in offers[0]:
        if all(data in offer for offer in offers[1:]):
            modes = [mode for mode in MODES if all(mode in offer[data][1] for offer in offers)]
            common += [(data, modes)] * bool(modes)

    def alike(item: tuple[bytes, list[Mode]]) -> bool:
        data, modes = item
        first = offers[0][data][0].outcomes
        return all(offer[data][0].outcomes[mode] == first[mode] for offer in offers[1:] for mode in modes)

    chosen = sorted(common, key=alike)[:SHARED]  # a stable sort: the digest order within each kind
    return [[(offer[data][0], mode) for data, modes in chosen for mode in modes] for offer in offers]


@dataclass(frozen=True)
class Plan:
    """What one vocabulary is asked in the shared process: the shared questions, then its own."""

    replay: Replay
    questions: tuple[Question, ...]


def plans(replays: list[Replay]) -> list[Plan]:
    """Each replay's questions: the shared ones, then those of its own sample not among them."""
    out = []
    for replay, shared in zip(replays, shared_questions(replays), strict=True):
        asked = {(case.id, mode) for case, mode in shared}
        own = [(case, mode) for case, mode in replay.cases if (case.id, mode) not in asked]
        out.append(Plan(replay, (*shared, *own)))
    return out


@dataclass(frozen=True)
class OneProcess:
    """The implementation with every vocabulary loaded into one process of it; `at_once`: it holds
    them all at once (else each load replaces the last)."""

    impl: Implementation
    at_once: bool


def together(impl: Implementation) -> OneProcess | None:
    """The implementation with every vocabulary loaded into one process: a `cmd:` program's or a
    worker's (`SharedProcess`; all at once where its handshake says `handles`, as tokconf's worker's
    does), or a port in tokconf's own process (`--in-process`) as it is, every factory's object alive
    at once. None for what has no such process of a port's: tokconf's reference, a llama.cpp (one
    worker per model)."""
    if isinstance(impl, CommandImplementation):
        shared = impl.shared()
        return OneProcess(shared, shared.at_once)
    if isinstance(impl, PythonImplementation) and not impl.contained:
        return OneProcess(impl, True)
    return None


def interleave(impl: Implementation, replays: list[Replay]) -> list[CaseResult]:
    """Every replay's questions in one process, all alive at once or one after another; one result
    per case and fact asked."""
    shared = together(impl) if len(replays) > 1 else None
    if shared is None:
        return []
    try:
        return (_at_once if shared.at_once else _in_turn)(shared.impl, plans(replays))
    finally:
        shared.impl.close()


Result = Callable[..., CaseResult]


def _results(name: str, again: str = "") -> Result:
    def result(section: str, case: str, data: bytes, verdict: Verdict, expected: Outcome | None = None,
               answer: Outcome | None = None, reason: str = "") -> CaseResult:  # fmt: skip
        return CaseResult(name, INTERLEAVE, f"{again}{section}/{case}", verdict, data, expected, answer, reason)

    return result


def _changed(name: str, how: str) -> str:
    return (f"passed with {name} alone in its process, but answered otherwise {how}: the implementation keeps "
            "state across vocabularies")  # fmt: skip


def _at_once(shared: Implementation, planned: list[Plan]) -> list[CaseResult]:
    """Every vocabulary loaded (each factory called) before any is asked, then each asked `TURN`
    requests at a time, turn after turn, in recording order and then in reverse; its facts at the end.
    It stops at the first vocabulary that does not load beside the others (its cases are errors, the
    rest not asked), and after the first turn with an error: what broke is in the results, and the
    process that held them all has perhaps been started again, holding one."""
    sessions: list[Session] = []
    results: list[CaseResult] = []
    names = [plan.replay.vocab_name for plan in planned]
    try:
        for index, plan in enumerate(planned):
            try:
                sessions.append(shared.open(plan.replay.vocab))
            except (Unsupported, Broken) as why:
                said = f"loaded alone, but not beside {', '.join(names[:index])} in one process: {why}"
                result = _results(names[index])
                return [result(mode, case.id, case.data, Verdict.ERROR, reason=said) for case, mode in plan.questions]
        for turn in count():
            order = range(len(planned)) if turn % 2 == 0 else reversed(range(len(planned)))
            chunks = [(index, planned[index].questions[turn * TURN : (turn + 1) * TURN]) for index in order]
            if not any(chunk for _, chunk in chunks):
                break
            for index, chunk in chunks:
                others = [name for name in names if name != names[index]]
                beside = others[0] if len(others) == 1 else f"{len(others)} other vocabularies"
                how = f"with {beside} loaded beside it in the same process, asked in turn"
                asked = _asked(sessions[index], chunk, _results(names[index]), _changed(names[index], how))
                results += asked
                if any(one.verdict is Verdict.ERROR for one in asked):
                    return results
        for session, plan in zip(sessions, planned, strict=True):
            how = "with the others loaded beside it in the same process"
            results += _facts_again(session, plan.replay, _results(plan.replay.vocab_name), _changed(
                plan.replay.vocab_name, how))  # fmt: skip
    finally:
        for session in sessions:
            session.close()
    return results


def _in_turn(shared: Implementation, planned: list[Plan]) -> list[CaseResult]:
    """Every vocabulary in recording order, then the first again, each loaded in place of the one
    before and asked all its questions. The sequence stops at the first vocabulary that does not load
    after another (its cases are errors, the rest not asked)."""
    results: list[CaseResult] = []
    previous = planned[-1].replay.vocab_name
    for turn, plan in enumerate([*planned, planned[0]]):
        name = plan.replay.vocab_name
        result = _results(name, "again: " * (turn == len(planned)))
        try:
            session = shared.open(plan.replay.vocab)
        except (Unsupported, Broken) as why:
            said = f"loaded alone, but not in a process where {previous} was loaded before: {why}"
            return results + [result(mode, case.id, case.data, Verdict.ERROR, reason=said)
                              for case, mode in plan.questions]  # fmt: skip
        changed = _changed(name, f"after {previous} was loaded into the same process")
        try:
            results += _asked(session, plan.questions, result, changed)
            results += _facts_again(session, plan.replay, result, changed)
        finally:
            session.close()
        previous = name
    return results


def _asked(session: Session, questions: Iterable[Question], result: Result, changed: str) -> list[CaseResult]:
    """The questions asked of a vocabulary's session, each judged against the recording (it passed
    alone): passed, failed (`changed`), or the error it broke with."""
    asked = list(questions)
    aborts = frozenset(i for i, (case, mode) in enumerate(asked) if isinstance(case.outcomes[mode], Refusal))
    answers = session.encode_many([(case.data, *MODES[mode]) for case, mode in asked], aborts)
    out = []
    for (case, mode), answer in zip(asked, answers, strict=True):
        verdict, said = judge(case.outcomes[mode], answer)
        if verdict is not Verdict.ERROR:
            verdict, said = (Verdict.PASSED, "") if verdict is Verdict.PASSED else (Verdict.FAILED, changed)
        out.append(result(mode, case.id, case.data, verdict, case.outcomes[mode], answer, said))
    return out


def _facts_again(session: Session, replay: Replay, result: Result, changed: str) -> list[CaseResult]:
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
