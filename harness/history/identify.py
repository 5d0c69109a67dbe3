"""Which published llama.cpp builds tokenize exactly like an implementation (`tokconf identify`).

The implementation is asked every case of the recordings (or of `--vocab`) in every mode. A stretch of
builds (tokconf.history.data) expects, for each outcome, its stored answer where it has one, else the
recording's; the stretches it agrees with on every outcome are its builds. Agreement is a check's: equal
ids, or a refusal where llama.cpp refuses; an error (the port broke) agrees with nothing; an input it
declines (a class of input tokconf verifies) is left out of the comparison and counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..bisect.probe import Answer, Answers, Key, ProbeSet
from ..core.errors import TokconfError
from ..core.outcome import MODES, Outcome, Refusal, RefusalKind
from ..implementations.base import Implementation, LoadRefused, Unsupported, VocabInfo
from ..recordings.format import Recording
from .data import History, Stretch
from .walk import same


def agrees(answer: Answer, expected: Answer) -> bool:
    if isinstance(answer, Refusal) and answer.kind is RefusalKind.BROKEN:
        return False
    return same(answer, expected)


@dataclass
class Identification:
    """What an implementation answered and which stretches it agrees with."""

    history: History
    probes: ProbeSet
    answers: Answers  # what it answered, declines left out
    recorded: Answers  # the recordings' outcomes for the same keys
    declined: int = 0
    declined_vocabs: list[str] = field(default_factory=list)
    mismatches: list[int] = field(default_factory=list)  # per stretch: outcomes it answers otherwise

    @property
    def ranges(self) -> list[tuple[Stretch, Stretch]]:
        """Runs of neighbouring stretches it agrees with, as (first stretch, last stretch)."""
        runs: list[tuple[Stretch, Stretch]] = []
        previous = -2
        for index, stretch in enumerate(self.history.stretches):
            if self.mismatches[index]:
                continue
            if index == previous + 1:
                runs[-1] = (runs[-1][0], stretch)
            else:
                runs.append((stretch, stretch))
            previous = index
        return runs

    @property
    def nearest(self) -> Stretch:
        best = min(range(len(self.mismatches)), key=lambda i: (self.mismatches[i], -i))
        return self.history.stretches[best]

    def versus(self, stretch: int | None) -> list[Key]:
        """The outcomes it answers otherwise than a stretch (None: than the recordings)."""

        def expected(key: Key) -> Answer:
            recorded = self.recorded[key]
            return recorded if stretch is None else self.history.answer(stretch, key, recorded)

        return sorted(key for key, answer in self.answers.items() if not agrees(answer, expected(key)))


def identify(impl: Implementation, history: History, recordings: list[Recording], probes: ProbeSet) -> Identification:
    """Ask `impl` every case of `recordings` (their vocab files are `probes`') and match the stretches."""
    for recording in recordings:
        stored = history.vocabs.get(recording.vocab_name)
        if recording.build != history.recordings_build or stored != recording.vocab_sha256:
            raise TokconfError(
                f"the build history was made from other recordings than {recording.vocab_name}'s "
                f"(b{history.recordings_build}, vocab sha256 {stored})",
                "identify against the bundled recordings, or make a history of yours: tokconf upgrade --data",
            )
    found = Identification(history, probes, {}, {})
    by_name = {r.vocab_name: r for r in recordings}
    for name, path, cases in probes.vocabs:
        recording = by_name[name]
        requests = [(data, *MODES[mode]) for _, data in cases for mode in MODES]
        keys = [(name, case_id, mode) for case_id, _ in cases for mode in MODES]
        info = VocabInfo.of(path, name, recording.vocab_sha256, recording.facts)
        outcomes: list[Outcome]
        try:
            session = impl.open(info)
        except LoadRefused as refused:
            outcomes = [Refusal(f"load: {refused}")] * len(requests)
        except Unsupported:
            found.declined_vocabs.append(name)
            continue
        else:
            try:
                outcomes = session.encode_many(requests)
            finally:
                session.close()
        recorded = {(name, c.id, m): o for c in recording.cases for m, o in c.outcomes.items()}
        for key, outcome in zip(keys, outcomes, strict=True):
            if isinstance(outcome, Refusal) and outcome.kind is RefusalKind.UNSUPPORTED:
                found.declined += 1
            elif key in recorded:
                found.answers[key] = outcome
                found.recorded[key] = recorded[key]
    found.mismatches = [len(found.versus(index)) for index in range(len(history.stretches))]
    return found
