"""A Python implementation served over the line protocol, version 2 (docs/line-protocol.md):

    python -m tokconf.implementations.command_worker MODULE:FACTORY

Every Python implementation but tokconf's own reference runs this way unless `--in-process`: in a
process of its own, one per vocabulary, so nothing its code does (patching tokconf, `os._exit`,
`atexit`, threads, signal handlers, printing) reaches the process that judges it, and the per-answer
deadline, the restart after a crash and the give-up after repeated failures of `cmd:` programs
(`tokconf.implementations.command`) apply to it too: a Python call cannot be interrupted from inside
the process that runs it, but a process can be killed. The module is imported here, never in the
judging process: a wrong name is the handshake's `error` answer, said as a usage error. The caller's
`sys.path` comes in `TOKCONF_SYS_PATH` (JSON; for the `tokconf` command, the path it was started with
and the current folder first: `tokconf.core.isolated`), so a module the caller could import is found
here too.

The verdicts are the ones the in-process adapter (`tokconf.implementations.python`) decides, sent as
the protocol's answers (`tokconf.implementations.protocol`): `Unsupported` from the factory declines
the vocabulary and from `encode` declines the input (the handshake declares the input classes it may
be); a refusal is an `error` answer, judged against llama.cpp; a factory, `encode` or facts that
broke is a `fault` answer (an error, and the worker goes on); decoding that raises is an `error`
answer to that decoding request. The protocol has a pipe of its own, so a port's `print()` cannot
corrupt it: it goes to standard error, which tokconf keeps the end of and shows on failure.

The handshake says `handles`: the interleaving check (`tokconf.checking.interleave`) has one worker
hold every vocabulary at once, each the factory's object for it under its handle, as an application
loading several models does.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO

from ..core.errors import TokconfError
from ..core.isolated import PORT_PATH
from ..core.outcome import InputClass, Outcome, Refusal, RefusalKind, Request
from .base import Broken, LoadRefused, Session, Unsupported
from .protocol import (
    DECODING_OPS,
    HANDLE,
    PROTOCOL,
    CannotTake,
    Facts,
    Fault,
    Hello,
    Ids,
    LoadDeclined,
    Loaded,
    Op,
    Refuses,
    pieces_fields,
    vocab_of,
)
from .python import BrokenDecoder, PythonDecoder, PythonImplementation, PythonSession, resolve_python

VOCAB_TYPES = ("none", "spm", "bpe", "wpm", "ugm", "rwkv", "plamo2", "test")  # llama_vocab_type: the factory decides
DECLARED = frozenset(InputClass)  # a Python `Unsupported` may name any class: the judge checks it fits the input
FLUSH_EVERY = 0.05  # seconds a batch's answers may wait to be written together: far below any timeout


def _said(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _encode_answer(outcome: Outcome) -> dict[str, Any]:
    """An in-process verdict as the answer that gives the same verdict over the protocol."""
    if not isinstance(outcome, Refusal):
        return Ids(outcome).fields()
    if outcome.kind is RefusalKind.UNSUPPORTED:  # `Unsupported` from encode: its class, its own words
        return CannotTake(outcome.declined or InputClass.OTHER, outcome.reason).fields()
    if outcome.kind is RefusalKind.BROKEN:
        return Fault(outcome.reason).fields()
    return Refuses(outcome.reason).fields()


def _request(fields: dict[str, Any]) -> Request:
    return base64.b64decode(fields["text_b64"]), bool(fields["add_special"]), bool(fields["parse_special"])


@dataclass(frozen=True)
class Held:
    """A vocabulary the worker holds: the implementation's session of it, and its decoding."""

    session: PythonSession
    decoder: PythonDecoder | BrokenDecoder | None


BATCHES = {Op.ENCODE_BATCH.value: Op.ENCODE.value, Op.DETOKENIZE_BATCH.value: Op.DETOKENIZE.value}


class Server:
    """Answers the requests for one Python implementation, in order. It holds every vocabulary loaded
    under a handle at once (the handshake says `handles`: the interleaving check asks them in turn,
    `tokconf.checking.interleave`), and one loaded without a handle, which the next such `load`
    replaces."""

    def __init__(self, impl: PythonImplementation) -> None:
        self.impl = impl
        self.held: dict[int | None, Held] = {}  # by handle (None: the one loaded without)

    def answers(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The answer lines to one request, each with its id: one, or one per input of a batch, each
        given as soon as it is known (its deadline is its own)."""
        single = BATCHES.get(request.get("op", ""))
        if single is not None:
            handle = {HANDLE: request[HANDLE]} if HANDLE in request else {}
            for offset, fields in enumerate(request["requests"]):
                yield {**self.answer({**fields, **handle, "op": single}), "id": request["id"] + offset}
            return
        yield {**self.answer(request), "id": request["id"]}

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            op = Op(request["op"])
        except ValueError:
            return Refuses(f"unknown op {request['op']!r}").fields()
        if op is Op.HELLO:
            return Hello(PROTOCOL, self.impl.name, VOCAB_TYPES, DECLARED, batch=True, handles=True).fields()
        if op is Op.LOAD:
            return self._load(request)
        handle = request.get(HANDLE)
        held = self.held.get(handle) if handle is None or type(handle) is int else None
        if held is None:
            under = "" if handle is None else f" under handle {handle!r}"
            return Refuses(f"{op.value}: no vocabulary loaded{under}").fields()
        if op is Op.ENCODE:
            [outcome] = held.session.encode_many([_request(request)])
            return _encode_answer(outcome)
        if op is Op.FACTS:
            return self._facts(held.session)
        if held.decoder is None:
            return Refuses(f"{op.value}: the implementation exposes no decoding").fields()
        try:
            if op is Op.TOKEN_TO_PIECE:
                return pieces_fields(self._pieces(held.decoder, request))
            text = held.decoder.detokenize(request["ids"], request["remove_special"], request["unparse_special"])
        except (Exception, SystemExit) as error:  # the port's decoding broke: an error for that check only
            return Refuses(_said(error)).fields()
        return {"text_b64": base64.b64encode(text).decode()}

    @staticmethod
    def _pieces(decoder: PythonDecoder | BrokenDecoder, request: dict[str, Any]) -> list[bytes]:
        """The pieces of the ids asked (4,096 at a time), computed for those alone: each request has
        the per-answer time, so a slow `token_to_piece` over a 262k vocabulary fits in it."""
        return decoder.some_pieces(request["ids"], bool(request["special"]))

    def _load(self, request: dict[str, Any]) -> dict[str, Any]:
        """The vocabulary loaded under the request's handle (none: replacing the one loaded without)."""
        handle = request.get(HANDLE)
        if handle is not None and type(handle) is not int:
            return Fault(f"load: a handle must be an integer, not {handle!r}").fields()
        previous = self.held.pop(handle, None)
        if previous is not None:
            previous.session.close()
        try:
            session = self.impl.open(vocab_of(request))
            decoder = session.decoder()
        except Unsupported as why:
            return LoadDeclined(str(why), isinstance(why, LoadRefused)).fields()
        except Broken as why:
            return Fault(str(why)).fields()
        except (Exception, SystemExit) as error:  # what the adapter let through: broken too
            return Fault(f"loading {request['path']}: {_said(error)}").fields()
        self.held[handle] = Held(session, decoder)
        ops = frozenset({Op.FACTS} | (DECODING_OPS if decoder is not None else set()))
        return Loaded(ops, max_bytes=session.max_input_bytes).fields()

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


def serve(impl: PythonImplementation | TokconfError, requests: TextIO, answers: TextIO) -> int:
    """Answer every request line until the input ends, each answer written as soon as it is known; an
    implementation that could not be resolved answers the handshake with its error (a usage error
    for the caller) and ends."""
    if isinstance(impl, TokconfError):
        for line in requests:
            refused = {"id": json.loads(line)["id"], "error": impl.problem} | ({"hint": impl.fix} if impl.fix else {})
            answers.write(json.dumps(refused) + "\n")
            answers.flush()
            return 2
        return 2
    server = Server(impl)
    for line in requests:
        due = time.monotonic() + FLUSH_EVERY
        for answer in server.answers(json.loads(line)):
            answers.write(json.dumps(answer) + "\n")
            if time.monotonic() >= due:  # a slow port's answers come out as they are made
                answers.flush()
                due = time.monotonic() + FLUSH_EVERY
        answers.flush()
    return 0


def forked(impl: PythonImplementation) -> Callable[[], int]:
    """What a forked worker runs (`tokconf.core.supervisor.ForkedProcess`): the protocol over
    its standard streams, for an implementation object already in memory."""

    def run() -> int:
        sys.stderr = open(2, "w", closefd=False, buffering=1)  # noqa: SIM115 - its own stderr, not a caller's capture
        requests, answers = protocol_pipes()
        return serve(impl, requests, answers)

    return run


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tokconf.implementations.command_worker MODULE:FACTORY", file=sys.stderr)
        return 2
    requests, answers = protocol_pipes()  # before the implementation is imported: its import may print too
    caller_path = json.loads(os.environ.get(PORT_PATH, "[]"))
    sys.path[:0] = [entry for entry in caller_path if entry not in sys.path]
    try:
        impl: PythonImplementation | TokconfError = resolve_python(args[0])
    except TokconfError as error:
        impl = error
    return serve(impl, requests, answers)


def run() -> None:
    """`main`, then the process ends at once, whatever happened (tokconf gone: a broken pipe): no port's
    `atexit` handler, thread or finalizer keeps the worker alive, or changes how it ends."""
    status = 70
    try:
        status = main()
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(status)


if __name__ == "__main__":
    run()
