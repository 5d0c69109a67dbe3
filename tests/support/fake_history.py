"""Fake published builds for tests of `tokconf upgrade` and `tokconf identify`: the pinned build under
other numbers, answering otherwise from chosen builds on, so no llama.cpp is compiled."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest
from tokconf.builds import registry
from tokconf.builds.build import Build
from tokconf.builds.lock import Lock
from tokconf.builds.pins import PINNED_SDIST_SHA256
from tokconf.core.errors import TokconfError
from tokconf.core.files import sha256_file
from tokconf.core.outcome import Outcome, Request
from tokconf.history.bisect import probe as probe_module
from tokconf.oracles.libllama_client import LibllamaOracle
from tokconf.recording.decoding import load as load_decoding
from tokconf.recording.decoding import path_for
from tokconf.recording.decoding import write as write_decoding
from tokconf.recording.format import load, write

QWEN2 = Path(__file__).resolve().parents[2] / "recordings" / "b11192" / "qwen2.yaml"
SMALL = ("edge/empty", "edge/hello-world", "llama.cpp/0002", "llama.cpp/0011", "llama.cpp/0005", "llama.cpp/0009")
ONLY_EMPTY = 99999  # a build number no published build has: the empty input's change without Hello world's


def small_qwen2(folder: Path) -> Path:
    """qwen2's recording cut to the cases above (the two the fakes change, each twice, and two they do
    not), so a test's upgrade and identify ask 18 outcomes, not 12,000; with its decoding, cut the same
    way (llama.cpp's pieces, and its detokenized text of those cases)."""
    recording = load(QWEN2)
    recording.cases = [case for case in recording.cases if case.id in SMALL]
    folder.mkdir(parents=True, exist_ok=True)
    small = folder / "qwen2.yaml"
    write(small, recording)
    decoding = load_decoding(path_for(QWEN2))
    decoding.detokenized = {k: {c: e for c, e in v.items() if c in SMALL} for k, v in decoding.detokenized.items()}
    decoding.provenance["recording"] = {**decoding.provenance["recording"], "sha256": sha256_file(small)}
    write_decoding(path_for(small), decoding)
    return small


def install(llama_build: Build, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[int]:
    """Builds 11192..11197: 11193 does not compile; from 11194 "Hello world" gets one more id, from 11196
    the empty input gets id 7. Returns the list of builds asked for, as they are asked."""
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(registry, "published_builds", lambda: [11190, 11192, 11193, 11194, 11195, 11196, 11197])
    provided: list[int] = []

    def provide(build: int, lock: Lock, **_: object) -> Build:
        provided.append(build)
        if build == 11193:
            raise TokconfError("building llama.cpp b11193 failed at `cmake --build` (log: …)")
        if lock.get(build) is None and build not in PINNED_SDIST_SHA256:  # as a real fetch: trust on first use
            lock.trust(build, hashlib.sha256(f"the fake sdist of b{build}".encode()).hexdigest())
        return dataclasses.replace(llama_build, build=build)

    monkeypatch.setattr(probe_module, "provide", provide)
    monkeypatch.setattr(probe_module, "recorded_vocab", lambda *_: llama_build.models_dir / "ggml-vocab-qwen2.gguf")
    real = LibllamaOracle.tokenize_many

    def tokenize_many(self: LibllamaOracle, requests: list[Request]) -> list[Outcome]:
        answers = real(self, requests)
        number = self.build.build
        changed = []
        for answer, (text, _, _) in zip(answers, requests, strict=True):
            hello = number >= 11194 and number != ONLY_EMPTY
            if isinstance(answer, list) and text == b"Hello world" and hello and answer[-1:] != [42]:
                answer = [*answer, 42]  # once: after a crash, the oracle asks the rest through this again
            if text == b"" and number >= 11196:
                answer = [7]
            changed.append(answer)
        return changed

    monkeypatch.setattr(LibllamaOracle, "tokenize_many", tokenize_many)
    return provided
