"""Encode throughput of llama.cpp, the reference and each peer on one fixed text per vocab, measured
in one run so that ratios compare like with like (the same machine, the same load).

The text is the corpus's prose, code and multilingual prose (`corpora/`: documents, code,
multilingual; about 240 KB of valid UTF-8 in some 200 parts), each part encoded on its own in plain
mode, all parts in one batch. "Cold" is the first pass after loading (caches empty), "warm" the
best of the next `WARM_PASSES`: the steady state where most words have been seen (the parts
outnumber any whole-input memo, such as the reference's last 16 fragments, so no pass is a lookup of
the one before). llama.cpp runs in the oracle's worker process: its time includes sending the parts
and the ids through a pipe, which is small beside tokenizing them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from ..builds.build import Build
from ..core.errors import TokconfError
from ..core.files import CORPUS
from ..core.outcome import Outcome, Refusal, Request
from ..corpus.files import load_corpus
from ..implementations.base import Broken, Implementation, Unsupported, VocabInfo
from ..oracles.libllama_client import LibllamaOracle
from ..recording.format import Recording
from .matrix import Matrix, Speed

PARTS = ("documents/", "code/", "multilingual/")
WARM_PASSES = 2
LLAMA_CPP = "llama.cpp"


def fixed_text(corpora: Path) -> list[bytes]:
    """The parts of the text every implementation encodes, the same for every vocab."""
    cases = [c for f in load_corpus([corpora]) for c in f.cases if c.id.startswith(PARTS)]
    return [c.data for c in sorted(cases, key=lambda c: c.id)]


def _timed(encode: Callable[[list[Request]], list[Outcome]], parts: list[bytes]) -> tuple[float, float]:
    """The cold pass and the best warm pass, in seconds; a part without ids is an error."""
    requests: list[Request] = [(part, False, False) for part in parts]
    times = []
    for _ in range(1 + WARM_PASSES):
        started = time.perf_counter()
        answers = encode(requests)
        times.append(time.perf_counter() - started)
        wrong = next((a for a in answers if isinstance(a, Refusal)), None)
        if wrong is not None:
            raise RuntimeError(f"no ids for a part of the fixed text: {wrong.kind.value}: {wrong.reason}")
    return times[0], min(times[1:])


def llama_cpp_speed(build: Build, vocab: Path, name: str, parts: list[bytes]) -> Speed:
    started = time.perf_counter()
    with LibllamaOracle(build, vocab) as oracle:
        oracle.facts()  # loaded, in its worker
        load = time.perf_counter() - started
        cold, warm = _timed(oracle.tokenize_many, parts)
    return Speed(LLAMA_CPP, name, sum(map(len, parts)), load, cold, warm)


def impl_speed(label: str, impl: Implementation, recording: Recording, vocab: Path, parts: list[bytes]) -> Speed | None:
    """An implementation's speed on the text, or None where it does not load the vocab (it declines
    it, or breaks loading it)."""
    info = VocabInfo.of(vocab, recording.vocab_name, recording.vocab_sha256, recording.facts)
    started = time.perf_counter()
    try:
        session = impl.open(info)
    except (Unsupported, Broken):  # the matrix's cells say which, and why
        return None
    try:
        load = time.perf_counter() - started
        cold, warm = _timed(session.encode_many, parts)
    finally:
        session.close()
    return Speed(label, recording.vocab_name, sum(map(len, parts)), load, cold, warm)


def measure(matrix: Matrix, files: list[Path], progress: Callable[[str], None]) -> None:
    """Speeds per vocab, in one run: llama.cpp, the reference and every peer that loads the vocab.
    What goes wrong measuring a peer is kept in `matrix.errors`, never dropped."""
    from ..builds.build import require_build
    from ..implementations.resolve import resolve
    from ..recording.format import load
    from ..synth.files import recorded_vocab

    parts = fixed_text(CORPUS)
    build = require_build(matrix.build)
    named = {"reference": "reference"} | {p.name: p.spec for p in matrix.peers}
    impls = [(name, resolve(spec, None)) for name, spec in named.items()]
    try:
        for path in files:
            recording = load(path)
            vocab = recorded_vocab(recording.provenance["vocab"], recording.build, None)
            progress(f"{recording.vocab_name}: speed")
            matrix.speeds.append(llama_cpp_speed(build, vocab, recording.vocab_name, parts))
            for label, impl in impls:
                try:
                    speed = impl_speed(label, impl, recording, vocab, parts)
                except (Broken, RuntimeError, TokconfError) as error:
                    matrix.errors.append(f"{label} on {recording.vocab_name}, speed: {error}")
                    continue
                if speed is not None:
                    matrix.speeds.append(speed)
    finally:
        for _, impl in impls:
            impl.close()
