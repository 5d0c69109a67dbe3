"""`llama.cpp@N` and `llama.cpp:PATH`: a live llama.cpp as the implementation under test,
crash-isolated as in recording: another published build (upgrade regressions), or a llama.cpp of the
user's own, a libllama.so or a source tree (tokconf.builds.local: a vendored, patched copy, a branch),
to see whether it still answers as the recordings say."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..builds.build import Build
from ..builds.local import local_build
from ..core.errors import TokconfError
from ..core.facts import ExposedFacts, Fact
from ..core.outcome import Outcome, Request
from ..core.sandbox import DEFAULT_POLICY, Confiner
from ..core.timeouts import CLI_TIMEOUTS, TimeoutOptions
from ..oracles.libllama_client import DEFAULT_LOAD_TIMEOUT, DEFAULT_TIMEOUT, LibllamaOracle, LoadHung, VocabRefused
from ..oracles.probe import LibraryInfo, probe_library
from .base import Broken, Decoder, LoadRefused, Session, VocabInfo


class LlamaCppSession:
    max_input_bytes: int | None = None  # llama.cpp declines nothing

    def __init__(self, oracle: LibllamaOracle) -> None:
        self.oracle = oracle
        self._facts = oracle.facts()

    def encode_many(self, requests: list[Request], llama_aborts: frozenset[int] = frozenset()) -> list[Outcome]:
        """A crash is that input's refusal (its abort reason), the worker restarted, whatever the recording."""
        return self.oracle.tokenize_many(requests)

    def decoder(self) -> Decoder | None:
        return self.oracle

    def facts(self) -> ExposedFacts:
        return {fact: fact.recorded(self._facts) for fact in Fact}

    def close(self) -> None:
        self.oracle.close()


@dataclass(frozen=True)
class Limits:
    """The `--timeout` and `--load-timeout` a check gave (None: the live worker's own defaults, which
    allow a 262k vocabulary's pieces on a loaded machine), and the options that set them there."""

    timeout: float | None = None
    load_timeout: float | None = None
    options: TimeoutOptions = CLI_TIMEOUTS


class LlamaCppImplementation:
    """A live llama.cpp, one worker per vocabulary, each held as `confiner` says (a user's library runs
    its own code from the moment it is loaded). `library` is what a local one says about itself (None
    for a published build, whose number says it all)."""

    contained = True  # libllama runs in a worker process

    def __init__(
        self, build: Build, name: str, library: LibraryInfo | None = None, limits: Limits | None = None,
        confiner: Confiner | None = None,
    ) -> None:  # fmt: skip
        """`confiner`: default, `--sandbox auto`'s."""
        self.build = build
        self.name = name
        self.confiner = confiner or DEFAULT_POLICY.confiner()
        self.library = library
        self.limits = limits or Limits()

    def open(self, vocab: VocabInfo) -> Session:
        """A worker for the vocabulary. One this build refuses to load (`llama_model_load` fails: a pre
        name it does not know) is `LoadRefused` with llama.cpp's reason: that agrees with a recording of
        the same refusal, and fails against one that loaded (the check engine)."""
        try:
            oracle = LibllamaOracle(self.build, vocab.path, self.limits.timeout or DEFAULT_TIMEOUT,
                                    self.limits.load_timeout or DEFAULT_LOAD_TIMEOUT, self.limits.options,
                                    self.confiner)  # fmt: skip
        except VocabRefused as refused:  # the worker closes itself on a refusal
            # llama.cpp's reason alone: where it is shown (a check's reason, identify's sample lines, one
            # a case) the implementation is named already, and a local one's name is a paragraph long.
            raise LoadRefused(refused.reason) from None
        except LoadHung as hung:  # not llama.cpp's answer: every case of the vocabulary an error
            raise Broken(hung.problem) from None
        try:
            return LlamaCppSession(oracle)
        except TokconfError as failed:  # the facts request hung or died: the vocabulary's cases are errors
            oracle.close()
            raise Broken(failed.problem) from None

    def close(self) -> None:
        """Each session owns its worker."""


def published(made: Build, limits: Limits, confiner: Confiner) -> LlamaCppImplementation:
    """`llama.cpp@N`: build N's tokenizer-only libllama as `tokconf.builds.provide` made or found it, its
    tree verified (all it calls is the vocabulary's functions; tests/test_tokenizer_build.py proves it
    answers as the full build), or the full libllama where the tokenizer-only one cannot be built for
    that tree (tokconf.builds.build says so)."""
    return LlamaCppImplementation(made, f"llama.cpp@{made.build}", limits=limits, confiner=confiner)


def local(path: Path, limits: Limits, confiner: Confiner) -> LlamaCppImplementation:
    """`llama.cpp:PATH`: the user's libllama.so, or their source tree built in the cache, probed before
    any vocabulary (a library that cannot load is an error, never a vocabulary llama.cpp refuses). Its
    name carries the provenance: what the check table's title and a fuzz finding's campaign say."""
    made = local_build(path)
    library = probe_library(made, confiner=confiner)
    name = f"llama.cpp:{path} ({made.source.identity()}, {library.describe()})"
    return LlamaCppImplementation(made, name, library, limits, confiner)
