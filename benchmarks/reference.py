"""The reference tokenizer against llama.cpp, measured in one run.

    python benchmarks/reference.py [--vocab qwen2 --vocab llama-bpe]

Per vocab and corpus (English prose, code, multilingual prose in 35 languages, the fuzz set):
encode throughput of the reference and of llama.cpp (libllama in the oracle's worker, batched, so its time includes the
pipe round trips), and their ratio, each the best of three runs with the reference's word cache
cold every time, and warm (the same texts once more: the steady state of a long run, where most
words have been seen); vocab load time of the reference, of `gguf.GGUFReader` and of
llama.cpp's own load (`llama_model_load_from_file`, vocab_only); encoding time from 1 KB to 1 MB
of prose (it must stay linear); and the reference's peak Python memory while loading and encoding.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

from tokconf.builds.build import Build, require_build
from tokconf.builds.pins import DEFAULT_BUILD
from tokconf.corpus.files import load_corpus
from tokconf.corpus.generator import fuzz_strings
from tokconf.oracles.libllama_client import LibllamaOracle
from tokconf_reference import Tokenizer

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


_OWN_LOAD = """
import sys, time
from pathlib import Path
from tokconf.oracles.libllama import Vocab
lib, header, vocab, *include = sys.argv[1:]
loaded = Vocab(Path(lib), Path(header), tuple(map(Path, include)), Path(vocab))  # cffi and dlopen, once
params = loaded.lib.llama_model_default_params()
params.vocab_only = True
best = float("inf")
for _ in range(3):
    start = time.perf_counter()
    model = loaded.lib.llama_model_load_from_file(vocab.encode(), params)
    best = min(best, time.perf_counter() - start)
    loaded.lib.llama_model_free(model)
print(best)
"""


def _llama_cpp_own_load(build: Build, vocab: Path) -> float:
    """llama_model_load_from_file (vocab_only) alone, best of three, in a child process (llama.cpp
    never runs in tokconf's own process)."""
    args = [str(build.libllama), str(build.llama_h), str(vocab), *map(str, build.include_dirs)]
    out = subprocess.run([sys.executable, "-c", _OWN_LOAD, *args], capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


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
    own = _llama_cpp_own_load(build, vocab)
    loads = f"reference {ref_load:.2f} s, gguf.GGUFReader {reader:.2f} s, llama.cpp's own load {own:.2f} s"
    loads += f" (its worker's whole start {cpp_load:.2f} s)"
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
