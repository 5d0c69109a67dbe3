"""`cmd:PROGRAM ARGS…`: a tokenizer in any language, over JSON lines (docs/line-protocol.md).

The program is one long-lived process (`tokconf.implementations.transport`), spoken to in typed
messages (`tokconf.implementations.protocol`). Anything it does wrong — crash, hang past the per-case
timeout, a line that is not JSON, an answer for another request, a line nobody asked for — becomes
that case's error with what it said, and the program is restarted (and the vocabulary reloaded) for
the next case; a vocabulary whose cases keep breaking it is given up on (`Breakage`).

Protocol 2 adds what protocol 1 programs could not be checked on: the vocab facts (`facts`) and
decoding (`token_to_piece`, `detokenize`), each declared by the program when it loads a vocabulary.
A program that answers the handshake without `"protocol": 2` is spoken to in protocol 1.
"""

from __future__ import annotations

import functools
import itertools
import shlex
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..core.errors import TokconfError
from ..core.facts import ExposedFacts
from ..core.outcome import Outcome, Refusal, RefusalKind, Request
from .base import Broken, Decoder, Session, Unsupported, VocabInfo
from .protocol import (
    DECODING_OPS,
    PROTOCOL,
    BadAnswer,
    Facts,
    Fault,
    Hello,
    LoadDeclined,
    Loaded,
    Op,
    OutOfStep,
    Refuses,
    answer_to,
    encode_fields,
    encode_outcome,
    load_fields,
    parse_encode,
    parse_load,
    parse_pieces,
    parse_text,
    request_line,
)
from .transport import Program, ProgramFailed

GIVE_UP_BROKEN = 5  # a vocabulary is given up on when this many of its recent requests broke the program...
GIVE_UP_WINDOW = 20  # ...among its last this many (so also after 5 in a row)
PIECES_PER_REQUEST = 4096
PROGRESS_SECONDS = 5.0

T = TypeVar("T")


@dataclass
class Breakage:
    """Which of a vocabulary's last `GIVE_UP_WINDOW` requests broke the program (cost a restart).
    Counting over a window, not only in a row, stops a program that breaks on every other input from
    being restarted thousands of times; an answer that is merely wrong, or a `fault`, is in step and
    costs nothing, so it is not counted."""

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


class CommandSession:
    """One vocabulary loaded into the program; the program is restarted after any failure, and given
    up on (its remaining cases errors, with the reason once) when `Breakage` is exhausted."""

    def __init__(self, owner: CommandImplementation, vocab: VocabInfo) -> None:
        self.owner = owner
        self.vocab = vocab
        self.dead: str | None = None  # why no more is asked: every later case is an error with it
        self.breakage = Breakage()
        self.loaded = Loaded()

    def load(self) -> None:
        """Load the vocabulary: Unsupported when the program declines it, Broken when it breaks or
        names another vocabulary."""
        name = self.vocab.path.name
        try:
            answer = parse_load(
                self.owner.ask(Op.LOAD, load_fields(self.vocab, self.owner.protocol)), self.owner.protocol
            )
        except ProgramFailed as failure:
            raise Broken(f"the program failed loading {name}: {failure}") from None
        except BadAnswer as bad:
            raise Broken(f"loading {name}: {bad}") from None
        if isinstance(answer, LoadDeclined):
            raise Unsupported(answer.reason)
        if isinstance(answer, Fault):
            raise Broken(answer.reason)
        if differences := answer.differences(self.vocab):
            raise Broken(f"vocabulary mismatch: the program loaded another vocabulary than {name}: "
                         + ", ".join(differences))  # fmt: skip
        self.loaded = answer

    def ask(self, op: Op, fields: Mapping[str, Any]) -> dict[str, Any]:
        """One request for this vocabulary. A failure (the program has ended) restarts it and reloads
        the vocabulary, or gives up on the vocabulary, and is raised as ProgramFailed."""
        if self.dead is not None:
            raise ProgramFailed(self.dead)
        try:
            answer = self.owner.ask(op, fields)
        except ProgramFailed as failure:
            self.breakage.note(True)
            if self.breakage.exhausted:
                self.dead = self.breakage.given_up(str(failure))
            else:
                self._reload()
            raise
        self.breakage.note(False)
        return answer

    def _reload(self) -> None:
        try:
            self.load()
        except (Unsupported, Broken) as why:  # it loaded the vocabulary before, and now does not
            self.dead = f"after a restart, the program did not load {self.vocab.path.name}: {why}"

    def encode_one(self, request: Request) -> Outcome:
        try:
            answer = self.ask(Op.ENCODE, encode_fields(request))
            return encode_outcome(parse_encode(answer, self.owner.protocol), request, self.owner.hello.unsupported)
        except (ProgramFailed, BadAnswer) as failure:
            return Refusal(str(failure), RefusalKind.BROKEN)

    def encode_many(self, requests: list[Request]) -> list[Outcome]:
        """One request at a time, with a progress line every few seconds (a live one on a terminal)."""
        live = sys.stderr.isatty()
        shown = time.monotonic()
        out: list[Outcome] = []
        for request in requests:
            out.append(self.encode_one(request))
            if time.monotonic() - shown >= PROGRESS_SECONDS:
                shown = time.monotonic()
                line = f"  {self.vocab.path.name}: {len(out)}/{len(requests)} answered by {self.owner.argv[0]}"
                print(line, end="\r" if live else "\n", file=sys.stderr, flush=True)
        return out

    def decoder(self) -> Decoder | None:
        """The program's decoding, when it declared both decoding ops for this vocabulary (protocol 2)."""
        return CommandDecoder(self) if self.loaded.ops >= DECODING_OPS else None

    def facts(self) -> ExposedFacts:
        """The facts the program answers to `facts` (protocol 2); the ones it leaves out are not checked.
        A wrong type (`1` for a flag, `true` for an id) is broken, not compared: in Python `True == 1`."""
        if Op.FACTS not in self.loaded.ops:
            return {}
        try:
            answer = Facts.parse(self.ask(Op.FACTS, {}))
        except ProgramFailed as failure:
            raise Broken(f"the facts request failed: {failure}") from None
        except BadAnswer as wrong:  # said as a Python implementation's wrong fact is
            raise Broken(str(wrong)) from None
        if isinstance(answer, Fault):
            raise Broken(answer.reason)
        return answer.values

    def close(self) -> None:
        """The program stays up for the next vocabulary."""


class CommandDecoder:
    """`token_to_piece` and `detokenize` over the protocol (version 2); a failure is raised as
    DecodingFailed, and the check engine reports that decoding check as an error."""

    def __init__(self, session: CommandSession) -> None:
        self.session = session

    def _ask(self, op: Op, fields: Mapping[str, Any], parse: Callable[[dict[str, Any]], T | Refuses | Fault]) -> T:
        try:
            answer = parse(self.session.ask(op, fields))
        except (ProgramFailed, BadAnswer) as failure:
            raise DecodingFailed(str(failure)) from None
        if isinstance(answer, Refuses):
            raise DecodingFailed(f"{op.value} answered an error: {answer.reason}")
        if isinstance(answer, Fault):
            raise DecodingFailed(f"{op.value}: {answer.reason}")
        return answer

    def pieces(self, special: bool) -> list[bytes]:
        """Every token's piece, `PIECES_PER_REQUEST` ids a request."""
        n_tokens = self.session.vocab.n_tokens or 0
        pieces: list[bytes] = []
        for start in range(0, n_tokens, PIECES_PER_REQUEST):
            ids = list(range(start, min(n_tokens, start + PIECES_PER_REQUEST)))
            fields = {"ids": ids, "special": special}
            pieces += self._ask(Op.TOKEN_TO_PIECE, fields, functools.partial(parse_pieces, count=len(ids)))
        return pieces

    def detokenize(self, ids: list[int], remove_special: bool, unparse_special: bool) -> bytes:
        fields = {"ids": ids, "remove_special": remove_special, "unparse_special": unparse_special}
        return self._ask(Op.DETOKENIZE, fields, parse_text)


class CommandImplementation:
    """`cmd:PROGRAM ARGS…`, started once, and again only after it failed (restarted when next asked)."""

    def __init__(self, command: str, timeout: float, label: str = "cmd") -> None:
        try:
            self.argv = shlex.split(command)
        except ValueError as error:  # an unclosed quote
            raise TokconfError(
                f"--impl cmd:{command}: {error}", "quote the program and its arguments as a shell would"
            ) from None
        if not self.argv:
            raise TokconfError("--impl cmd: needs a program", "e.g. --impl 'cmd:./my-tokenizer --serve'")
        self.timeout = timeout
        self._ids = itertools.count()
        self._program = Program(self.argv, timeout)
        try:
            self.hello = self._greet()
        except (ProgramFailed, BadAnswer) as failure:
            self.close()
            says = "failed the handshake" if isinstance(failure, ProgramFailed) else "answered the handshake wrongly"
            raise TokconfError(
                f"{shlex.join(self.argv)} {says}: {failure}", "see docs/line-protocol.md, section 1"
            ) from None
        self.name = f"{self.hello.name or self.argv[0]} ({label})"

    @property
    def protocol(self) -> int:
        """The version the program speaks."""
        return self.hello.protocol

    def _exchange(self, op: Op, fields: Mapping[str, Any]) -> dict[str, Any]:
        request_id = next(self._ids)
        line = self._program.exchange(request_line(request_id, op, fields))
        try:
            return answer_to(line, request_id)
        except OutOfStep as lost:
            self._program.end()
            raise ProgramFailed(str(lost)) from None

    def _greet(self) -> Hello:
        return Hello.parse(self._exchange(Op.HELLO, {"protocol": PROTOCOL}))

    def ask(self, op: Op, fields: Mapping[str, Any]) -> dict[str, Any]:
        """One request and its answer, with the right id; the program is started again first when the
        last one ended. ProgramFailed when either fails (the program has then ended)."""
        if not self._program.running:
            try:
                self._program = Program(self.argv, self.timeout)
                self._greet()
            except (TokconfError, ProgramFailed, BadAnswer) as failure:
                self._program.end()
                why = failure.problem if isinstance(failure, TokconfError) else str(failure)
                raise ProgramFailed(f"the program could not be restarted: {why}") from None
        return self._exchange(op, fields)

    def open(self, vocab: VocabInfo) -> Session:
        if vocab.vocab_type not in self.hello.vocab_types:
            raise Unsupported(f"the program supports {list(self.hello.vocab_types)}, not {vocab.vocab_type}")
        session = CommandSession(self, vocab)
        session.load()
        return session

    def close(self) -> None:
        self._program.close()
