#!/usr/bin/env python3
"""A `cmd:` program that speaks protocol 1 only (docs/line-protocol.md), around any Python factory:
tokconf still checks such programs (their facts and decoding are then unsupported, never passed).

    tokconf check --impl 'cmd:python tests/support/protocol1_adapter.py MODULE:FACTORY'

`MODULE:FACTORY` is called with a GGUF path and returns an object with
`encode(data: bytes, add_special: bool, parse_special: bool) -> list[int]`, raising to refuse.
`--break MODE` makes it misbehave on the input "Hello world" (crash, hang, garbage, wrong-id), which
is how tokconf's tests prove that each kind of failure is caught and reported.
"""

from __future__ import annotations

import argparse
import base64
import importlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("factory", help="MODULE:FACTORY")
    parser.add_argument("--vocab-types", default="spm,bpe,wpm,ugm", help="types to declare in the handshake")
    parser.add_argument("--break", dest="breakage", choices=["crash", "hang", "garbage", "wrong-id"])
    args = parser.parse_args()
    module_name, _, attribute = args.factory.partition(":")
    sys.path.insert(0, os.getcwd())
    factory = getattr(importlib.import_module(module_name), attribute)
    tokenizer: Any = None
    for line in sys.stdin:
        request = json.loads(line)
        answer: dict[str, Any] = {"id": request["id"]}
        if request["op"] == "hello":
            answer.update(name="python-adapter", version="1", vocab_types=args.vocab_types.split(","))
        elif request["op"] == "load":
            try:
                tokenizer = factory(Path(request["path"]))
                answer["ok"] = True
            except Exception as error:
                answer.update(ok=False, error=f"{type(error).__name__}: {error}")
        elif request["op"] == "encode":
            data = base64.b64decode(request["text_b64"])
            if data == b"Hello world" and args.breakage:
                if args.breakage == "crash":
                    print("adapter: simulated crash", file=sys.stderr, flush=True)
                    os._exit(3)
                if args.breakage == "hang":
                    time.sleep(3600)
                if args.breakage == "garbage":
                    print("this is not json", flush=True)
                    continue
                if args.breakage == "wrong-id":
                    answer["id"] = request["id"] + 1000
            try:
                answer["ids"] = tokenizer.encode(data, request["add_special"], request["parse_special"])
            except Exception as error:
                answer["error"] = f"{type(error).__name__}: {error}"
        else:
            answer["error"] = f"unknown op {request['op']!r}"
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
