"""`LibllamaOracle`: the live llama.cpp for one vocabulary, crash-isolated in a worker process.

The worker calls llama_tokenize in-process through cffi, ~25,000 inputs/s. When llama.cpp aborts on
an input, the worker's fork server reports it and carries on (`tokconf.oracles.worker`); when the
worker hangs past the timeout or dies itself, it is killed and the next call starts a fresh one.
Either way that input's answer is a `Refusal` carrying the reason: one bad input never stops a
recording.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shlex
import signal
import struct
import subprocess
import tempfile
import time
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
from ..core.sandbox import KEEPER_GRACE, Confiner
from ..core.timeouts import TimeoutOptions, Wait
from .bound import over_bound
from .crash import crash_reason

DEFAULT_TIMEOUT = 60.0  # seconds for each answer (a batch of inputs, or a 262k vocabulary's pieces)
DEFAULT_LOAD_TIMEOUT = 600.0  # seconds to start the worker and load one vocabulary
BATCH_COUNT = 256  # inputs per round trip
BATCH_BYTES = 1 << 20  # and about this much text
T = TypeVar("T")


class WorkerGone(Exception):
    """The worker closed its pipe or did not answer in time."""


class WorkerHung(WorkerGone):
    """The worker did not answer in time (it is alive, and is then killed)."""


class LoadHung(TokconfError):
    """The worker did not load the vocabulary within the load timeout: not llama.cpp's answer (as a
    refusal is), so never judged as one."""


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
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the oracle; closed in close())
        self._proc: subprocess.Popen[bytes] | None = None
        try:
            self._start()
        except BaseException:
            self._stderr.close()
            raise

    def _start(self) -> None:
        self._stderr.seek(0)
        self._stderr.truncate()
        args = ["--lib", str(self.build.libllama), "--header", str(self.build.llama_h), "--vocab", str(self.vocab)]
        for path in self.build.include_dirs:
            args += ["--include", str(path)]
        command = isolated.command("tokconf.oracles.worker", args)  # no .pth file or PYTHON* variable reaches it
        # GGML_NO_BACKTRACE: on abort ggml would otherwise run gdb for a backtrace (~0.4 s a crash).
        env = {**os.environ, **isolated.environment(), "GGML_NO_BACKTRACE": "1"}
        start = subprocess.Popen if self.confiner is None else self.confiner.popen
        # A group of its own, killed whole (`_kill`): bubblewrap's child, killed with its parent before it
        # is told to go on, would otherwise wait on its eventfd for ever, adopted by init.
        self._proc = start(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            bufsize=0,
            env=env,
            start_new_session=True,
        )
        try:
            ready = self._read(self.load_wait)
        except WorkerHung as hung:
            self._kill()
            raise LoadHung(f"llama.cpp did not load {self.vocab} in time: {hung}", "raise the load timeout") from None
        except WorkerGone as gone:
            raise VocabRefused(self.build.build, self.vocab, self._died(str(gone)), self.build.source.label()) from None
        if ready[:1] != b"R":
            self._kill()
            self._stderr.seek(0)
            said = LOAD_ERROR.findall(self._stderr.read()[-8192:].decode("utf-8", errors="replace"))
            reason = (
                said[-1].strip() if said else ready[1:].decode(errors="replace").replace(str(self.vocab), "<vocab>")
            )
            raise VocabRefused(self.build.build, self.vocab, reason, self.build.source.label())

    def _read_exact(self, size: int, wait: Wait) -> bytes:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        chunks: list[bytes] = []
        deadline = time.monotonic() + wait.seconds
        while size:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise WorkerHung(f"no answer within {wait.describe()}")
            chunk = os.read(fd, size)
            if not chunk:
                raise WorkerGone("worker exited")
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def _read(self, wait: Wait) -> bytes:
        (size,) = struct.unpack("<I", self._read_exact(4, wait))
        return self._read_exact(size, wait)

    def _request(self, payload: bytes) -> bytes:
        if self._proc is None:
            self.restarts += 1
            self._start()
        assert self._proc is not None and self._proc.stdin is not None
        frame = memoryview(struct.pack("<I", len(payload)) + payload)
        try:
            # The pipe is unbuffered: a signal with a handler (or a stop: Ctrl-Z, a profiler's ptrace)
            # can end write() after part of a frame.
            while frame:
                written = self._proc.stdin.write(frame)
                if not written:
                    raise WorkerGone("its input took no bytes")
                frame = frame[written:]
        except BrokenPipeError:
            raise WorkerGone("worker exited") from None
        return self._read(self.answer_wait)

    def _died(self, why: str) -> str:
        """Why the worker died, as a recording holds it; StubReached when tokconf's stub, not llama.cpp,
        ended it."""
        returncode = self._kill()
        self._stderr.seek(0)
        tail = self._stderr.read()[-8192:].decode("utf-8", errors="replace")
        if why.startswith("no answer"):
            return f"hang: {why}"
        stub = STUB_REACHED.search(tail)
        if stub:
            raise StubReached(
                f"the tokenizer-only libllama of llama.cpp {self.build.source.label()} reached {stub[1]}, which it "
                f"has as a stub: the tree's tokenizer calls code outside the files it was made of, so its answer "
                f"(with {self.vocab.name}) is not the tree's",
                _full_build_hint(self.build),
            )
        return crash_reason(tail, returncode)

    def _kill(self) -> int | None:
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.poll() is None and self.confiner is not None and not self.confiner.sandboxed:
            proc.terminate()  # a keeper ends what it holds on SIGTERM, and cannot on SIGKILL
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(KEEPER_GRACE)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the group: a fork server's children, bubblewrap's own
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()
        status = proc.wait()
        return status if self.confiner is None else self.confiner.status(status)

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
        except WorkerHung as hung:  # not llama.cpp's answer: never agreement with a recorded abort
            return [Refusal(self._died(str(hung)), RefusalKind.BROKEN)] * len(requests), True
        except WorkerGone as gone:
            return [Refusal(self._died(str(gone)))] * len(requests), True
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
        except WorkerGone as gone:
            raise TokconfError(f"llama.cpp died reading the facts of {self.vocab}: {self._died(str(gone))}") from None
        return facts_from_json(answer[1:])

    def pieces(self, special: bool = True) -> list[bytes]:
        """llama_token_to_piece of every id (special=True renders control tokens' text)."""
        try:
            answer = self._request(b"P" + bytes([int(special)]))
        except WorkerGone as gone:
            raise TokconfError(f"llama.cpp died listing the pieces of {self.vocab}: {self._died(str(gone))}") from None
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
        except WorkerGone as gone:
            raise TokconfError(f"llama.cpp died detokenizing with {self.vocab}: {self._died(str(gone))}") from None
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
            except WorkerGone as gone:
                raise TokconfError(f"llama.cpp died detokenizing with {self.vocab}: {self._died(str(gone))}") from None
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
        proc = self._proc
        if proc is not None:
            assert proc.stdin is not None
            proc.stdin.close()  # the worker's read loop ends at end of input
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            self._kill()
        self._stderr.close()

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
