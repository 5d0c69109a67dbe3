"""Loading a full model file against its vocab-only file: the reference and the oracle read only the
tokenizer keys, so the tensor data should cost nothing.

    python benchmarks/model_file.py [--vocab qwen2] [--mib 2048]

Writes the vocab file with one F32 tensor of `--mib` MiB after its key/values (the test suite's
generator, tests/test_model_file.py), then times, best of five, the reference's `from_gguf` and the
oracle's start with a first answer, on each file, in the same run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

import test_model_file
from tokconf.builds.build import require_build
from tokconf.builds.pins import DEFAULT_BUILD
from tokconf.oracles.libllama_client import LibllamaOracle
from tokconf_reference.tokenizer import from_gguf


def best(load: Callable[[Path], object], path: Path) -> float:
    times = []
    for _ in range(5):
        started = time.perf_counter()
        load(path)
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", default="qwen2")
    parser.add_argument("--mib", type=int, default=2048)
    args = parser.parse_args()
    build = require_build(DEFAULT_BUILD)
    vocab = build.models_dir / f"ggml-vocab-{args.vocab}.gguf"
    test_model_file.TENSOR_BYTES = args.mib << 20

    def oracle(path: Path) -> None:
        with LibllamaOracle(build, path) as answering:
            answering.tokenize(b"Hello world", False, False)

    with tempfile.TemporaryDirectory() as tmp:
        model = test_model_file.with_tensors(vocab, Path(tmp) / "model.gguf")
        size = model.stat().st_size / (1 << 20)
        for name, load in (("reference from_gguf", from_gguf), ("oracle start + first answer", oracle)):
            alone, whole = best(load, vocab), best(load, model)
            print(f"{args.vocab} {name}: vocab file {alone:.3f} s, model file ({size:,.0f} MiB) {whole:.3f} s "
                  f"= {whole / alone:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
