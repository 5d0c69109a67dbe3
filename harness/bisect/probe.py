"""One probe of a bisect: a build asked the selected cases in every mode, through libllama.

The cases come from recordings (all of them, or the `--vocab`/`--case` selection) and the vocab
files from the recordings' own build, so a build whose sdist ships no `models/` (b9093's does not)
is probed on the same files. A probe is a small recording: kept in the cache under the build and a
digest of what was asked, so a second bisect over the same range, or a resumed one, asks nothing
again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..core.errors import TokconfError
from ..core.files import atomic_write, cache_root, sha256_file
from ..core.outcome import MODES, Mode, Outcome, Refusal
from ..live.client import LibllamaOracle, VocabRefused
from ..llama.build import build_commit
from ..llama.lock import Lock
from ..llama.provide import provide
from ..recordings.format import Recording
from ..synth.files import recorded_vocab
from .search import Unprobeable

Key = tuple[str, str, Mode]  # vocab, case, mode
Answers = dict[Key, Outcome]
Target = int | str  # a published build, or a commit of the `--source` checkout


@dataclass(frozen=True)
class ProbeSet:
    """What every probe asks: per vocab, its GGUF file and the cases."""

    vocabs: tuple[tuple[str, Path, tuple[tuple[str, bytes], ...]], ...]

    @classmethod
    def from_recordings(cls, recordings: list[Recording], cases: frozenset[str], vocab_dir: Path | None) -> ProbeSet:
        vocabs = []
        for recording in recordings:
            chosen = tuple((c.id, c.data) for c in recording.cases if not cases or c.id in cases)
            if chosen:
                path = recorded_vocab(recording.provenance["vocab"], recording.build, vocab_dir)
                vocabs.append((recording.vocab_name, path, chosen))
        if not vocabs:
            raise TokconfError("no recorded case matches the selection", "check --vocab and --case")
        return cls(tuple(vocabs))

    def only(self, cases: frozenset[tuple[str, str]]) -> ProbeSet:
        """The (vocab, case id) pairs of `cases` alone: what a walk asks inside a range (tokconf.history)."""
        kept = ((name, path, tuple(c for c in chosen if (name, c[0]) in cases)) for name, path, chosen in self.vocabs)
        return ProbeSet(tuple((name, path, chosen) for name, path, chosen in kept if chosen))

    @property
    def size(self) -> int:
        return sum(len(cases) for _, _, cases in self.vocabs) * len(MODES)

    @cached_property
    def digest(self) -> str:
        """What the probe cache is keyed by, beside the build: the vocab files' content and the cases."""
        h = hashlib.sha256()
        for name, path, cases in self.vocabs:
            h.update(f"{name}\0{sha256_file(path)}\0".encode())
            for case_id, data in cases:
                h.update(case_id.encode() + b"\0" + data + b"\0")
        return h.hexdigest()[:24]


def _encode(outcome: Outcome) -> object:
    return {"error": outcome.reason} if isinstance(outcome, Refusal) else outcome


def _decode(node: object) -> Outcome:
    return Refusal(node["error"]) if isinstance(node, dict) else list(node)  # type: ignore[call-overload]


class Prober:
    """Probes builds (fetching and building each on first use, libllama only), with cached answers.
    A commit (a `str` target) is built from the `source` checkout; `after_tag` gives the number of
    the tag before each commit."""

    def __init__(self, probes: ProbeSet, lock: Lock, jobs: int | None = None, source: Path | None = None) -> None:
        self.probes = probes
        self.lock = lock
        self.jobs = jobs
        self.source = source
        self.after_tag: dict[str, int] = {}
        self.answers: dict[Target, Answers] = {}

    def _cached(self, target: Target) -> Path:
        name = f"b{target}" if isinstance(target, int) else f"commit-{target}"
        return cache_root() / "probes" / f"{name}-{self.probes.digest}.json"

    def answers_of(self, target: Target) -> Answers:
        """The target's answers (probed now, or from this run or the probe cache); `Unprobeable` if the
        target cannot be fetched, built or loaded."""
        answers = self.answers.get(target)
        if answers is None:
            answers = self.answers[target] = self._answers(target)
        return answers

    def __call__(self, target: Target) -> tuple[tuple[str, str, str, str], ...]:
        """The target's answers, hashable (what the search compares)."""
        answers = self.answers_of(target)
        return tuple(sorted((v, c, m, json.dumps(_encode(o))) for (v, c, m), o in answers.items()))

    def _answers(self, target: Target) -> Answers:
        kept = self._cached(target)
        if kept.is_file():
            rows = json.loads(kept.read_text(encoding="utf-8"))
            return {(v, c, m): _decode(o) for v, c, m, o in rows}
        try:
            if isinstance(target, int):
                made = provide(target, self.lock, jobs=self.jobs, quiet=True)
            else:
                assert self.source is not None, "commits are probed from a --source checkout"
                made = build_commit(self.source, target, self.after_tag[target], jobs=self.jobs, quiet=True)
        except TokconfError as error:
            raise Unprobeable(error.problem.splitlines()[0]) from None
        answers: Answers = {}
        for name, path, cases in self.probes.vocabs:
            requests = [(data, *MODES[mode]) for _, data in cases for mode in MODES]
            try:
                with LibllamaOracle(made, path) as oracle:
                    outcomes = oracle.tokenize_many(requests)
            except VocabRefused as refused:  # an answer, as a recording holds it: a new pre name is found so
                outcomes = [Refusal(f"load: {refused.reason}")] * len(requests)
            except TokconfError as error:
                raise Unprobeable(f"its libllama could not load {path.name}: {error.problem}") from None
            keys = [(name, case_id, mode) for case_id, _ in cases for mode in MODES]
            answers.update(zip(keys, outcomes, strict=True))
        kept.parent.mkdir(parents=True, exist_ok=True)
        rows = [[v, c, m, _encode(o)] for (v, c, m), o in answers.items()]
        atomic_write(kept, json.dumps(rows) + "\n", "bisect probe")
        return answers
