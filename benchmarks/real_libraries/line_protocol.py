"""The line protocol's loop (version 2, docs/line-protocol.md) for the adapters in this folder, each a
`cmd:` program run by a Python that has its library and never tokconf: a request a line on standard
input, its answer a line on standard output, until the input ends. It imports nothing from tokconf."""

import json
import sys
from collections.abc import Callable
from typing import Any

Request = dict[str, Any]


def serve(
    hello: Request, encode: Callable[[Request], Request], load: Callable[[Request], None] = lambda _: None
) -> None:
    """Answer `hello` with `hello` (the protocol's version added), `load` with no ops (after `load`
    sees the request), `encode` with what `encode` answers, and any other op with a fault."""
    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        if op == "hello":
            answer = {"protocol": 2, **hello}
        elif op == "load":
            load(request)
            answer = {"ok": True, "ops": []}
        elif op == "encode":
            answer = encode(request)
        else:
            answer = {"fault": f"unknown op {op}"}
        sys.stdout.write(json.dumps({"id": request["id"], **answer}) + "\n")
        sys.stdout.flush()
