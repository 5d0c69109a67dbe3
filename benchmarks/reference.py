"""The reference tokenizer against llama.cpp, measured in one run.

    python benchmarks/reference.py [--vocab qwen2 --vocab llama-bpe]

Per vocab and corpus (English prose, code, multilingual prose in 35 languages, the fuzz set): encode throughput of
the reference and of llama.cpp (libllama in the oracle's worker, batched, so its time includes the
pipe round trips), and their ratio, each the best of three runs with the reference's word cache
cold every time, and warm (the same texts once more: the steady state of a long run, where most
words have been seen); vocab load time of the reference, of `gguf.GGUFReader` and of
the oracle's worker start (process, cffi and llama.cpp's own load); encoding time from 1 KB to 1 MB
of prose (it must stay linear); and the reference's peak Python memory while loading and encoding.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from pathlib import Path

from harness.cmake_build import require_build
from harness.corpus import load_corpus
from harness.fuzz import fuzz_strings
from harness.oracle import LibllamaOracle
from harness.pins import DEFAULT_BUILD
from reference_impl import Tokenizer

CORPORA = Path(__file__).resolve().parent.parent / "corpora"
MODE = (False, True)  # add_special=false, parse_special=true: a prompt's body
REPEATS = 3


def _sets() -> dict[str, list[bytes]]:
    cases = {c.id: c for f in load_corpus([CORPORA]) for c in f.cases}

    def pick(prefix: str) -> list[bytes]:
        return [c.data for i, c in cases.items() if i.startswith(prefix)]

    prose = [c.data for i, c in cases.items() if i.startswith("documents/")]
    sets = {"prose": prose, "code": pick("code/"), "multilingual": pick("multilingual/")}
    return sets | {"fuzz": list(fuzz_strings())}


def _rate(seconds: float, data: list[bytes]) -> str:
    return f"{sum(map(len, data)) / seconds / 1e6:6.2f} MB/s"


def bench(vocab: Path, sets: dict[str, list[bytes]]) -> None:
    build = require_build(DEFAULT_BUILD)
    name = vocab.name.removeprefix("ggml-vocab-").removesuffix(".gguf")
    start = time.perf_counter()
    tokenizer = Tokenizer.from_gguf(vocab)
    ref_load = time.perf_counter() - start
    start = time.perf_counter()
    with LibllamaOracle(build, vocab) as oracle:
        cpp_load = time.perf_counter() - start
        for label, data in sets.items():
            cpp = ref = float("inf")
            for _ in range(REPEATS):  # the best of a few runs each: one run of a small set is noise
                start = time.perf_counter()
                oracle.tokenize_many([(d, *MODE) for d in data])
                cpp = min(cpp, time.perf_counter() - start)
                fresh = Tokenizer.from_gguf(vocab)  # a cold word cache each time
                start = time.perf_counter()
                for d in data:
                    fresh.encode(d, *MODE)
                ref = min(ref, time.perf_counter() - start)
            start = time.perf_counter()  # the same texts again: every word is in the cache now
            for d in data:
                fresh.encode(d, *MODE)
            warm = time.perf_counter() - start
            rates = f"reference {_rate(ref, data)} (warm {_rate(warm, data)})  llama.cpp {_rate(cpp, data)}"
            print(f"{name:10} {label:12} {rates}  ratio {cpp / ref:5.2f}x (warm {cpp / warm:5.2f}x)")
    from gguf import GGUFReader

    start = time.perf_counter()
    GGUFReader(vocab)
    reader = time.perf_counter() - start
    loads = f"reference {ref_load:.2f} s, gguf.GGUFReader {reader:.2f} s, llama.cpp worker start {cpp_load:.2f} s"
    print(f"{name:10} load: {loads}")
    prose = b"\n\n".join(sets["prose"])
    line = []
    for size in (1_000, 10_000, 100_000, 1_000_000):
        text = (prose * (size // len(prose) + 1))[:size]
        fresh = Tokenizer.from_gguf(vocab)
        start = time.perf_counter()
        fresh.encode(text, *MODE)
        line.append(f"{size // 1000:>5} KB {1000 * (time.perf_counter() - start) / (size / 1000):.3f} ms/KB")
    print(f"{name:10} scaling: " + ", ".join(line))
    tracemalloc.start()
    fresh = Tokenizer.from_gguf(vocab)
    for d in sets["prose"]:
        fresh.encode(d, *MODE)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"{name:10} reference peak Python memory (load + prose): {peak / 1e6:.0f} MB")
    del tokenizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", action="append", default=[])
    args = parser.parse_args()
    build = require_build(DEFAULT_BUILD)
    sets = _sets()
    for name in args.vocab or ["qwen2", "llama-bpe"]:
        bench(build.models_dir / f"ggml-vocab-{name}.gguf", sets)


if __name__ == "__main__":
    main()
