"""`tokconf fuzz`: differential fuzzing of an implementation against the live, crash-isolated oracle.

For each vocabulary and mode, hypothesis generates inputs (`harness.fuzz_strategies`), the
implementation and llama.cpp answer, and any disagreement (judged as `tokconf check` judges) fails
the example. hypothesis then shrinks it to a minimal input, which is written to
`corpora/found/found-<vocab>.yaml` with the seed, mode, implementation and date, so the next
`tokconf record` keeps it as a regular corpus case.

Profiles set the budget: `dev` (200 examples per vocab and mode), `ci` (1,000), `campaign`
(50,000). Without `--seed`, each run is random and first replays the examples kept in the hypothesis
database (`.tokconf-fuzz-db`, or `--db`), so a failure found once is tried first next time. With
`--seed N` a run is reproducible instead (hypothesis does not use the database for seeded runs).
`tokconf fuzz --workers N` spreads the vocab x mode pairs over N processes with pytest-xdist
(`harness.fuzz_plugin`); across machines, give each a share of `--vocab` (or different seeds) and
merge the found files and database folders afterwards.
"""

from __future__ import annotations

import datetime
import hashlib
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as fixed_seed
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase, InMemoryExampleDatabase

from harness.checking import verdict
from harness.cmake_build import Build
from harness.errors import TokconfError
from harness.fuzz_strategies import tokenizer_inputs
from harness.impls import Implementation, Unsupported, VocabInfo
from harness.oracle import LibllamaOracle
from harness.outcome import Outcome, Refusal
from harness.recorder import vocab_name
from harness.recording import MODES
from harness.report import code_points, visible

PROFILES = {"dev": 200, "ci": 1000, "campaign": 50_000}
WORD_SAMPLE = 2000  # vocabulary words offered to the strategy


@dataclass
class Finding:
    vocab: str
    mode: str
    data: bytes
    expected: Outcome
    actual: Outcome
    reason: str


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
    modes: list[str],
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
            session = impl.open(VocabInfo(vocab, facts["vocab_type"], facts.get("model"), facts.get("pre")))
        except Unsupported as why:
            stats.unsupported.append(f"{name}: {why}")
            return
        try:
            for mode in modes:
                _fuzz_mode(oracle, session, name, mode, words, specials, max_examples, seed, database, stats)
        finally:
            session.close()


def _fuzz_mode(
    oracle: LibllamaOracle,
    session: object,
    name: str,
    mode: str,
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
        actual = session.encode_many([(data, add_special, parse_special)])[0]  # type: ignore[attr-defined]
        stats.oracle_seconds += t1 - t0
        stats.impl_seconds += time.perf_counter() - t1
        if stats.examples % 1000 == 0:
            rate = stats.examples / max(1e-9, time.monotonic() - started)
            print(f"  {name} [{mode}]: {stats.examples} examples ({rate:.0f}/s)", file=sys.stderr, flush=True)
        judged, reason = verdict(expected, actual)
        if judged != "passed":
            last[:] = [Finding(name, mode, data, expected, actual, reason)]
            raise Divergence(reason)

    run = differential if seed is None else fixed_seed(seed)(differential)
    try:
        run()
    except Divergence:
        stats.findings.append(last[0])  # the last failing call is hypothesis's shrunk example
    stats.seconds += time.monotonic() - started


def database_at(path: Path | None) -> ExampleDatabase:
    return InMemoryExampleDatabase() if path is None else DirectoryBasedExampleDatabase(str(path))


def write_findings(found_dir: Path, findings: list[Finding], seed: int | None, impl_name: str) -> list[Path]:
    """Append each finding as a corpus case in `found-<vocab>.yaml` (deduplicated by input)."""
    written = []
    today = datetime.date.today().isoformat()
    for vocab in sorted({f.vocab for f in findings}):
        path = found_dir / f"found-{vocab}.yaml"
        doc = _load_found(path, vocab)
        known = {case["id"] for case in doc["cases"]}
        for finding in (f for f in findings if f.vocab == vocab):
            case_id = "fuzz-" + hashlib.sha256(finding.data).hexdigest()[:12]
            if case_id in known:
                continue
            known.add(case_id)
            case: dict[str, object] = {"id": case_id}
            try:
                case["text"] = finding.data.decode("utf-8")
            except UnicodeDecodeError:
                case["bytes_hex"] = finding.data.hex()
            case["why"] = (
                f"found by tokconf fuzz on {today}: vocab {vocab}, mode {finding.mode}, "
                f"{'random seed' if seed is None else f'seed {seed}'}, "
                f"implementation {impl_name}: {finding.reason}"
            )
            doc["cases"].append(case)
        found_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(yaml.dump(doc, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True), encoding="utf-8")
        tmp.replace(path)
        written.append(path)
    return written


def _load_found(path: Path, vocab: str) -> dict[str, Any]:
    if not path.is_file():
        return {"theme": f"found-{vocab}", "description": "inputs on which a fuzz campaign found a divergence",
                "cases": []}  # fmt: skip
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        raise TokconfError(f"{path} is not a corpus file", "move it away; tokconf fuzz writes found cases there")
    return doc


def describe_outcome(outcome: Outcome) -> str:
    return f"refused ({outcome.reason})" if isinstance(outcome, Refusal) else str(outcome)


def describe_finding(finding: Finding, impl_name: str) -> list[str]:
    """A shrunk divergence as the report lines both front ends print."""
    return [
        f"{finding.vocab} [{finding.mode}] {finding.reason}",
        f"  input:     {visible(finding.data)}   ({code_points(finding.data)})",
        f"  llama.cpp: {describe_outcome(finding.expected)}",
        f"  {impl_name}: {describe_outcome(finding.actual)}",
    ]
