"""`cmd:PROGRAM ARGS…`: a tokenizer in any language, over JSON lines (docs/line-protocol.md).

Each vocabulary is checked by a fresh process of the program (`tokconf.core.supervisor`),
spoken to in typed messages (`tokconf.implementations.protocol`), so what one vocabulary leaves behind
in the program cannot change another's answers, however the run is scheduled (`--jobs`, pytest-xdist);
`tokconf.checking.interleave` then loads several into one process, on purpose, to catch exactly that.
Anything it does wrong — crash, hang past the per-answer timeout, a line that is not JSON, an answer
for another request, a line nobody asked for — becomes that case's error with what it said, and the
program is restarted (and the vocabulary reloaded) for the next case; a vocabulary whose cases keep
breaking it is given up on (`Breakage`).

Protocol 2 adds what protocol 1 programs could not be checked on: the vocab facts (`facts`) and
decoding (`token_to_piece`, `detokenize`), each declared by the program when it loads a vocabulary;
and `encode_batch` for a program that declares it (tokconf's Python worker does): many inputs in one
request line, answered one line each, each within its own timeout, so a batch costs no round trips
and still finds the input that hangs or crashes. A program that answers the handshake without
`"protocol": 2` is spoken to in protocol 1.
"""

from __future__ import annotations

import functools
import itertools
import shlex
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..core.errors import TokconfError
from ..core.facts import ExposedFacts
from ..core.outcome import Outcome, Refusal, RefusalKind, Request
from ..core.sandbox import DEFAULT_POLICY, Confiner
from ..core.supervisor import Program, ProgramExited, ProgramFailed, ProgramTimedOut
from ..core.timeouts import CLI_TIMEOUTS, TimeoutOptions, Wait
from .base import Broken, Decoder, Detokenize, LoadRefused, Session, Unsupported, VocabInfo
from .protocol import (
    DECODING_OPS,
    HANDLE,
    PROTOCOL,
    BadAnswer,
    Facts,
    Fault,
    Hello,
    HelloRefused,
    LoadDeclined,
    Loaded,
    Op,
    OutOfStep,
    Refuses,
    answer_to,
    batch_fields,
    detokenize_fields,
    encode_fields,
    encode_outcome,
    load_fields,
    parse_encode,
    parse_load,
    parse_pieces,
    parse_text,
    request_line,
)

GIVE_UP_BROKEN = 5  # a vocabulary is given up on when this many of its recent requests broke the program...
GIVE_UP_WINDOW = 20  # ...among its last this many (so also after 5 in a row)
SLOW_INPUT_BYTES = 1024  # a timeout on an input this long is slowness, that case's error, not breakage
PIECES_PER_REQUEST = 4096
BATCH = 256  # inputs per encode_batch request: few round trips, and a crash costs a restart, not the batch
IN_FLIGHT = 2  # batches sent before their answers are read
PROGRESS_SECONDS = 5.0
DEFAULT_TIMEOUT = 10.0  # seconds for each answer, when no --timeout is given
HANDSHAKE_HELP = "see docs/line-protocol.md, section 1"
DEFAULT_LOAD_TIMEOUT = 600.0  # seconds to start and load one vocabulary (262k tokens, a loaded machine)

T = TypeVar("T")


@dataclass
class Breakage:
    """Which of a vocabulary's last `GIVE_UP_WINDOW` requests broke the program (cost a restart).
    Counting over a window, not only in a row, stops a program that breaks on every other input from
    being restarted thousands of times; an answer that is merely wrong, or a `fault`, is in step and
    costs nothing, so it is not counted, and neither is a death on an input llama.cpp aborts on (the
    recording says so): that is agreement, a binding's llama.cpp aborting as llama.cpp does."""

    recent: deque[bool] = field(default_factory=lambda: deque(maxlen=GIVE_UP_WINDOW))

    def note(self, broke: bool) -> None:
        self.recent.append(broke)

    @property
    def exhausted(self) -> bool:
        return sum(self.recent) >= GIVE_UP_BROKEN

    def given_up(self, last: str) -> str:
        """The reason every remaining case of the vocabulary is an error."""
        in_a_row = next((n for n, broke in enumerate(reversed(self.recent)) if not broke), len(self.recent))
        where = "in a row" if in_a_row >= GIVE_UP_BROKEN else f"in its last {len(self.recent)} requests"
        why = f"given up after {sum(self.recent)} failures {where}, the last: {last}"
        if "not JSON" in last or "nobody asked for" in last:
            why += " (the program writes other lines on stdout: stdout is for protocol answers only, log to stderr)"
        return why


class DecodingFailed(Exception):
    """The program did not decode as asked (an error or fault answer, a wrong one, or it broke): the
    decoding check is an error."""


@dataclass(frozen=True)
class Launcher:
    """How to start the program: a command line (with extra environment), or, for a Python object
    that cannot be named in a fresh interpreter, this process forked into `target`; either confined
    as `confiner` says (`tokconf.core.sandbox`: a bubblewrap sandbox, or a keeper)."""

    argv: tuple[str, ...]
    confiner: Confiner
    env: Mapping[str, str] | None = None
    target: Callable[[], int] | None = None
    label: str | None = None  # what messages call it (a worker: its --impl value), else its command line

    def start(self, timeout: float) -> Program:
        if self.target is not None:
            return Program.forked(self.argv[0], self.target, timeout)
        return Program(list(self.argv), timeout, self.env, self.confiner)

    @property
    def shown(self) -> str:
        return self.label or shlex.join(self.argv)


class Conversation:
    """One running process of the program, greeted: its pipes, its request ids and its handshake.
    Starting and the handshake have the load timeout (an interpreter and its imports), every other
    answer the per-answer one. The handshake's answer is read at once, or (`greeted=False`) when it is
    first needed, so the program can start while tokconf reads the recordings. ProgramFailed,
    BadAnswer or HelloRefused when the handshake fails (the process has then ended)."""

    def __init__(self, launcher: Launcher, answer: Wait, load: Wait, greeted: bool = True) -> None:
        self.answer_wait, self.load_wait = answer, load
        self.program = launcher.start(answer.seconds)
        self._ids = itertools.count()
        self._hello: Hello | None = None
        try:
            self._hello_id = self.send(Op.HELLO, {"protocol": PROTOCOL}, load)
        except ProgramFailed:
            self.program.end()
            raise
        if greeted:
            _ = self.hello

    @property
    def hello(self) -> Hello:
        if self._hello is None:
            try:
                self._hello = Hello.parse(self.receive(self._hello_id, self.load_wait))
            except (ProgramFailed, BadAnswer, HelloRefused):
                self.program.end()
                raise
        return self._hello

    def exchange(self, op: Op, fields: Mapping[str, Any], wait: Wait | None = None) -> dict[str, Any]:
        request_id = self.send(op, fields, wait)
        return self.receive(request_id, wait)

    def send(
        self, op: Op, fields: Mapping[str, Any], wait: Wait | None = None, answers: int = 1, pending: bool = False
    ) -> int:
        """Write a request that `answers` lines answer; the id of the first (the next ones follow).
        `pending`: answers to earlier requests are still to be read (`Program.send`)."""
        request_id = next(self._ids)
        for _ in range(answers - 1):
            next(self._ids)
        self.program.send(request_line(request_id, op, fields), wait or self.answer_wait, pending)
        return request_id

    def receive(self, request_id: int, wait: Wait | None = None) -> dict[str, Any]:
        line = self.program.receive(wait or self.answer_wait)
        try:
            return answer_to(line, request_id)
        except OutOfStep as lost:
            self.program.end()
            raise ProgramFailed(str(lost)) from None

    @property
    def running(self) -> bool:
        return self.program.running

    @property
    def closing(self) -> bool:
        return self.program.closing

    def close(self) -> None:
        self.program.close()

    def close_soon(self) -> None:
        self.program.close_soon()


class CommandSession:
    """One vocabulary loaded into a process of the program of its own; the process is restarted after
    any failure, and given up on (its remaining cases errors, with the reason once) when `Breakage` is
    exhausted. Closing the session ends the process."""

    def __init__(
        self,
        owner: CommandImplementation,
        vocab: VocabInfo,
        conversation: Conversation,
        keep: Callable[[Conversation], None] | None = None,
        handle: int | None = None,
    ) -> None:
        """`keep`: given the process at the end instead of ending it (`SharedProcess`). `handle`: the
        vocabulary's name in a process that holds several at once, sent with every request for it."""
        self.owner = owner
        self.vocab = vocab
        self.conversation = conversation
        self.keep = keep
        self.handle = handle
        self.dead: str | None = None  # why no more is asked: every later case is an error with it
        self.breakage = Breakage()
        self.loaded = Loaded()

    @property
    def max_input_bytes(self) -> int | None:
        return self.loaded.max_bytes if self.loaded.max_bytes is not None else self.owner.hello.max_bytes

    def addressed(self, fields: Mapping[str, Any]) -> Mapping[str, Any]:
        """A request's fields, with the vocabulary's handle where its process holds several at once."""
        return fields if self.handle is None else {**fields, HANDLE: self.handle}

    def load(self) -> None:
        """Load the vocabulary: Unsupported when the program declines it (LoadRefused when the program
        is llama.cpp), Broken when it breaks or names another vocabulary."""
        name = self.vocab.path.name
        try:
            fields = self.addressed(load_fields(self.vocab, self.owner.protocol))
            answer = parse_load(self.conversation.exchange(Op.LOAD, fields, self.conversation.load_wait),
                                self.owner.protocol)  # fmt: skip
        except ProgramFailed as failure:
            raise Broken(f"the program failed loading {name}: {failure}") from None
        except BadAnswer as bad:
            raise Broken(f"loading {name}: {bad}") from None
        if isinstance(answer, LoadDeclined):
            raise (LoadRefused if self.owner.hello.llama_cpp or answer.load_refused else Unsupported)(answer.reason)
        if isinstance(answer, Fault):
            raise Broken(answer.reason)
        if differences := answer.differences(self.vocab):
            raise Broken(f"vocabulary mismatch: the program loaded another vocabulary than {name}: "
                         + ", ".join(differences))  # fmt: skip
        self.loaded = answer

    def ask(self, op: Op, fields: Mapping[str, Any], llama_aborts: bool = False, size: int = 0) -> dict[str, Any]:
        """One request for this vocabulary. A failure (the process has ended) restarts it and reloads
        the vocabulary, or gives up on the vocabulary, and is raised as ProgramFailed. `llama_aborts`:
        the recording holds llama.cpp's abort for this input, so a process that dies on it agrees with
        llama.cpp: it is restarted, and not counted toward the give-up. A timeout on an input of at
        least `SLOW_INPUT_BYTES` (`size`) is the port being slow there (a WordPiece cubic in a word's
        length): that case's error, saying which `--timeout` would do, not counted either; a program
        hanging on short inputs still is."""
        if self.dead is None and not self.conversation.running:  # a process shared by handles ended on
            self._restart()  # another vocabulary's request: this one's answers start again in a new one
        if self.dead is not None:
            raise ProgramFailed(self.dead)
        try:
            answer = self.conversation.exchange(op, self.addressed(fields))
        except ProgramExited as died:
            if not llama_aborts:
                self._broke(died)
                raise
            self.breakage.note(False)
            self._restart()
            raise
        except ProgramTimedOut as slow:
            if size < SLOW_INPUT_BYTES:
                self._broke(slow)
                raise
            self.breakage.note(False)
            self._restart()
            raise ProgramTimedOut(
                f"{slow} on an input of {size} bytes: slow there, not broken (not counted toward giving up "
                "the vocabulary); a longer --timeout SECONDS lets it finish"
            ) from None
        except ProgramFailed as failure:
            self._broke(failure)
            raise
        self.breakage.note(False)
        return answer

    def _broke(self, failure: ProgramFailed) -> None:
        """The process ended on a request: count it, then give up or start again."""
        self.breakage.note(True)
        if self.breakage.exhausted:
            self.dead = self.breakage.given_up(str(failure))
            return
        self._restart()

    def _restart(self) -> None:
        """A new process with the vocabulary loaded, or the reason it cannot be (`dead`)."""
        try:
            self.conversation = self.owner.start()
        except ProgramFailed as again:
            self.dead = f"the program could not be restarted: {again}"
            return
        try:
            self.load()
        except (Unsupported, Broken) as why:  # it loaded the vocabulary before, and now does not
            self.dead = f"after a restart, the program did not load {self.vocab.path.name}: {why}"

    def _outcome(self, answer: dict[str, Any], request: Request) -> Outcome:
        return encode_outcome(parse_encode(answer, self.owner.protocol, len(request[0])), self.owner.hello.unsupported)

    def encode_one(self, request: Request, llama_aborts: bool = False) -> Outcome:
        """One input's answer; a process that died on it is `DIED` (agreement where llama.cpp aborts)."""
        try:
            answer = self.ask(Op.ENCODE, encode_fields(request), llama_aborts, len(request[0]))
            return self._outcome(answer, request)
        except ProgramExited as died:
            return Refusal(str(died), RefusalKind.DIED)
        except (ProgramFailed, BadAnswer) as failure:
            return Refusal(str(failure), RefusalKind.BROKEN)

    def ask_batches(self, op: Op, requests: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """The answers to `requests` (each a request's fields) of a batch op, `BATCH` a line."""
        batches = [requests[start : start + BATCH] for start in range(0, len(requests), BATCH)]
        return self.ask_lines([(op, {"requests": batch}, len(batch)) for batch in batches])

    def ask_lines(self, lines: list[tuple[Op, dict[str, Any], int]]) -> Iterator[dict[str, Any]]:
        """The answers to request lines (op, fields, how many answers), `IN_FLIGHT` lines sent ahead,
        each answer as it comes; a failure is raised as DecodingFailed once the process was restarted
        (a decoding check fails whole)."""
        if self.dead is not None:
            raise DecodingFailed(self.dead)
        todo = deque(lines)
        sent: deque[tuple[int, int]] = deque()  # (first id, count) of each line in flight
        try:
            while todo or sent:
                while todo and len(sent) < IN_FLIGHT:
                    op, fields, count = todo.popleft()
                    first = self.conversation.send(op, self.addressed(fields), answers=count, pending=bool(sent))
                    sent.append((first, count))
                first, count = sent.popleft()
                for index in range(count):
                    yield self.conversation.receive(first + index)
                    self.breakage.note(False)
        except ProgramFailed as failure:
            self._broke(failure)
            raise DecodingFailed(str(failure)) from None

    def encode_batches(self, requests: list[Request], llama_aborts: frozenset[int] = frozenset()) -> list[Outcome]:
        """The answers to `requests`, `BATCH` inputs a request line, the next batch sent before the
        answers to the last are read (`IN_FLIGHT` at a time), so the program need not wait on tokconf
        judging. A program may hold a batch's answers back a moment (tokconf's worker writes them out
        every few hundredths of a second), so where its process ends (a crash, a hang) the first answer
        missing need not be the input that ended it: the process is started again and the rest of that
        batch asked one input at a time, which finds it and counts it toward the give-up, as if the
        batch had never been; the batches after it are sent again. A process that exited while an input
        llama.cpp aborts on (`llama_aborts`, indices into `requests`) was in flight is not counted for
        the batch: asked alone, that input's death agrees with llama.cpp, and any other's counts."""
        out: list[Outcome] = []
        todo = deque((start, min(start + BATCH, len(requests))) for start in range(0, len(requests), BATCH))
        sent: deque[tuple[int, int, int]] = deque()  # (first id, start, end) of each batch in flight
        written = 0  # the end of the last batch written to this process
        progress = Progress(self)
        while todo or sent:
            if self.dead is not None:
                return out + [Refusal(self.dead, RefusalKind.BROKEN)] * (len(requests) - len(out))
            try:
                while todo and len(sent) < IN_FLIGHT:
                    start, written = todo[0]
                    batch = self.addressed(batch_fields(requests[start:written]))
                    first = self.conversation.send(Op.ENCODE_BATCH, batch, answers=written - start, pending=bool(sent))
                    sent.append((first, *todo.popleft()))
                first, start, end = sent[0]
                while len(out) < end:
                    answer = self.conversation.receive(first + len(out) - start)
                    out.append(self._answered(answer, requests[len(out)]))
                sent.popleft()
            except ProgramFailed as failure:  # counted: a program breaking batches is given up on too
                todo.extendleft(reversed([(start, end) for _, start, end in sent]))
                sent.clear()
                in_flight = range(len(out), written)
                slow = isinstance(failure, ProgramTimedOut) and any(
                    len(requests[i][0]) >= SLOW_INPUT_BYTES for i in in_flight
                )  # the batch's long inputs are asked again one at a time, each timing out alone
                if slow or (isinstance(failure, ProgramExited) and any(i in llama_aborts for i in in_flight)):
                    self._restart()
                else:
                    self._broke(failure)
                _, end = todo.popleft()  # the batch the process ended in
                out += [self.encode_one(requests[i], i in llama_aborts) for i in range(len(out), end)]
            progress.show(len(out), len(requests))
        return out

    def _answered(self, answer: dict[str, Any], request: Request) -> Outcome:
        """An encode answer in step: counted as a request that did not break the program."""
        self.breakage.note(False)
        try:
            return self._outcome(answer, request)
        except BadAnswer as bad:
            return Refusal(str(bad), RefusalKind.BROKEN)

    def encode_many(self, requests: list[Request], llama_aborts: frozenset[int] = frozenset()) -> list[Outcome]:
        """In batches where the program takes them, else one request at a time."""
        if self.owner.hello.batch:
            return self.encode_batches(requests, llama_aborts)
        progress = Progress(self)
        out: list[Outcome] = []
        for index, request in enumerate(requests):
            out.append(self.encode_one(request, index in llama_aborts))
            progress.show(len(out), len(requests))
        return out

    def decoder(self) -> Decoder | None:
        """The program's decoding, when it declared both decoding ops for this vocabulary (protocol 2)."""
        return CommandDecoder(self) if self.loaded.ops >= DECODING_OPS else None

    def facts(self) -> ExposedFacts:
        """The facts the program answers to `facts` (protocol 2); the ones it leaves out are not checked.
        A wrong type (`1` for a flag, `true` for an id) is broken, not compared: in Python `True == 1`."""
        said = self.loaded.facts()  # what its load answer said (special_ids)
        if Op.FACTS not in self.loaded.ops:
            return said
        try:
            answer = Facts.parse(self.ask(Op.FACTS, {}))
        except ProgramFailed as failure:
            raise Broken(f"the facts request failed: {failure}") from None
        except BadAnswer as wrong:  # said as a Python implementation's wrong fact is
            raise Broken(str(wrong)) from None
        if isinstance(answer, Fault):
            raise Broken(answer.reason)
        for fact, value in said.items():
            if fact in answer.values and answer.values[fact] != value:
                raise Broken(f"the program said {fact.value} {value} loading the vocabulary, then "
                             f"{answer.values[fact]} to facts")  # fmt: skip
        return said | answer.values

    def close(self) -> None:
        """The end of this vocabulary: its process ends (killed with its group if it does not exit), or
        is kept for the next vocabulary (`keep`)."""
        if self.keep is not None:
            self.keep(self.conversation)
        else:
            self.conversation.close_soon()  # `CommandImplementation.close` waits for it at the end


class Progress:
    """A progress line every few seconds (a live one on a terminal), for a vocabulary that takes long."""

    def __init__(self, session: CommandSession) -> None:
        self.session = session
        self.shown = time.monotonic()

    def show(self, answered: int, asked: int) -> None:
        if time.monotonic() - self.shown < PROGRESS_SECONDS:
            return
        self.shown = time.monotonic()
        program = self.session.owner.launcher.argv[0]
        line = f"  {self.session.vocab.path.name}: {answered}/{asked} answered by {program}"
        print(line, end="\r" if sys.stderr.isatty() else "\n", file=sys.stderr, flush=True)


class CommandDecoder:
    """`token_to_piece` and `detokenize` over the protocol (version 2); a failure is raised as
    DecodingFailed, and the check engine reports that decoding check as an error."""

    def __init__(self, session: CommandSession) -> None:
        self.session = session

    def _ask(self, op: Op, fields: Mapping[str, Any], parse: Callable[[dict[str, Any]], T | Refuses | Fault]) -> T:
        try:
            answer = self.session.ask(op, fields)
        except ProgramFailed as failure:
            raise DecodingFailed(str(failure)) from None
        return self._parsed(op, answer, parse)

    @staticmethod
    def _parsed(op: Op, fields: dict[str, Any], parse: Callable[[dict[str, Any]], T | Refuses | Fault]) -> T:
        try:
            answer = parse(fields)
        except BadAnswer as failure:
            raise DecodingFailed(str(failure)) from None
        if isinstance(answer, Refuses):
            raise DecodingFailed(f"{op.value} answered an error: {answer.reason}")
        if isinstance(answer, Fault):
            raise DecodingFailed(f"{op.value}: {answer.reason}")
        return answer

    def pieces(self, special: bool) -> list[bytes]:
        """Every token's piece, `PIECES_PER_REQUEST` ids a request."""
        n_tokens = self.session.vocab.n_tokens or 0
        starts = range(0, n_tokens, PIECES_PER_REQUEST)
        chunks = [list(range(start, min(n_tokens, start + PIECES_PER_REQUEST))) for start in starts]
        lines = [(Op.TOKEN_TO_PIECE, {"ids": ids, "special": special}, 1) for ids in chunks]
        pieces: list[bytes] = []
        for ids, answer in zip(chunks, self.session.ask_lines(lines), strict=True):
            pieces += self._parsed(Op.TOKEN_TO_PIECE, answer, functools.partial(parse_pieces, count=len(ids)))
        return pieces

    def detokenize(self, ids: list[int], remove_special: bool, unparse_special: bool) -> bytes:
        return self._ask(Op.DETOKENIZE, detokenize_fields(ids, remove_special, unparse_special), parse_text)

    def detokenize_many(self, requests: list[Detokenize]) -> list[bytes]:
        """In batches where the program takes them (each answer within its own deadline), else one by one;
        the first failure fails them all, as one decoding check."""
        if not self.session.owner.hello.batch:
            return [self.detokenize(*request) for request in requests]
        asked = [detokenize_fields(*request) for request in requests]
        answers = self.session.ask_batches(Op.DETOKENIZE_BATCH, asked)
        return [self._parsed(Op.DETOKENIZE, answer, parse_text) for answer in answers]


class CommandImplementation:
    """`cmd:PROGRAM ARGS…`, or tokconf's worker serving a Python implementation: one process of the
    program per vocabulary. The first is started at once, so a program that cannot start or answer
    the handshake is a usage error before any vocabulary, and serves the first vocabulary."""

    contained = True

    def __init__(
        self,
        launcher: Launcher,
        timeout: float,
        load_timeout: float,
        label: str | None = "cmd",
        options: TimeoutOptions = CLI_TIMEOUTS,
    ) -> None:
        """`label`: said after the name the program gives itself (none for tokconf's own worker, which
        gives the `--impl` value: the worker is how every Python port runs, not a kind of port). The
        first process starts here; its handshake is read when first needed (`hello`): a program that
        cannot serve is then a usage error, before any vocabulary is asked. `options`: what sets each
        timeout where the run was started, which a timeout's message names."""
        self.launcher = launcher
        self.label = label
        self.answer_wait = Wait(timeout, options.answer)
        self.load_wait = Wait(load_timeout, options.load)
        try:
            first = Conversation(launcher, self.answer_wait, self.load_wait, greeted=False)
        except ProgramFailed as failure:
            raise TokconfError(f"{launcher.shown} failed the handshake: {failure}", HANDSHAKE_HELP) from None
        self._first = first
        self._spare: Conversation | None = first
        self._started = [first]  # every process started, ended at the latest by `close`

    @functools.cached_property
    def hello(self) -> Hello:
        """The first process's handshake: a TokconfError when it failed."""
        try:
            return self._first.hello
        except HelloRefused as refused:
            raise TokconfError(refused.problem, refused.hint or "") from None
        except (ProgramFailed, BadAnswer) as failure:
            says = "failed the handshake" if isinstance(failure, ProgramFailed) else "answered the handshake wrongly"
            raise TokconfError(f"{self.launcher.shown} {says}: {failure}", HANDSHAKE_HELP) from None

    @property
    def name(self) -> str:
        return f"{self.hello.name or self.launcher.argv[0]}" + (f" ({self.label})" if self.label else "")

    @property
    def confiner(self) -> Confiner:
        return self.launcher.confiner

    @classmethod
    def of_command(
        cls,
        command: str,
        timeout: float = DEFAULT_TIMEOUT,
        load_timeout: float = DEFAULT_LOAD_TIMEOUT,
        options: TimeoutOptions = CLI_TIMEOUTS,
        confiner: Confiner | None = None,
    ) -> CommandImplementation:
        """`cmd:COMMAND`, split as a shell would, started as `confiner` says (default: `--sandbox auto`'s)."""
        try:
            argv = shlex.split(command)
        except ValueError as error:  # an unclosed quote
            raise TokconfError(
                f"--impl cmd:{command}: {error}", "quote the program and its arguments as a shell would"
            ) from None
        if not argv:
            raise TokconfError("--impl cmd: needs a program", "e.g. --impl 'cmd:./my-tokenizer --serve'")
        return cls(Launcher(tuple(argv), confiner or DEFAULT_POLICY.confiner()), timeout, load_timeout, options=options)

    @property
    def protocol(self) -> int:
        """The version the program speaks."""
        return self.hello.protocol

    def start(self) -> Conversation:
        """A new process of the program, greeted; ProgramFailed if it cannot be."""
        try:
            started = Conversation(self.launcher, self.answer_wait, self.load_wait)
            self._started = [*(one for one in self._started if one.running or one.closing), started]
            return started
        except (TokconfError, HelloRefused) as failure:
            raise ProgramFailed(failure.problem if isinstance(failure, TokconfError) else str(failure)) from None
        except BadAnswer as bad:
            raise ProgramFailed(str(bad)) from None

    def open(self, vocab: VocabInfo) -> Session:
        conversation, self._spare = self._spare, None
        return self.session(vocab, conversation)

    def session(
        self,
        vocab: VocabInfo,
        conversation: Conversation | None,
        keep: Callable[[Conversation], None] | None = None,
        handle: int | None = None,
    ) -> CommandSession:
        """The vocabulary loaded into `conversation`'s process (None: a new one), under `handle` if given."""
        if vocab.vocab_type not in self.hello.vocab_types:
            if conversation is not None:
                (keep or Conversation.close)(conversation)
            declined = (
                LoadRefused if self.hello.llama_cpp else Unsupported
            )  # a llama.cpp does not pick its vocabularies
            raise declined(f"the program supports {list(self.hello.vocab_types)}, not {vocab.vocab_type}")
        if conversation is None:
            try:
                conversation = self.start()
            except ProgramFailed as failure:
                raise Broken(f"the program could not be started for {vocab.path.name}: {failure}") from None
        session = CommandSession(self, vocab, conversation, keep, handle)
        try:
            session.load()
        except BaseException:
            session.close()
            raise
        return session

    def shared(self) -> SharedProcess:
        """This implementation with every vocabulary loaded into one process: all at once, or in turn."""
        return SharedProcess(self)

    def close(self) -> None:
        """The end of the run: every process of the program still running ends (a session not closed)."""
        self._spare = None
        for conversation in self._started:
            conversation.close()
        self._started = []


class SharedProcess:
    """One process of the program for every vocabulary opened: what an application that loads two
    models does, and what the interleaving check (`tokconf.checking.interleave`) asks on purpose. A
    program whose handshake says `handles` (protocol 2) holds them all at once (`at_once`): each is
    loaded beside the others under a handle of its own, which every request for it carries, and stays
    loaded until the process ends. Any other program has them one after another, each `load`
    replacing the last; a process that ended is replaced for the next vocabulary."""

    contained = True

    def __init__(self, owner: CommandImplementation) -> None:
        self.owner = owner
        self.name = owner.name
        self.confiner = owner.confiner
        self._process: Conversation | None = None
        self._handles = itertools.count()

    @property
    def at_once(self) -> bool:
        return self.owner.hello.handles

    def _keep(self, conversation: Conversation) -> None:
        self._process = conversation

    def _release(self, conversation: Conversation) -> None:
        """The end of one vocabulary of several: the shared process stays; a process of the session's
        own (started again after it broke) ends."""
        if conversation is not self._process:
            conversation.close_soon()

    def open(self, vocab: VocabInfo) -> Session:
        process = self._process if self._process is not None and self._process.running else None
        if not self.at_once:
            self._process = None
            return self.owner.session(vocab, process, self._keep)
        session = self.owner.session(vocab, process, self._release, next(self._handles))
        if process is None:  # the first vocabulary, or the process that held the others ended: a new one
            self._process = session.conversation
        return session

    def close(self) -> None:
        if self._process is not None:
            self._process.close()
            self._process = None
