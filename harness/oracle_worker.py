"""The process that hosts libllama for one vocabulary: `python -m harness.oracle_worker`.

It exists so that llama.cpp's aborts (b11192 throws `std::invalid_argument` on a code point above
U+10FFFF and the uncaught exception kills the process) end this process, not the recorder. The
parent (`harness.oracle`) notices the broken pipe, records the case as a refusal and starts a new one.

Frames in both directions are a 4-byte little-endian length and a payload, so binary input reaches
llama_tokenize byte for byte. Requests: `T` + flag byte (bit 0 add_special, bit 1 parse_special) +
text bytes; `F` for the vocab facts. Answers: `O` + int32 ids (or JSON facts), `E` + message.
"""

from __future__ import annotations

import argparse
import base64
import json
import struct
import sys
from array import array
from pathlib import Path
from typing import BinaryIO

from harness.libllama import Vocab


def read_frame(stream: BinaryIO) -> bytes | None:
    """One length-prefixed frame, or None at a clean end of stream."""
    head = stream.read(4)
    if len(head) < 4:
        return None
    (size,) = struct.unpack("<I", head)
    payload = stream.read(size)
    if len(payload) < size:
        return None
    return payload


def write_frame(stream: BinaryIO, payload: bytes) -> None:
    """Write one length-prefixed frame and flush it, so the parent never waits on a buffer."""
    stream.write(struct.pack("<I", len(payload)) + payload)
    stream.flush()


def _facts_json(vocab: Vocab) -> bytes:
    facts = vocab.facts()
    facts["token_attributes"] = {str(k): v for k, v in facts["token_attributes"].items()}
    facts["special_texts"] = {str(k): base64.b64encode(v).decode() for k, v in facts["special_texts"].items()}
    return json.dumps(facts).encode()


def serve(vocab: Vocab, requests: BinaryIO, answers: BinaryIO) -> None:
    """Answer frames until the parent closes the pipe."""
    while (frame := read_frame(requests)) is not None:
        op = frame[:1]
        if op == b"T":
            flags = frame[1]
            ids = vocab.tokenize(frame[2:], bool(flags & 1), bool(flags & 2))
            write_frame(answers, b"O" + array("i", ids).tobytes())
        elif op == b"F":
            write_frame(answers, b"O" + _facts_json(vocab))
        else:
            write_frame(answers, b"E" + f"unknown request {op!r}".encode())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lib", type=Path, required=True)
    parser.add_argument("--header", type=Path, required=True)
    parser.add_argument("--include", type=Path, action="append", default=[])
    parser.add_argument("--vocab", type=Path, required=True)
    args = parser.parse_args()
    answers = sys.stdout.buffer
    try:
        vocab = Vocab(args.lib, args.header, tuple(args.include), args.vocab)
    except Exception as error:  # the parent shows it; this process has nothing else to do
        write_frame(answers, b"E" + str(error).encode())
        return 1
    write_frame(answers, b"R")
    serve(vocab, sys.stdin.buffer, answers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
