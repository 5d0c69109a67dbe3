"""A Python implementation served over the line protocol, version 2 (docs/line-protocol.md):

    python -m tokconf.implementations.serve MODULE:FACTORY

`tokconf check --timeout N --impl MODULE:FACTORY` runs a Python implementation this way, in a
process of its own, so the per-case deadline, the restart after a crash and the give-up after
repeated failures of `cmd:` programs (`tokconf.implementations.command`) apply to it too: a Python
call cannot be interrupted from inside the process that runs it, but a process can be killed.

The verdicts are the ones the in-process adapter (`tokconf.implementations.python`) decides, sent as
the protocol's answers (`tokconf.implementations.protocol`): `Unsupported` from the factory declines
the vocabulary and from `encode` declines the input (the handshake declares the input classes it may
be); a refusal is an `error` answer, judged against llama.cpp; a factory, `encode` or facts that
broke is a `fault` answer (an error, and the worker goes on); decoding that raises is an `error`
answer to that decoding request. The protocol has a pipe of its own, so a port's `print()` cannot
corrupt it: it goes to standard error, which tokconf keeps the end of and shows on failure.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from typing import Any, TextIO

from ..core.errors import TokconfError
from ..core.outcome import Outcome, Refusal, RefusalKind, is_utf8
from .base import Broken, Decoder, Session, Unsupported
from .protocol import (
    DECODING_OPS,
    PROTOCOL,
    CannotTake,
    Facts,
    Fault,
    Hello,
    Ids,
    InputClass,
    LoadDeclined,
    Loaded,
    Op,
    Refuses,
    vocab_of,
)
from .python import PythonImplementation
from .resolve import resolve_python

VOCAB_TYPES = ("none", "spm", "bpe", "wpm", "ugm", "rwkv", "plamo2", "test")  # llama_vocab_type: the factory decides
DECLARED = frozenset({InputClass.INVALID_UTF8, InputClass.OTHER})  # what a Python `Unsupported` from encode may be


def _said(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _encode_answer(outcome: Outcome, data: bytes) -> dict[str, Any]:
    """An in-process verdict as the answer that gives the same verdict over the protocol."""
    if not isinstance(outcome, Refusal):
        return Ids(outcome).fields()
    if outcome.kind is RefusalKind.UNSUPPORTED:  # `Unsupported` from encode: any input, its own reason
        return CannotTake(InputClass.OTHER if is_utf8(data) else InputClass.INVALID_UTF8, outcome.reason).fields()
    if outcome.kind is RefusalKind.BROKEN:
        return Fault(outcome.reason).fields()
    return Refuses(outcome.reason).fields()


class Server:
    """Answers one request at a time for one Python implementation."""

    def __init__(self, impl: PythonImplementation) -> None:
        self.impl = impl
        self.session: Session | None = None
        self.decoder: Decoder | None = None
        self.pieces: dict[bool, list[bytes]] = {}

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            op = Op(request["op"])
        except ValueError:
            return Refuses(f"unknown op {request['op']!r}").fields()
        if op is Op.HELLO:
            return Hello(PROTOCOL, self.impl.name, VOCAB_TYPES, DECLARED).fields()
        if op is Op.LOAD:
            return self._load(request)
        if self.session is None:
            return Refuses(f"{op.value}: no vocabulary loaded").fields()
        if op is Op.ENCODE:
            data = base64.b64decode(request["text_b64"])
            [outcome] = self.session.encode_many([(data, bool(request["add_special"]), bool(request["parse_special"]))])
            return _encode_answer(outcome, data)
        if op is Op.FACTS:
            return self._facts(self.session)
        if self.decoder is None:
            return Refuses(f"{op.value}: the implementation exposes no decoding").fields()
        try:
            if op is Op.TOKEN_TO_PIECE:
                return {"pieces_b64": [base64.b64encode(p).decode() for p in self._pieces(self.decoder, request)]}
            text = self.decoder.detokenize(request["ids"], request["remove_special"], request["unparse_special"])
        except (Exception, SystemExit) as error:  # the port's decoding broke: an error for that check only
            return Refuses(_said(error)).fields()
        return {"text_b64": base64.b64encode(text).decode()}

    def _pieces(self, decoder: Decoder, request: dict[str, Any]) -> list[bytes]:
        """The pieces of the ids asked; every piece is computed once per `special` (tokconf asks for
        every id, 4,096 at a time)."""
        special = bool(request["special"])
        if special not in self.pieces:
            self.pieces[special] = decoder.pieces(special)
        pieces = self.pieces[special]
        return [pieces[i] for i in request["ids"]]

    def _load(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.session is not None:
            self.session.close()
        self.session, self.decoder, self.pieces = None, None, {}
        try:
            session = self.impl.open(vocab_of(request))
            decoder = session.decoder()
        except Unsupported as why:
            return LoadDeclined(str(why)).fields()
        except Broken as why:
            return Fault(str(why)).fields()
        except (Exception, SystemExit) as error:  # what the adapter let through: broken too
            return Fault(f"loading {request['path']}: {_said(error)}").fields()
        self.session, self.decoder = session, decoder
        return Loaded(frozenset({Op.FACTS} | (DECODING_OPS if decoder is not None else set()))).fields()

    @staticmethod
    def _facts(session: Session) -> dict[str, Any]:
        """The facts, typed as the protocol requires (`Fact.exposed`); a wrong type, or facts that
        raise, are a fault: every fact check is then an error, as in process."""
        try:
            return Facts({fact: fact.exposed(value) for fact, value in session.facts().items()}).fields()
        except (ValueError, Broken) as wrong:  # a wrong type, said as in process
            return Fault(str(wrong)).fields()
        except (Exception, SystemExit) as error:
            return Fault(f"facts: {_said(error)}").fields()


def protocol_pipes() -> tuple[TextIO, TextIO]:
    """The protocol's own pipes: the original standard input and output, duplicated. File descriptor
    1 and `sys.stdout` then point at standard error, so whatever the implementation prints (from Python
    or from a C extension) lands in tokconf's kept stderr instead of between the answers; file
    descriptor 0 (so `sys.stdin`) at /dev/null, so an implementation that reads its input cannot take a
    request."""
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    return requests, answers


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tokconf.implementations.serve MODULE:FACTORY", file=sys.stderr)
        return 2
    requests, answers = protocol_pipes()  # before the implementation is imported: its import may print too
    try:
        server = Server(resolve_python(args[0]))
    except TokconfError as error:
        print(f"tokconf serve: {error}", file=sys.stderr)
        return 2
    for line in requests:
        request = json.loads(line)
        answers.write(json.dumps({**server.answer(request), "id": request["id"]}) + "\n")
        answers.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
