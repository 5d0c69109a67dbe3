"""Fuzz throughput: differential examples per second of the campaign engine, against the hypothesis
engine tokconf 0.2.0 shipped (`hypothesis_baseline.py`), in the same run, on the same vocabulary.

    python benchmarks/fuzz.py [--impl reference] [--vocab qwen2] [--examples 20000]

An example is one input in one mode, answered by llama.cpp and by the implementation and judged.
Both engines run every mode, seeded, with no database; the engine's share of the tokenizing time in
llama.cpp and in the implementation is printed beside the rate. One process each, plus llama.cpp's
worker process: the figure is per campaign process.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from hypothesis_baseline import fuzz_mode
from tokconf.core.files import sha256_file
from tokconf.core.outcome import MODES
from tokconf.fuzz.campaign import Campaign, CampaignStats, _words
from tokconf.fuzz.database import open_database
from tokconf.implementations.base import VocabInfo
from tokconf.implementations.resolve import resolve
from tokconf.llama.build import require_build
from tokconf.llama.pins import DEFAULT_BUILD
from tokconf.oracle.client import LibllamaOracle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--impl", default="reference")
    parser.add_argument("--vocab", action="append", default=[])
    parser.add_argument("--examples", type=int, default=20000, help="per mode, for the campaign engine")
    parser.add_argument("--baseline-examples", type=int, default=2000, help="per mode, for the hypothesis engine")
    args = parser.parse_args()
    build = require_build(DEFAULT_BUILD)
    impl = resolve(args.impl, None)
    for name in args.vocab or ["qwen2"]:
        vocab = build.models_dir / f"ggml-vocab-{name}.gguf"
        with LibllamaOracle(build, vocab) as oracle:
            facts = oracle.facts()
            session = impl.open(VocabInfo.of(vocab, name, sha256_file(vocab), facts))
            words = _words(oracle.pieces(special=False))
            specials = sorted(set(facts["special_texts"].values()))
            examples = seconds = failures = 0.0
            for mode in MODES:
                n, s, f = fuzz_mode(oracle, session, mode, words, specials, args.baseline_examples)
                examples, seconds, failures = examples + n, seconds + s, failures + f
            session.close()
        baseline = examples / seconds
        print(f"{name:8} hypothesis engine (0.2.0): {examples:,.0f} examples in {seconds:.1f} s = {baseline:,.0f}/s; "
              f"{failures:.0f} failures")  # fmt: skip
        stats = CampaignStats(seed=1)
        campaign = Campaign(build, impl, list(MODES), args.examples, open_database(""), stats, lambda f: None)
        campaign.fuzz_vocab(vocab)
        rate = stats.examples / stats.seconds
        print(
            f"{name:8} campaign engine: {stats.examples:,} examples in {stats.seconds:.1f} s = {rate:,.0f}/s "
            f"({rate / baseline:.1f}x); llama.cpp {100 * stats.oracle_seconds / stats.seconds:.0f}%, "
            f"{impl.name} {100 * stats.impl_seconds / stats.seconds:.0f}% of the time; {stats.found} findings"
        )
    impl.close()


if __name__ == "__main__":
    main()
