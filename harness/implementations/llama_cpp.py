"""`llama.cpp@N`: a live llama.cpp build as the implementation under test, crash-isolated as in
recording, to see whether another build still answers as the recordings say (upgrade regressions)."""

from __future__ import annotations

from ..core.facts import ExposedFacts, Fact
from ..core.outcome import Outcome, Request
from ..llama.build import require_build
from ..oracle.client import LibllamaOracle
from .base import Decoder, Session, VocabInfo


class LlamaCppSession:
    def __init__(self, oracle: LibllamaOracle) -> None:
        self.oracle = oracle
        self._facts = oracle.facts()

    def encode_many(self, requests: list[Request]) -> list[Outcome]:
        return self.oracle.tokenize_many(requests)

    def decoder(self) -> Decoder | None:
        return self.oracle

    def facts(self) -> ExposedFacts:
        return {fact: fact.recorded(self._facts) for fact in Fact}

    def close(self) -> None:
        self.oracle.close()


class LlamaCppImplementation:
    """A live build, one worker per vocabulary."""

    def __init__(self, build: int) -> None:
        self.build = require_build(build, tokenize=False)  # libllama is all it uses (a bisect builds no more)
        self.name = f"llama.cpp@{build}"

    def open(self, vocab: VocabInfo) -> Session:
        return LlamaCppSession(LibllamaOracle(self.build, vocab.path))

    def close(self) -> None:
        """Each session owns its worker."""
