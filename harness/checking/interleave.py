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
the same cases: the first `SAMPLE` case ids in the recording's order with a passed mode, in every
mode they passed (the corpus comes first in every recording, so vocabularies share inputs).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..core.outcome import MODES, Mode, Outcome
from ..implementations.base import Broken, Implementation, Unsupported, VocabInfo
from ..implementations.command import CommandImplementation
from ..implementations.python import PythonImplementation
from ..recordings.format import RecordedCase, Recording, VocabGroup
from .contract import INTERLEAVE, Standing, Verdict, judge
from .engine import CaseResult

SAMPLE = 16  # case ids per vocabulary, each in every mode it passed


@dataclass(frozen=True)
class Replay:
    """One vocabulary's sample: cases that passed when it was alone in its process."""

    vocab_name: str
    group: VocabGroup
    vocab: VocabInfo
    cases: tuple[tuple[RecordedCase, Mode], ...]


def replayable(result: CaseResult) -> bool:
    """Whether a result may be in a sample: a case the implementation passed in a vocabulary it loaded
    (not one both it and llama.cpp refused to load)."""
    return result.section in MODES and result.verdict is Verdict.PASSED and result.standing is Standing.LOADED


def sample(recording: Recording, vocab: Path, passed: Iterable[tuple[str, str]]) -> Replay | None:
    """The replay of a checked recording from its passed (mode, case id) pairs; None when nothing
    passed (a vocabulary declined, broken, or failing everywhere has nothing to compare)."""
    kept = set(passed)
    cases: list[tuple[RecordedCase, Mode]] = []
    ids = 0
    for case in recording.cases:
        modes = [mode for mode in MODES if mode in case.outcomes and (mode, case.id) in kept]
        if not modes:
            continue
        cases += [(case, mode) for mode in modes]
        ids += 1
        if ids == SAMPLE:
            break
    if not cases:
        return None
    info = VocabInfo.of(vocab, recording.vocab_name, recording.vocab_sha256, recording.facts)
    return Replay(recording.vocab_name, recording.group, info, tuple(cases))


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
    """Every replay in order, then the first again, in one process; one result per case asked."""
    shared = together(impl) if len(replays) > 1 else None
    if shared is None:
        return []
    results: list[CaseResult] = []
    previous = replays[-1].vocab_name
    try:
        for turn, replay in enumerate([*replays, replays[0]]):
            again = "again: " * (turn == len(replays))
            results += _replayed(shared, replay, previous, again)
            previous = replay.vocab_name
    finally:
        shared.close()
    return results


def _replayed(shared: Implementation, replay: Replay, previous: str, again: str) -> list[CaseResult]:
    """One vocabulary's sample asked again in the shared process, after `previous` was loaded there."""
    name = replay.vocab_name

    def result(case: RecordedCase, mode: Mode, verdict: Verdict, answer: Outcome | None, reason: str) -> CaseResult:
        return CaseResult(name, INTERLEAVE, f"{again}{mode}/{case.id}", verdict, case.data, case.outcomes[mode],
                          answer, reason)  # fmt: skip

    try:
        session = shared.open(replay.vocab)
    except (Unsupported, Broken) as why:
        said = f"loaded alone, but not in a process where {previous} was loaded before: {why}"
        return [result(case, mode, Verdict.ERROR, None, said) for case, mode in replay.cases]
    try:
        answers = session.encode_many([(case.data, *MODES[mode]) for case, mode in replay.cases])
    finally:
        session.close()
    changed = (f"passed with {name} alone in its process, but answered otherwise after {previous} was loaded "
               "into the same process: the implementation keeps state across vocabularies")  # fmt: skip
    out = []
    for (case, mode), answer in zip(replay.cases, answers, strict=True):
        passed = judge(case.outcomes[mode], answer)[0] is Verdict.PASSED
        out.append(result(case, mode, Verdict.PASSED if passed else Verdict.FAILED, answer, "" if passed else changed))
    return out
