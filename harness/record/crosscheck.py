"""`tokconf record --backend cli --sample K`: the two oracle backends must agree.

The default backend calls llama_tokenize through cffi in a worker; `llama-tokenize` is llama.cpp's
own program around the same function (via common_tokenize). A sample of K cases per vocab, in every
mode llama-tokenize can express, is run through both; any difference is a bug in our binding, our
framing or our flags, and is reported case by case.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from harness.core.outcome import MODES, Mode, Outcome, Refusal
from harness.corpus.files import Case
from harness.corpus.generator import SplitMix64
from harness.llama.build import Build
from harness.llama.vocabs import vocab_name
from harness.oracle.client import LibllamaOracle
from harness.oracle.llama_tokenize import CliOracle
from harness.record.recorder import Plan, all_cases


@dataclass(frozen=True)
class Disagreement:
    vocab: str
    case: str
    mode: Mode
    libllama: Outcome
    cli: Outcome


def sample(cases: list[Case], k: int, seed: int) -> list[Case]:
    """K cases spread deterministically over the list, always including the first."""
    rng = SplitMix64(seed)
    picked = {0} | {rng.below(len(cases)) for _ in range(max(0, k - 1))}
    return [cases[i] for i in sorted(picked)][:k]


def _same(a: Outcome, b: Outcome) -> bool:
    if isinstance(a, Refusal) or isinstance(b, Refusal):
        return isinstance(a, Refusal) and isinstance(b, Refusal)
    return a == b


def crosscheck_vocab(
    plan: Plan, build: Build, vocab: Path, k: int, worker: LibllamaOracle | None = None
) -> tuple[int, list[Disagreement]]:
    """Compare the backends on K sampled cases of one vocab; returns (comparisons, disagreements).
    `worker`: the vocab's libllama worker when the caller has one open (a large vocab takes a second
    to load), else one is started for this."""
    with nullcontext(worker) if worker is not None else LibllamaOracle(build, vocab) as oracle:
        facts = oracle.facts()
        cases = sample(all_cases(plan, vocab, facts), k, plan.seed)
        cli = CliOracle(build, vocab, add_bos=facts["add_bos"])
        asked = [(case, mode) for case in cases for mode in MODES if cli.expresses(*MODES[mode])]
        expected = oracle.tokenize_many([(case.data, *MODES[mode]) for case, mode in asked])
    # One llama-tokenize process per input, most of it loading the vocab: run them side by side.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        actual = list(pool.map(lambda pair: cli.tokenize(pair[0].data, *MODES[pair[1]]), asked))
    found = [
        Disagreement(vocab_name(vocab), case.id, mode, want, got)
        for (case, mode), want, got in zip(asked, expected, actual, strict=True)
        if not _same(want, got)
    ]
    return len(asked), found
