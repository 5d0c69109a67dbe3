"""`tokconf fuzz`: differential fuzzing of an implementation against the live, crash-isolated oracle.

For each vocabulary and mode, hypothesis generates inputs (`harness.fuzz.strategies`), the
implementation and llama.cpp answer, and any disagreement (judged as `tokconf check` judges) fails
the example. hypothesis then shrinks it to a minimal input, which is written to
`corpora/found/found-<vocab>.yaml` with the seed, mode, implementation and date, so the next
`tokconf record` keeps it as a regular corpus case.

Profiles set the budget: `dev` (200 examples per vocab and mode), `ci` (1,000), `campaign`
(50,000). Without `--seed`, each run is random and first replays the examples kept in the hypothesis
database (`.tokconf-fuzz-db`, or `--db`), so a failure found once is tried first next time. With
`--seed N` a run is reproducible instead (hypothesis does not use the database for seeded runs).
`tokconf fuzz --workers N` spreads the vocab x mode pairs over N processes with pytest-xdist
(`harness.fuzz.pytest_items`); across machines, give each a share of `--vocab` (or different seeds) and
merge the found files and database folders afterwards.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as fixed_seed
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase, InMemoryExampleDatabase

from harness.check.engine import Verdict, judge
from harness.core.errors import TokconfError
from harness.core.files import sha256_file
from harness.core.outcome import MODES, Mode
from harness.fuzz.findings import Finding
from harness.fuzz.strategies import tokenizer_inputs
from harness.implementations.base import Broken, Implementation, Session, Unsupported, VocabInfo
from harness.llama.build import Build
from harness.llama.vocabs import vocab_name
from harness.oracle.client import LibllamaOracle

WORD_SAMPLE = 2000  # vocabulary words offered to the strategy


@dataclass
class CampaignStats:
    examples: int = 0
    seconds: float = 0.0
    oracle_seconds: float = 0.0
    impl_seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)


class Divergence(AssertionError):
    """The implementation and llama.cpp disagree on one input."""


def _words(pieces: list[bytes], seed: int) -> list[bytes]:
    step = max(1, len(pieces) // WORD_SAMPLE)
    return [p for p in pieces[seed % step :: step] if p][:WORD_SAMPLE]


def fuzz_vocab(
    build: Build,
    impl: Implementation,
    vocab: Path,
    modes: list[Mode],
    max_examples: int,
    seed: int | None,
    database: ExampleDatabase,
    stats: CampaignStats,
) -> None:
    """Run the differential test on one vocabulary, every mode; record what it finds in `stats`."""
    name = vocab_name(vocab)
    with LibllamaOracle(build, vocab) as oracle:
        facts = oracle.facts()
        words = _words(oracle.pieces(special=False), seed or 0)
        specials = sorted(set(facts["special_texts"].values()))
        try:
            session = impl.open(VocabInfo.of(vocab, name, sha256_file(vocab), facts))
        except Unsupported as why:
            stats.unsupported.append(f"{name}: {why}")
            return
        except Broken as why:
            raise TokconfError(f"{name}: {why}", "fix the implementation; nothing was fuzzed") from None
        try:
            for mode in modes:
                _fuzz_mode(oracle, session, name, mode, words, specials, max_examples, seed, database, stats)
        finally:
            session.close()


def _fuzz_mode(
    oracle: LibllamaOracle,
    session: Session,
    name: str,
    mode: Mode,
    words: list[bytes],
    specials: list[bytes],
    max_examples: int,
    seed: int | None,
    database: ExampleDatabase,
    stats: CampaignStats,
) -> None:
    add_special, parse_special = MODES[mode]
    last: list[Finding] = []
    started = time.monotonic()

    @settings(
        max_examples=max_examples,
        deadline=None,
        database=database,
        derandomize=False,
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(tokenizer_inputs(words, specials))
    def differential(data: bytes) -> None:
        stats.examples += 1
        t0 = time.perf_counter()
        expected = oracle.tokenize(data, add_special, parse_special)
        t1 = time.perf_counter()
        actual = session.encode_many([(data, add_special, parse_special)])[0]
        stats.oracle_seconds += t1 - t0
        stats.impl_seconds += time.perf_counter() - t1
        if stats.examples % 1000 == 0:
            rate = stats.examples / max(1e-9, time.monotonic() - started)
            print(f"  {name} [{mode}]: {stats.examples} examples ({rate:.0f}/s)", file=sys.stderr, flush=True)
        judged, reason = judge(expected, actual)
        if judged is not Verdict.PASSED:
            last[:] = [Finding(name, mode, data, expected, actual, reason, oracle.vocab, seed)]
            raise Divergence(reason)

    run = differential if seed is None else fixed_seed(seed)(differential)
    try:
        run()
    except Divergence:
        stats.findings.append(last[0])  # the last failing call is hypothesis's shrunk example
    stats.seconds += time.monotonic() - started


def database_at(path: Path | None) -> ExampleDatabase:
    return InMemoryExampleDatabase() if path is None else DirectoryBasedExampleDatabase(str(path))
