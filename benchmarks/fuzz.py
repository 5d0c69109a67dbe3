"""The two fuzz engines, `tokconf` and `hypothesis`, in the same run, on the same vocabulary and mode:

    python benchmarks/fuzz.py [--impl reference] [--vocab qwen2] [--mode plain] [--examples 20000]
                              [--hypothesis-examples 2000] [--seeds 10]

1. Throughput. Each engine fuzzes the implementation (seeded, no database) for its number of
   examples; an example is one input, answered by llama.cpp and by the implementation and judged.
   The rate is measured from the first batch on (the oracle's start and the vocabulary's load left
   out), and set against llama.cpp's own rate on the same kind of input: the inputs of the `tokconf`
   engine's generator, answered by llama.cpp alone in batches of 512, in this run.
2. Examples to find a planted bug: the reference tokenizer reading U+3000 as an ASCII space (as a port
   with its own whitespace table might), fuzzed by each engine from `--seeds` seeds until its first
   finding: the example it first showed in, what it was shrunk to, and the seconds to the finding.

One campaign process and llama.cpp's worker process, which take turns: about one core.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tokconf.builds.build import Build, require_build
from tokconf.builds.pins import DEFAULT_BUILD
from tokconf.core.outcome import MODES, Mode
from tokconf.core.render import visible
from tokconf.fuzz import Engine
from tokconf.fuzz.campaign import Campaign, CampaignStats
from tokconf.fuzz.database import open_database
from tokconf.fuzz.findings import Finding
from tokconf.fuzz.generator import InputGenerator, sample_words
from tokconf.implementations.base import Implementation
from tokconf.implementations.python import PythonImplementation
from tokconf.implementations.reference import ReferencePort
from tokconf.implementations.reference import from_gguf as reference
from tokconf.implementations.resolve import resolve
from tokconf.oracles.libllama_client import LibllamaOracle

IDEOGRAPHIC_SPACE = "\u3000".encode()
BATCH = 512


class IdeographicSpaceIsSpace:
    """The planted bug: the reference, U+3000 read as an ASCII space."""

    def __init__(self, path: Path) -> None:
        self.port: ReferencePort = reference(path)

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        return self.port.encode(data.replace(IDEOGRAPHIC_SPACE, b" "), add_special, parse_special)


@dataclass
class Throughput:
    examples: int
    seconds: float
    llama_share: float  # of those seconds, llama.cpp answering

    @property
    def rate(self) -> float:
        return self.examples / self.seconds


def throughput(
    build: Build, impl: Implementation, vocab: Path, mode: Mode, engine: Engine, examples: int
) -> Throughput:
    stats = CampaignStats(seed=1)
    campaign = Campaign(build, impl, [mode], examples, open_database(""), stats, lambda found: None, engine=engine)
    campaign.fuzz_vocab(vocab)
    (t0, n0, _), (t1, n1, _) = stats.timeline[0], stats.timeline[-1]  # from the first batch's end on
    return Throughput(n1 - n0, t1 - t0, stats.oracle_seconds / (t1 - t0))


def llama_rate(build: Build, vocab: Path, mode: Mode, count: int) -> float:
    """llama.cpp alone, on the `tokconf` engine's inputs, in batches."""
    with LibllamaOracle(build, vocab) as oracle:
        facts = oracle.facts()
        specials = sorted(set(facts["special_texts"].values()))
        inputs = InputGenerator(1, sample_words(oracle.pieces(special=False)), specials).batch(count)
        started = time.perf_counter()
        for start in range(0, count, BATCH):
            oracle.tokenize_many([(data, *MODES[mode]) for data in inputs[start : start + BATCH]])
        return count / (time.perf_counter() - started)


class Found(Exception):
    """Ends a campaign at its first finding."""

    def __init__(self, finding: Finding) -> None:
        self.finding = finding


def first_finding(
    build: Build, impl: Implementation, vocab: Path, mode: Mode, engine: Engine, seed: int, budget: int
) -> tuple[Finding | None, float]:
    def stop(finding: Finding) -> None:
        raise Found(finding)

    stats = CampaignStats(seed=seed)
    campaign = Campaign(build, impl, [mode], budget, open_database(""), stats, stop, engine=engine)
    try:
        campaign.fuzz_vocab(vocab)
    except Found as found:
        return found.finding, stats.seconds
    return None, stats.seconds


def table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))
            for row in rows]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--impl", default="reference")
    parser.add_argument("--vocab", default="qwen2")
    parser.add_argument("--mode", default="plain", choices=list(MODES))
    parser.add_argument("--examples", type=int, default=20000, help="for the tokconf engine")
    parser.add_argument("--hypothesis-examples", type=int, default=2000, help="for the hypothesis engine")
    parser.add_argument("--seeds", type=int, default=10, help="campaigns per engine against the planted bug")
    args = parser.parse_args()
    print(f"$ {shlex.join(['python', 'benchmarks/fuzz.py', *sys.argv[1:]])}")
    build = require_build(DEFAULT_BUILD)
    vocab = build.models_dir / f"ggml-vocab-{args.vocab}.gguf"
    impl = resolve(args.impl, None)
    llama = llama_rate(build, vocab, args.mode, args.examples)
    print(f"{args.vocab} [{args.mode}], {impl.name} against llama.cpp, which alone answers {llama:,.0f} inputs/s")
    rows = [["engine", "examples", "seconds", "examples/s", "of llama.cpp's rate", "llama.cpp's share of the time"]]
    rates = {}
    for engine, examples in ((Engine.TOKCONF, args.examples), (Engine.HYPOTHESIS, args.hypothesis_examples)):
        run = throughput(build, impl, vocab, args.mode, engine, examples)
        rates[engine] = run.rate
        rows.append([engine, f"{run.examples:,}", f"{run.seconds:.1f}", f"{run.rate:,.0f}",
                     f"{run.rate / llama:.2%}", f"{run.llama_share:.0%}"])  # fmt: skip
    impl.close()
    print("\n".join(table(rows)))
    print(f"the tokconf engine is {rates[Engine.TOKCONF] / rates[Engine.HYPOTHESIS]:.1f}x the hypothesis engine")

    planted = PythonImplementation("reference with U+3000 as a space", IdeographicSpaceIsSpace)
    print(f"\nthe reference reading U+3000 as a space, {args.seeds} seeds per engine: the first finding")
    rows = [["engine", "example (median)", "examples (min-max)", "seconds (median)", "shrunk to", "not found"]]
    for engine in Engine:
        found: list[tuple[Finding, float]] = []
        missed = 0
        for seed in range(args.seeds):
            finding, seconds = first_finding(build, planted, vocab, args.mode, engine, seed, 5000)
            if finding is None:
                missed += 1
            else:
                found.append((finding, seconds))
        if not found:
            rows.append([engine, "-", "-", "-", "-", str(missed)])
            continue
        examples = [finding.example for finding, _ in found]
        rows.append([engine, f"{statistics.median(examples):,.0f}", f"{min(examples)}-{max(examples)}",
                     f"{statistics.median(s for _, s in found):.1f}",
                     ", ".join(sorted({visible(f.data) for f, _ in found})), str(missed)])  # fmt: skip
    print("\n".join(table(rows)))


if __name__ == "__main__":
    main()
