"""A differential campaign on one vocabulary: inputs in batches, llama.cpp and the implementation
answering each batch in one round trip, every divergence shrunk and kept.

Per mode, the inputs the example database holds for this vocabulary come first (a bug found on any
machine is tried first everywhere), then batches from `InputGenerator`, seeded by the campaign seed,
the vocabulary's sha256 and the mode, so `--vocab V --mode M --seed N` reproduces one target alone.
A failing input (judged as `tokconf check` judges) that contains no input already found is shrunk by
ddmin (`harness.check.explain.ddmin`) with both tokenizers in the loop; the minimal input, with
llama.cpp's answer in every mode, is handed to `on_finding` (which writes it as a recording) before it
goes to the database, so a database that fails loses nothing found.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.check.engine import Verdict, judge
from harness.check.explain import ddmin, units
from harness.core.errors import TokconfError
from harness.core.facts import VocabFacts
from harness.core.files import sha256_file
from harness.core.outcome import MODES, Mode, Outcome, Request
from harness.fuzz.database import ExampleStore
from harness.fuzz.findings import Finding
from harness.fuzz.generator import InputGenerator
from harness.implementations.base import Broken, Implementation, Session, Unsupported, VocabInfo
from harness.llama.build import Build
from harness.llama.vocabs import vocab_name
from harness.oracle.client import LibllamaOracle

BATCH = 512  # inputs per round trip to both tokenizers
WORD_SAMPLE = 2000  # vocabulary words offered to the generator
MAX_FINDINGS = 10  # distinct minimal inputs per vocabulary and mode before the target stops
DIVERGING = (Verdict.FAILED, Verdict.ERROR)


@dataclass
class TargetStats:
    """One vocabulary and mode."""

    examples: int = 0
    replayed: int = 0  # of which came from the example database
    failing: int = 0  # examples that diverged (many share one finding)
    unsupported: int = 0  # inputs the implementation declared it cannot be given
    findings: int = 0


@dataclass
class CampaignStats:
    seed: int
    started: float = field(default_factory=time.monotonic)
    oracle_seconds: float = 0.0
    impl_seconds: float = 0.0
    targets: dict[tuple[str, Mode], TargetStats] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)  # vocabularies the implementation declined
    timeline: list[tuple[float, int, int]] = field(default_factory=list)  # (seconds, examples, findings)

    @property
    def examples(self) -> int:
        return sum(t.examples for t in self.targets.values())

    @property
    def found(self) -> int:
        """Distinct findings (`findings` holds them only in the process that found them)."""
        return sum(t.findings for t in self.targets.values())

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started

    def mark(self) -> None:
        """A point of the examples-and-findings-over-time plot."""
        self.timeline.append((round(self.seconds, 3), self.examples, self.found))


@dataclass
class Campaign:
    """What every target of a run shares."""

    build: Build
    impl: Implementation
    modes: list[Mode]
    max_examples: int
    store: ExampleStore
    stats: CampaignStats
    on_finding: Callable[[Finding], None]
    progress: Callable[[CampaignStats], None] = lambda stats: None

    def fuzz_vocab(self, vocab: Path) -> None:
        """Every mode of one vocabulary."""
        name = vocab_name(vocab)
        sha = sha256_file(vocab)
        with LibllamaOracle(self.build, vocab) as oracle:
            facts = oracle.facts()
            try:
                session = self.impl.open(VocabInfo.of(vocab, name, sha, facts))
            except Unsupported as why:
                self.stats.unsupported.append(f"{name}: {why}")
                return
            except Broken as why:
                raise TokconfError(f"{name}: {why}", "fix the implementation; nothing was fuzzed") from None
            try:
                words = _words(oracle.pieces(special=False))
                specials = sorted(set(facts["special_texts"].values()))
                for mode in self.modes:
                    generator = InputGenerator(f"{self.stats.seed}/{sha}/{mode}", words, specials)
                    target = _Target(self, oracle, session, vocab, sha, facts, mode)
                    target.run(generator)
            finally:
                session.close()


def _words(pieces: list[bytes]) -> list[bytes]:
    step = max(1, len(pieces) // WORD_SAMPLE)
    return [p for p in pieces[::step] if p][:WORD_SAMPLE]


class _Target:
    """One vocabulary and mode: replay, generate, shrink, keep."""

    def __init__(
        self,
        campaign: Campaign,
        oracle: LibllamaOracle,
        session: Session,
        vocab: Path,
        sha: str,
        facts: VocabFacts,
        mode: Mode,
    ) -> None:
        self.campaign = campaign
        self.oracle = oracle
        self.session = session
        self.vocab = vocab
        self.sha = sha
        self.facts = facts
        self.mode = mode
        self.name = vocab_name(vocab)
        self.flags = MODES[mode]
        self.found: list[bytes] = []  # minimal inputs found (or replayed) for this target
        self.stats = campaign.stats.targets.setdefault((self.name, mode), TargetStats())

    def run(self, generator: InputGenerator) -> None:
        budget = self.campaign.max_examples
        replay = self.campaign.store.replay(self.sha, self.mode)[:budget]
        self._examples(replay, replayed=True)
        while self.stats.examples < budget and self.stats.findings < MAX_FINDINGS:
            self._examples(generator.batch(min(BATCH, budget - self.stats.examples)), replayed=False)

    def _answers(self, inputs: list[bytes]) -> tuple[list[Outcome], list[Outcome]]:
        requests: list[Request] = [(data, *self.flags) for data in inputs]
        stats = self.campaign.stats
        t0 = time.perf_counter()
        expected = self.oracle.tokenize_many(requests)
        t1 = time.perf_counter()
        actual = self.session.encode_many(requests)
        stats.oracle_seconds += t1 - t0
        stats.impl_seconds += time.perf_counter() - t1
        return expected, actual

    def _examples(self, inputs: list[bytes], replayed: bool) -> None:
        if not inputs:
            return
        expected, actual = self._answers(inputs)
        for index, (data, want, got) in enumerate(zip(inputs, expected, actual, strict=True)):
            verdict, _ = judge(want, got)
            self.stats.unsupported += verdict is Verdict.UNSUPPORTED
            if verdict in DIVERGING:
                self.stats.failing += 1
                if not any(known in data for known in self.found) and self.stats.findings < MAX_FINDINGS:
                    self._shrink_and_keep(data, verdict, replayed, self.stats.examples + index + 1)
        self.stats.examples += len(inputs)
        self.stats.replayed += len(inputs) if replayed else 0
        self.campaign.stats.mark()
        self.campaign.progress(self.campaign.stats)

    def _shrink_and_keep(self, data: bytes, verdict: Verdict, replayed: bool, example: int) -> None:
        def fails(candidates: list[bytes]) -> list[bool]:
            want, got = self._answers(candidates)
            return [judge(w, g)[0] is verdict for w, g in zip(want, got, strict=True)]

        minimal, _ = ddmin(units(data), fails)
        (want,), (got,) = self._answers([minimal])
        _, reason = judge(want, got)
        outcomes = dict(zip(MODES, self.oracle.tokenize_many([(minimal, *f) for f in MODES.values()]), strict=True))
        finding = Finding(
            vocab=self.name,
            mode=self.mode,
            data=minimal,
            expected=want,
            actual=got,
            reason=reason,
            vocab_path=self.vocab,
            seed=self.campaign.stats.seed,
            vocab_sha256=self.sha,
            facts=self.facts,
            outcomes=outcomes,
            replayed=replayed,
            example=example,
        )
        self.found.append(minimal)
        self.stats.findings += 1
        self.campaign.stats.findings.append(finding)
        self.campaign.on_finding(finding)  # written locally first: a failing database loses nothing
        self.campaign.store.keep(self.sha, self.mode, minimal)
