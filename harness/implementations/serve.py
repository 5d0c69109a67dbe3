"""A Python implementation served over the line protocol, version 2 (docs/line-protocol.md):

    python -m harness.implementations.serve MODULE:FACTORY

`tokconf check --timeout N --impl MODULE:FACTORY` runs a Python implementation this way, in a
process of its own, so the per-case deadline, the restart after a crash and the give-up after
repeated failures of `cmd:` programs (`harness.implementations.command`) apply to it too: a Python
call cannot be interrupted from inside the process that runs it, but a process can be killed.

The answers mirror what the in-process adapter (`harness.implementations.python`) decides: an
exception is a refusal, `Unsupported` is unsupported, and an implementation that broke (it called
`sys.exit`, or answered other than ints) makes this process exit, which tokconf reports as an error.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path
from typing import Any

from harness.core.errors import TokconfError
from harness.core.outcome import Refusal, RefusalKind, is_utf8
from harness.implementations.base import Broken, Decoder, Session, Unsupported, VocabInfo
from harness.implementations.command import InputClass
from harness.implementations.python import PythonImplementation
from harness.implementations.resolve import resolve_python

VOCAB_TYPES = ["none", "spm", "bpe", "wpm", "ugm", "rwkv", "plamo2", "test"]  # llama_vocab_type: the factory decides
DECLARED = [InputClass.INVALID_UTF8.value, InputClass.OTHER.value]  # what a Python `Unsupported` may be
BROKEN_STATUS = 70  # EX_SOFTWARE: the implementation broke; its reason is on stderr


def _broken(reason: str) -> None:
    print(f"tokconf serve: {reason}", file=sys.stderr, flush=True)
    os._exit(BROKEN_STATUS)


class Server:
    """Answers one request at a time for one Python implementation."""

    def __init__(self, impl: PythonImplementation) -> None:
        self.impl = impl
        self.session: Session | None = None
        self.decoder: Decoder | None = None
        self.pieces: dict[bool, list[bytes]] = {}

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "hello":
            return {
                "protocol": 2,
                "name": self.impl.name,
                "vocab_types": ["spm", "bpe", "wpm", "ugm", "rwkv", "plamo2"],
            }
        if op == "load":
            return self._load(request)
        if self.session is None:
            return {"error": f"{op}: no vocabulary loaded"}
        if op == "encode":
            return self._encode(self.session, request)
        if op == "facts":
            return {"facts": {fact.value: value for fact, value in self.session.facts().items()}}
        if op == "token_to_piece" and self.decoder is not None:
            special = bool(request["special"])
            if special not in self.pieces:
                self.pieces[special] = self.decoder.pieces(special)
            pieces = self.pieces[special]
            return {"pieces_b64": [base64.b64encode(pieces[i]).decode() for i in request["ids"]]}
        if op == "detokenize" and self.decoder is not None:
            text = self.decoder.detokenize(request["ids"], request["remove_special"], request["unparse_special"])
            return {"text_b64": base64.b64encode(text).decode()}
        return {"error": f"unknown op {op!r}"}

    def _load(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.session is not None:
            self.session.close()
        self.session, self.decoder, self.pieces = None, None, {}
        info = VocabInfo(Path(request["path"]), request["vocab_type"], request.get("model"), request.get("pre"))
        try:
            self.session = self.impl.open(info)
        except Unsupported as why:
            return {"ok": False, "error": str(why)}
        except Broken as why:
            _broken(str(why))
        assert self.session is not None
        self.decoder = self.session.decoder()
        ops = ["facts", *(["token_to_piece", "detokenize"] if self.decoder is not None else [])]
        return {"ok": True, "ops": ops}

    @staticmethod
    def _encode(session: Session, request: dict[str, Any]) -> dict[str, Any]:
        data = base64.b64decode(request["text_b64"])
        [outcome] = session.encode_many([(data, bool(request["add_special"]), bool(request["parse_special"]))])
        if not isinstance(outcome, Refusal):
            return {"ids": outcome}
        if outcome.kind is RefusalKind.UNSUPPORTED:  # `Unsupported` from encode: its own reason, any input
            if not is_utf8(data):
                return {"unsupported": InputClass.INVALID_UTF8.value}
            return {"unsupported": InputClass.OTHER.value, "reason": outcome.reason}
        if outcome.kind is RefusalKind.BROKEN:
            _broken(outcome.reason)
        return {"error": outcome.reason}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m harness.implementations.serve MODULE:FACTORY", file=sys.stderr)
        return 2
    try:
        server = Server(resolve_python(args[0]))
    except TokconfError as error:
        print(f"tokconf serve: {error}", file=sys.stderr)
        return 2
    for line in sys.stdin:
        request = json.loads(line)
        answer = server.answer(request)
        sys.stdout.write(json.dumps({**answer, "id": request["id"]}) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
