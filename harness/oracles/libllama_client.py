"""`LibllamaOracle`: the live llama.cpp for one vocabulary, crash-isolated in a worker process.

The worker calls llama_tokenize in-process through cffi, ~25,000 inputs/s. When llama.cpp aborts on
an input, the worker's fork server reports it and carries on (`tokconf.oracles.libllama_worker`); when the
worker hangs past the timeout or dies itself, it is killed and the next call starts a fresh one.
Either way that input's answer is a `Refusal` carrying the reason: one bad input never stops a
recording.
"""

from __future__ import annotations

import re
import shlex
import struct
from array import array
from collections.abc import Callable, Iterator
from itertools import accumulate, pairwise
from pathlib import Path
from typing import TypeVar

from ..builds.build import Build, build_dir
from ..builds.tokenizer_only import STUB_REACHED
from ..core import isolated
from ..core.errors import TokconfError
from ..core.facts import VocabFacts, facts_from_json
from ..core.outcome import Outcome, Refusal, RefusalKind, Request
from ..core.sandbox import Confiner
from ..core.supervisor import Framing, Program, ProgramExited, ProgramFailed, ProgramTimedOut
from ..core.timeouts import TimeoutOptions, Wait
from .bound import over_bound
from .crash import crash_reason

DEFAULT_TIMEOUT = 60.0  # seconds for each answer (a batch of inputs, or a 262k vocabulary's pieces)
DEFAULT_LOAD_TIMEOUT = 600.0  # seconds to start the worker and load one vocabulary
BATCH_COUNT = 256  # inputs per round trip
BATCH_BYTES = 1 << 20  # and about this much text
# The most one answer of the worker may take: it holds each of llama.cpp's answers to the bound
# (tokconf.oracles.bound), 4 × 4 bytes an input byte, and a batch is about BATCH_BYTES of text.
MAX_ANSWER = 1 << 30
STDERR_READ = 8192  # the end of the worker's standard error a crash's or a load failure's reason is read from
T = TypeVar("T")


class WorkerLost(Exception):
    """The worker ended on a request: `reason` as a recording holds it; `broken` when it was killed for
    not answering in time or for breaking its framing: not llama.cpp's answer, unlike a crash."""

    def __init__(self, reason: str, broken: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.broken = broken


class LoadHung(TokconfError):
    """The worker did not load the vocabulary as it must: no answer within the load timeout, or one that
    broke its framing. Not llama.cpp's answer (as a refusal is), so never judged as one."""


class StubReached(TokconfError):
    """A tokenizer-only libllama reached a function it has as a stub (tokconf.builds.tokenizer_only): the
    tree's tokenizer ran code the library was not made of, so what it did is not the tree's answer, and
    never judged as llama.cpp's abort or refusal."""


def _full_build_hint(build: Build) -> str:
    """The command that builds the full libllama in place of a tokenizer-only one, and where it lands."""
    if build.source.kind == "local-tree":
        command = f"tokconf llama local --tokenize {shlex.quote(build.source.origin)}"
        return f"check the full libllama: `{command}` builds it and prints its path"
    return f"check the full libllama: `tokconf llama build --build {build.build}` builds it in {build_dir(build.build)}"


class VocabRefused(TokconfError):
    """llama.cpp refused to load a vocabulary: `reason` in its own words, without the file's path, so a
    recording can hold it as every case's outcome (a pre name a build does not know, a broken vocab)."""

    def __init__(self, build: int, vocab: Path, reason: str, label: str | None = None) -> None:
        super().__init__(
            f"llama.cpp {label or f'b{build}'} could not load {vocab}: {reason}",
            "check that the file is a complete GGUF vocabulary (tokconf llama info lists the shipped ones)",
        )
        self.reason = reason


LOAD_ERROR = re.compile(r"(?:error loading model(?: vocabulary)?: )+(.+)")  # llama_model_load's log line


class LibllamaOracle:
    """llama_tokenize in a worker subprocess, restarted after every crash."""

    def __init__(
        self,
        build: Build,
        vocab: Path,
        timeout: float = DEFAULT_TIMEOUT,
        load_timeout: float = DEFAULT_LOAD_TIMEOUT,
        options: TimeoutOptions | None = None,
        confiner: Confiner | None = None,
    ) -> None:
        """`timeout`: seconds for each answer; `load_timeout`: for starting the worker and loading the
        vocabulary (a 262k-token one takes seconds, more on a loaded machine); `options`: the options
        that set them where the run was started, which a timeout's message names (none for the
        recorder, which sets neither); `confiner`: how the worker is held when the llama.cpp is the
        implementation under test (`tokconf.core.sandbox`), None when it is the oracle."""
        self.build = build
        self.vocab = vocab
        self.confiner = confiner
        self.answer_wait = Wait(timeout, options.answer if options else None)
        self.load_wait = Wait(load_timeout, options.load if options else None)
        self.restarts = 0
        self.crashes = 0
        self._program: Program | None = None
        self._start()

    def _start(self) -> None:
        """A fresh worker, its vocabulary loaded: the supervisor (`tokconf.core.supervisor`) holds it in a
        process group of its own, killed whole: the fork server's children go with it, and bubblewrap's
        child, killed with its parent before it is told to go on, would otherwise wait on its eventfd for
        ever, adopted by init."""
        args = ["--lib", str(self.build.libllama), "--header", str(self.build.llama_h), "--vocab", str(self.vocab)]
        for path in self.build.include_dirs:
            args += ["--include", str(path)]
        # isolated: no .pth file or PYTHON* variable reaches it
        command = isolated.command("tokconf.oracles.libllama_worker", args)
        # GGML_NO_BACKTRACE: on abort ggml would otherwise run gdb for a backtrace (~0.4 s a crash).
        env = {**isolated.environment(), "GGML_NO_BACKTRACE": "1"}
        program = Program(command, self.answer_wait.seconds, env, self.confiner, Framing.LENGTH, MAX_ANSWER)
        try:
            ready = program.receive(self.load_wait)
        except ProgramTimedOut:
            raise LoadHung(
                f"llama.cpp did not load {self.vocab} in time: no answer within {self.load_wait.describe()}",
                "raise the load timeout",
            ) from None
        except ProgramExited:
            raise VocabRefused(
                self.build.build, self.vocab, self._why_ended(program), self.build.source.label()
            ) from None
        except ProgramFailed as failure:  # alive, but it broke the framing: not llama.cpp's refusal
            raise LoadHung(
                f"llama.cpp's worker broke loading {self.vocab}: {failure}", "report this as a bug"
            ) from None
        except BaseException:  # an interrupt while it loads: nothing is left running
            program.end()
            raise
        if ready[:1] != b"R":
            program.end()
            said = LOAD_ERROR.findall(program.stderr.text(STDERR_READ))
            reason = (
                said[-1].strip() if said else ready[1:].decode(errors="replace").replace(str(self.vocab), "<vocab>")
            )
            raise VocabRefused(self.build.build, self.vocab, reason, self.build.source.label())
        self._program = program

    def _worker(self) -> Program:
        """The running worker, or a fresh one if the last ended."""
        if self._program is None:
            self.restarts += 1
            self._start()
        assert self._program is not None
        return self._program

    def _request(self, payload: bytes) -> bytes:
        """One round trip with the worker; `WorkerLost` when it fails (the supervisor has ended it by
        then). A worker found ended before the request was whole (it died idle, or said something
        unasked) did not die on this request: the request goes to a fresh worker, once."""
        program = self._worker()
        try:
            try:
                program.send(payload, self.answer_wait)
            except ProgramTimedOut:
                raise
            except ProgramFailed:  # it ended before the request was whole: not this request's doing
                self._program = None
                program = self._worker()
                program.send(payload, self.answer_wait)  # failing again: below
            answer = program.receive(self.answer_wait)
        except ProgramTimedOut:  # writing the request or reading its answer
            self._program = None
            raise WorkerLost(f"hang: no answer within {self.answer_wait.describe()}", broken=True) from None
        except ProgramExited:
            self._program = None
            raise WorkerLost(self._why_ended(program)) from None
        except ProgramFailed as failure:  # alive, but it broke the framing (the supervisor has ended it)
            self._program = None
            raise WorkerLost(f"llama.cpp's worker failed: {failure}", broken=True) from None
        if answer[:1] == b"S":  # a forked child reached a stub (`tokconf.oracles.libllama_worker`)
            raise self._stub_reached(answer[1:].decode(errors="replace"))
        return answer

    def _why_ended(self, program: Program) -> str:
        """Why the worker's process ended, as a recording holds it: llama.cpp's crash, read from its
        standard error and exit status; StubReached when tokconf's stub, not llama.cpp, ended it."""
        status = program.end()
        tail = program.stderr.text(STDERR_READ)
        stub = STUB_REACHED.search(tail)
        if stub:
            raise self._stub_reached(stub[1])
        return crash_reason(tail, status)

    def _stub_reached(self, function: str) -> StubReached:
        """A stub of the tokenizer-only library ended the worker or one of its children: no answer of
        llama.cpp's, whatever the input (an abort recorded from it would be tokconf's own)."""
        return StubReached(
            f"the tokenizer-only libllama of llama.cpp {self.build.source.label()} reached {function}, which it "
            f"has as a stub: the tree's tokenizer calls code outside the files it was made of, so its answer "
            f"(with {self.vocab.name}) is not the tree's",
            _full_build_hint(self.build),
        )

    def tokenize(self, data: bytes, add_special: bool, parse_special: bool) -> Outcome:
        return self.tokenize_many([(data, add_special, parse_special)])[0]

    def tokenize_many(self, requests: list[Request]) -> list[Outcome]:
        """Many inputs in few round trips; a batch that crashes is retried one input at a time."""
        outcomes: list[Outcome] = []
        for chunk in _batches(requests, lambda request: len(request[0])):
            answered, crashed = self._batch(chunk)
            if crashed and len(chunk) > 1:
                answered = [self.tokenize(*one) for one in chunk]
            elif crashed:
                self.crashes += 1
            outcomes.extend(answered)
        return outcomes

    def _batch(self, requests: list[Request]) -> tuple[list[Outcome], bool]:
        """One round trip: the outcomes, and whether the worker crashed (then all are that Refusal)."""
        parts = [b"M", struct.pack("<I", len(requests))]
        for data, add_special, parse_special in requests:
            parts.append(struct.pack("<BI", (1 if add_special else 0) | (2 if parse_special else 0), len(data)))
            parts.append(data)
        try:
            answer = self._request(b"".join(parts))
        except WorkerLost as lost:  # a hang is not llama.cpp's answer: never agreement with a recorded abort
            kind = RefusalKind.BROKEN if lost.broken else RefusalKind.REFUSED
            return [Refusal(lost.reason, kind)] * len(requests), True
        if answer[:1] == b"X":
            return [Refusal(answer[1:].decode())] * len(requests), True
        if answer[:1] != b"O":
            return [Refusal(answer[1:].decode(errors="replace"))] * len(requests), False
        outcomes: list[Outcome] = []
        pos = 1
        for data, _, _ in requests:
            (n,) = struct.unpack_from("<i", answer, pos)
            if n < 0:  # llama.cpp needed -n ids, more than the bound: none were sent
                outcomes.append(Refusal(f"llama.cpp {over_bound(-n, len(data))}", RefusalKind.BROKEN))
                pos += 4
                continue
            ids = array("i")
            ids.frombytes(answer[pos + 4 : pos + 4 + 4 * n])
            outcomes.append(ids.tolist())
            pos += 4 + 4 * n
        return outcomes, False

    def facts(self) -> VocabFacts:
        """The vocab's facts as llama.cpp reports them (see `libllama.Vocab.facts`)."""
        try:
            answer = self._request(b"F")
        except WorkerLost as lost:
            raise TokconfError(f"llama.cpp died reading the facts of {self.vocab}: {lost.reason}") from None
        return facts_from_json(answer[1:])

    def pieces(self, special: bool = True) -> list[bytes]:
        """llama_token_to_piece of every id (special=True renders control tokens' text)."""
        try:
            answer = self._request(b"P" + bytes([int(special)]))
        except WorkerLost as lost:
            raise TokconfError(f"llama.cpp died listing the pieces of {self.vocab}: {lost.reason}") from None
        if answer[:1] != b"O":  # `X`: llama.cpp aborted listing them; `E`: the worker says why it could not
            raise TokconfError(
                f"llama.cpp failed listing the pieces of {self.vocab}: {answer[1:].decode(errors='replace')}"
            )
        (count,) = struct.unpack_from("<I", answer, 1)
        lengths = array("I")
        lengths.frombytes(answer[5 : 5 + 4 * count])
        return [answer[start:end] for start, end in pairwise(accumulate(lengths, initial=5 + 4 * count))]

    def detokenize(self, ids: list[int], remove_special: bool = False, unparse_special: bool = False) -> bytes:
        """llama_detokenize of `ids`."""
        flags = (1 if remove_special else 0) | (2 if unparse_special else 0)
        try:
            answer = self._request(b"D" + bytes([flags]) + array("i", ids).tobytes())
        except WorkerLost as lost:
            raise TokconfError(f"llama.cpp died detokenizing with {self.vocab}: {lost.reason}") from None
        return answer[1:]

    def detokenize_many(self, requests: list[tuple[list[int], bool, bool]]) -> list[bytes]:
        """llama_detokenize of each request, many per round trip (a check's decoding section asks one
        per case: a round trip each cost more than the detokenizing)."""
        texts: list[bytes] = []
        for chunk in _batches(requests, lambda request: 4 * len(request[0])):
            parts = [b"N", struct.pack("<I", len(chunk))]
            for ids, remove_special, unparse_special in chunk:
                flags = (1 if remove_special else 0) | (2 if unparse_special else 0)
                parts.append(struct.pack("<BI", flags, len(ids)))
                parts.append(array("i", ids).tobytes())
            try:
                answer = self._request(b"".join(parts))
            except WorkerLost as lost:
                raise TokconfError(f"llama.cpp died detokenizing with {self.vocab}: {lost.reason}") from None
            if answer[:1] != b"O":
                raise TokconfError(
                    f"llama.cpp failed detokenizing with {self.vocab}: {answer[1:].decode(errors='replace')}"
                )
            pos = 1
            for _ in chunk:
                (size,) = struct.unpack_from("<I", answer, pos)
                texts.append(answer[pos + 4 : pos + 4 + size])
                pos += 4 + size
        return texts

    def close(self) -> None:
        """End the worker: its read loop ends at the end of its input, and what is left is killed."""
        program, self._program = self._program, None
        if program is not None:
            program.close()

    def __enter__(self) -> LibllamaOracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _batches(requests: list[T], size: Callable[[T], int]) -> Iterator[list[T]]:
    """`requests` in order, cut into round trips of at most BATCH_COUNT requests and about BATCH_BYTES."""
    start = 0
    while start < len(requests):
        end, total = start, 0
        while end < len(requests) and end - start < BATCH_COUNT and total < BATCH_BYTES:
            total += size(requests[end])
            end += 1
        yield requests[start:end]
        start = end
