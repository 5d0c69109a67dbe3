#!/usr/bin/env python3
"""A line protocol 2 program as a binding that wraps llama.cpp behaves where llama.cpp aborts:

    python tests/support/aborting_port.py BEHAVIOUR [--starts FILE] [--batch] [--handles]

It tokenizes with the reference (`tokconf_reference`, token-identical to b11192), and where the reference
says llama.cpp aborts (`LlamaAborts`) it does as BEHAVIOUR says. `--starts FILE` appends a line per
start, so a test counts the restarts; `--batch` takes `encode_batch`; `--handles` holds every vocabulary
loaded under its handle at once (a binding's process shared by them, as the interleaving check asks).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
from pathlib import Path
from typing import Any

from tokconf_reference import Tokenizer
from tokconf_reference.errors import LlamaAborts

BEHAVIOURS = {
    "die": "its process dies (SIGABRT) where llama.cpp aborts, as a binding without a try does",
    "say": 'answers {"aborted": reason} where llama.cpp aborts, as a binding that catches the abort does',
    "die-on-quote": "dies where llama.cpp aborts, and also on every input holding `'` (a bug of its own)",
    "say-on-quote": "says aborted where llama.cpp aborts, and also on every input holding `'`",
    "die-always": "dies on every input (a binding broken whole)",
}


def _encode(tokenizer: Tokenizer, request: dict[str, Any], behaviour: str) -> dict[str, Any]:
    data = base64.b64decode(request["text_b64"])
    try:
        if behaviour == "die-always" or (b"'" in data and behaviour.endswith("-on-quote")):
            raise LlamaAborts("a quote (the port's own bug)")
        return {"ids": tokenizer.encode(data, request["add_special"], request["parse_special"])}
    except LlamaAborts as why:
        if behaviour.startswith("die"):
            os.abort()
        return {"aborted": f"llama.cpp aborted: {why}"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("behaviour", choices=sorted(BEHAVIOURS))
    parser.add_argument("--starts", help="append a line to this file at start")
    parser.add_argument("--batch", action="store_true")
    parser.add_argument("--handles", action="store_true")
    args = parser.parse_args()
    if args.starts:
        with open(args.starts, "a") as starts:
            starts.write(f"{os.getpid()}\n")
    held: dict[object, Tokenizer] = {}
    for line in sys.stdin:
        request = json.loads(line)
        answers: list[dict[str, Any]] = [{}]
        if request["op"] == "hello":
            answers[0] = {"protocol": 2, "name": "aborting-binding", "vocab_types": ["spm", "bpe", "wpm", "ugm"],
                          "batch": args.batch, "llama_cpp": True, "handles": args.handles}  # fmt: skip
        elif request["op"] == "load":
            held[request.get("handle")] = Tokenizer.from_gguf(Path(request["path"]))
            answers[0] = {"ok": True, "ops": []}
        elif request["op"] == "encode":
            answers[0] = _encode(held[request.get("handle")], request, args.behaviour)
        else:
            assert request["op"] == "encode_batch"
            answers = [_encode(held[request.get("handle")], one, args.behaviour) for one in request["requests"]]
        for offset, answer in enumerate(answers):
            sys.stdout.write(json.dumps({"id": request["id"] + offset, **answer}) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
