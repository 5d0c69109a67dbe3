"""Fuzz throughput: examples per second of a campaign, and where the time goes.

    python benchmarks/fuzz.py [--impl llama.cpp@11192] [--vocab qwen2] [--examples 2000]

Runs one seeded campaign (no database) of `--examples` per mode and prints examples/s and the share
of the tokenizing time spent in the live oracle and in the implementation; the rest of the wall time
is hypothesis generating and shrinking inputs.
"""

from __future__ import annotations

import argparse

from harness.core.outcome import MODES
from harness.fuzz.campaign import CampaignStats, database_at, fuzz_vocab
from harness.implementations.resolve import resolve
from harness.llama.build import require_build
from harness.llama.pins import DEFAULT_BUILD


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--impl", default=f"llama.cpp@{DEFAULT_BUILD}")
    parser.add_argument("--vocab", action="append", default=[])
    parser.add_argument("--examples", type=int, default=2000)
    args = parser.parse_args()
    build = require_build(DEFAULT_BUILD)
    impl = resolve(args.impl, 10.0)
    for name in args.vocab or ["qwen2", "llama-spm"]:
        stats = CampaignStats()
        vocab = build.models_dir / f"ggml-vocab-{name}.gguf"
        fuzz_vocab(build, impl, vocab, list(MODES), args.examples, 1, database_at(None), stats)
        other = stats.seconds - stats.oracle_seconds - stats.impl_seconds
        print(
            f"{name:10} {stats.examples} examples in {stats.seconds:.1f} s = {stats.examples / stats.seconds:,.0f}/s; "
            f"oracle {100 * stats.oracle_seconds / stats.seconds:.0f}%, {impl.name} "
            f"{100 * stats.impl_seconds / stats.seconds:.0f}%, hypothesis {100 * other / stats.seconds:.0f}%; "
            f"{len(stats.findings)} failures"
        )
    impl.close()


if __name__ == "__main__":
    main()
