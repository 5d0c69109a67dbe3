"""Recording throughput: the libllama worker against one `llama-tokenize` process per case.

    python benchmarks/recorder.py [--vocab qwen2 --vocab llama-bpe] [--cli-sample 30] [--full]

Both backends are measured in the same run on the same machine. A "case" is one input answered in
all three modes (plain, special, bos), as the recorder records it; the CLI answers a case with three
processes (`bos` only where llama-tokenize can express it). `--full` also times `tokconf record` of
every shipped vocab into a temporary folder, with one recorder process per core.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from tokconf.builds.build import require_build
from tokconf.builds.pins import DEFAULT_BUILD
from tokconf.builds.vocabs import shipped_vocabs
from tokconf.core.outcome import MODES
from tokconf.corpus.files import Case, load_corpus
from tokconf.corpus.generator import DEFAULT_COUNT, DEFAULT_SEED
from tokconf.oracles.libllama_client import LibllamaOracle
from tokconf.oracles.llama_tokenize import CliOracle
from tokconf.recording.recorder import Plan, all_cases, record

CORPORA = Path(__file__).resolve().parent.parent / "corpora"


def _worker_rate(oracle: LibllamaOracle, cases: list[Case]) -> float:
    start = time.perf_counter()
    oracle.tokenize_many([(c.data, *MODES[m]) for c in cases for m in MODES])
    return len(cases) / (time.perf_counter() - start)


def _cli_rate(cli: CliOracle, cases: list[Case]) -> float:
    start = time.perf_counter()
    for case in cases:
        for add_special, parse_special in MODES.values():
            if cli.expresses(add_special, parse_special):
                cli.tokenize(case.data, add_special, parse_special)
    return len(cases) / (time.perf_counter() - start)


def bench_vocab(plan: Plan, vocab: Path, cli_sample: int) -> None:
    with LibllamaOracle(plan.build, vocab) as oracle:
        facts = oracle.facts()
        cases = all_cases(plan, vocab, facts)
        fuzz = [c for c in cases if c.id.startswith("fuzz/")]
        all_rate = _worker_rate(oracle, cases)
        fuzz_rate = _worker_rate(oracle, fuzz)
    step = max(1, len(fuzz) // cli_sample)
    cli_rate = _cli_rate(CliOracle(plan.build, vocab, facts["add_bos"]), fuzz[::step][:cli_sample])
    name = vocab.name.removeprefix("ggml-vocab-").removesuffix(".gguf")
    print(f"{name:10} worker, all {len(cases):5} cases: {all_rate:9,.0f} cases/s")
    print(f"{name:10} worker, fuzz {len(fuzz):4} cases: {fuzz_rate:9,.0f} cases/s")
    print(f"{name:10} llama-tokenize per case:   {cli_rate:9,.2f} cases/s   ({cli_sample} fuzz cases)")
    print(f"{name:10} ratio worker / CLI:        {fuzz_rate / cli_rate:9,.0f}x (fuzz)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", action="append", default=[], help="vocab names (default: qwen2, llama-bpe)")
    parser.add_argument("--cli-sample", type=int, default=30, help="cases timed through llama-tokenize")
    parser.add_argument("--full", action="store_true", help="also time recording every shipped vocab")
    args = parser.parse_args()
    build = require_build(DEFAULT_BUILD)
    with tempfile.TemporaryDirectory() as tmp:
        plan = Plan(build, tuple(load_corpus([CORPORA])), DEFAULT_SEED, DEFAULT_COUNT, Path(tmp))
        print(f"llama.cpp b{build.build}, {os.cpu_count()} cores; a case = one input in all {len(MODES)} modes")
        for name in args.vocab or ["qwen2", "llama-bpe"]:
            bench_vocab(plan, build.models_dir / f"ggml-vocab-{name}.gguf", args.cli_sample)
        if args.full:
            vocabs = shipped_vocabs(build)
            jobs = os.cpu_count() or 1
            start = time.perf_counter()
            record(plan, vocabs, jobs)
            seconds = time.perf_counter() - start
            print(f"full recording: {len(vocabs)} vocabs in {seconds:.1f} s with {jobs} processes")


if __name__ == "__main__":
    main()
