"""What `import tokconf` offers (tokconf/__init__.py re-exports it): a check as one call, the bundled
vocabularies and recordings by name, and the live llama.cpp as an object a port's own tests can ask.

Everything here is a thin layer over the stages below it, so the command line, the pytest plugin and
a port's Python code reach the same verdicts by the same code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from .builds.build import require_build
from .builds.pins import DEFAULT_BUILD
from .checking.contract import DEFAULT_GRANTS, DEFAULT_MIN_COVERAGE, Claim, Gate, grants_of
from .checking.engine import Selection
from .checking.run import CheckRun, check_paths
from .checking.xfail import ExpectedFailures
from .core.errors import TokconfError
from .core.facts import VocabFacts
from .core.files import BUNDLED_RECORDINGS, recordings_arg
from .core.outcome import InputClass, Outcome, Refusal, Request
from .core.sandbox import SandboxPolicy
from .core.timeouts import API_TIMEOUTS
from .implementations.base import Implementation, Refused, Tokenizer
from .implementations.python import PythonImplementation
from .implementations.resolve import contained_factory
from .oracles.libllama_client import LibllamaOracle
from .synth.files import gguf_of

Factory = Callable[[Path], Tokenizer]  # a port's loader: the GGUF file's path in, a tokenizer out


def check(
    impl: str | Factory,
    recordings: str | Path | Sequence[str | Path] | None = None,
    *,
    vocabs: Iterable[str] = (),
    modes: Iterable[str] = (),
    cases: Iterable[str] = (),
    claims: Iterable[str] = (),
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    strict: bool = False,
    xfail: Path | None = None,
    strict_xfail: bool = False,
    vocab_dir: Path | None = None,
    timeout: float | None = None,
    maxfail: int | None = None,
    explain: bool = False,
    jobs: int = 1,
    progress: Callable[[str], None] | None = None,
    load_timeout: float | None = None,
    in_process: bool = False,
    sandbox: str = "auto",
    sandbox_write: Iterable[str | Path] = (),
    sandbox_network: bool = False,
    allow_decline: str | Iterable[str | InputClass] | None = None,
) -> CheckRun:
    """Check an implementation against recordings, as `tokconf check` does, and return the run as
    data: `run.decision.passed` is the verdict contract's PASS (docs/checking.md), `run.results` every
    case's verdict, `run.summary.counts` the table, `run.causes` what `explain` found.

    `impl` is an `--impl` value: `"mypkg.tok:load"` (imported and called in worker processes only,
    each in a bubblewrap sandbox), `"cmd:PROGRAM ARGS"`, `"llama.cpp@11192"`, `"reference"`; or a
    factory (`load(path) -> tokenizer`, see `Tokenizer`), called in this process forked, once per
    vocabulary: bubblewrap cannot enter a forked process, so such a run is kept by a subreaper, not
    sandboxed, and says NOT SANDBOXED (name it as `"module:factory"` to sandbox it).
    `recordings`: files or folders (default: the bundled b11192 set; `"bundled"` names it too).
    The keyword arguments are `tokconf check`'s options of the same names (`vocabs` is `--vocab`,
    `claims` is `--claim`, `min_coverage` a fraction, `allow_decline` is `--allow-decline`: class names
    or `InputClass`es, a comma list, or `"none"`; None grants invalid-utf8 and nul, `()` nothing;
    `run.decision.grants` lists each granted class with its declines; `jobs` processes apply to an
    `--impl` value without `maxfail`; `in_process` calls a port in this process, for debugging: it can
    then change the run, and `run.decision.contained` is False; `sandbox` is `--sandbox`: "auto",
    "bwrap" or "off"). Bad input (a missing vocabulary file, a corrupt recording, a factory that is not
    callable) raises `TokconfError` with what to do. Nothing a port raises, returns or does to its
    process makes a run pass by accident."""
    given = [recordings] if isinstance(recordings, (str, Path)) else list(recordings or [])
    paths = [recordings_arg(str(p)) for p in given] or [BUNDLED_RECORDINGS]
    claim = Claim(tuple(claims), min_coverage)
    selection = Selection(frozenset(vocabs), frozenset(modes), frozenset(cases), claim=claim)
    xfails = ExpectedFailures.load(xfail)
    implementation = impl if isinstance(impl, str) else _from_factory(impl, timeout, load_timeout, in_process)
    gate = Gate(claim, strict, strict_xfail, granted=_granted(allow_decline))
    policy = SandboxPolicy.of(sandbox, [Path(folder) for folder in sandbox_write], sandbox_network)
    return check_paths(paths, implementation, selection, xfails, vocab_dir, timeout, progress or _quiet, maxfail,
                       explain, gate, jobs, load_timeout, in_process, API_TIMEOUTS, policy)  # fmt: skip


def _granted(allow_decline: str | Iterable[str | InputClass] | None) -> frozenset[InputClass]:
    """`check`'s `allow_decline` as the classes it grants, checked as `--allow-decline` is."""
    if allow_decline is None:
        return DEFAULT_GRANTS
    given = [allow_decline] if isinstance(allow_decline, str) else [
        c.value if isinstance(c, InputClass) else c for c in allow_decline]  # fmt: skip
    try:
        return grants_of(given) if given else frozenset()
    except ValueError as error:
        raise TokconfError(f"check: allow_decline: {error}", "e.g. allow_decline=['invalid-utf8', 'nul']") from None


def _quiet(line: str) -> None:
    """A library call prints no progress unless asked to."""


def _from_factory(
    factory: Factory, timeout: float | None, load_timeout: float | None, in_process: bool
) -> Implementation:
    """A factory object: served by this process forked, one fork per vocabulary (its module is already
    imported here, by the caller, but its calls then cannot reach the verdict), or called here."""
    if not callable(factory):
        raise TokconfError(f"check: {factory!r} is neither an --impl value nor a factory", "pass load, not load()")
    name = f"{getattr(factory, '__module__', '?')}:{getattr(factory, '__qualname__', type(factory).__name__)}"
    if in_process:
        return PythonImplementation(name, factory, contained=False)
    return contained_factory(name, factory, timeout, load_timeout, API_TIMEOUTS)


def bundled_recordings(build: int | None = None) -> Path:
    """The folder of recordings installed with tokconf (llama.cpp b11192, its 19 test vocabularies
    and the synthetic ones); `tokconf check` checks them by default, and the name `bundled` says
    them on any command line."""
    if build not in (None, DEFAULT_BUILD):
        raise TokconfError(
            f"tokconf bundles the recordings of b{DEFAULT_BUILD} only, not b{build}",
            f"record them: tokconf record --build {build}",
        )
    return BUNDLED_RECORDINGS


class Oracle:
    """The live llama.cpp for one vocabulary: libllama in a worker process, so an input on which it
    aborts (b11192: `f4 90 80 80`) costs that input, never the caller's process. Made by `oracle()`."""

    def __init__(self, backend: LibllamaOracle) -> None:
        self._backend = backend
        self._closed = False
        self._pieces: dict[bool, list[bytes]] = {}
        self.vocab: Path = backend.vocab
        self.build: int = backend.build.build

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        """`llama_tokenize` of the bytes; `Refused` where llama.cpp refuses or aborts."""
        (outcome,) = self.encode_many([(data, add_special, parse_special)])
        return _ids(outcome)

    def encode_many(self, requests: Sequence[Request]) -> list[Outcome]:
        """Many inputs in one round trip (~25,000 a second): each answer is ids or a `tokconf.Refusal`,
        which says why llama.cpp gave none."""
        if self._closed:
            raise TokconfError("this oracle is closed", "ask it inside its `with tokconf.oracle(...)` block")
        return self._backend.tokenize_many(list(requests))

    @property
    def facts(self) -> VocabFacts:
        """The vocabulary's facts as llama.h reports them, a dict: `n_tokens`, `add_bos`,
        `special_ids["bos"]`, `eog_ids`, ..."""
        return self._backend.facts()

    def token_to_piece(self, token: int, special: bool = True) -> bytes:
        """`llama_token_to_piece` of one id (every id's piece is asked once, in one round trip)."""
        if special not in self._pieces:
            self._pieces[special] = self._backend.pieces(special)
        return self._pieces[special][token]

    def detokenize(self, ids: list[int], remove_special: bool = False, unparse_special: bool = False) -> bytes:
        """`llama_detokenize`."""
        return self._backend.detokenize(ids, remove_special, unparse_special)

    def close(self) -> None:
        self._closed = True
        self._backend.close()


def _ids(outcome: Outcome) -> list[int]:
    if isinstance(outcome, Refusal):
        raise Refused(outcome.reason)
    return outcome


@contextmanager
def oracle(vocab: str | Path, build: int | None = None) -> Iterator[Oracle]:
    """The live llama.cpp of build `build` (default: the pinned b11192, built by `bash setup.sh` or
    `tokconf llama build`) for a vocabulary (a name `vocab_path` knows, or a GGUF file), closed on
    leaving the block::

        with tokconf.oracle("qwen2") as llama:
            llama.encode(b"Hello", add_special=False, parse_special=True)
    """
    number = build or DEFAULT_BUILD
    path = gguf_of(vocab, number)
    if not path.is_file():
        raise TokconfError(f"vocabulary file {path} does not exist", "give a GGUF file or a vocabulary name")
    live = Oracle(LibllamaOracle(require_build(number, tokenize=False), path))  # a refused file fails here
    try:
        yield live
    finally:
        live.close()
