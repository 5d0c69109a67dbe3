"""The process that hosts libllama for one vocabulary: `python -m tokconf.oracles.libllama_worker`.

It exists so that llama.cpp's aborts (b11192 throws `std::invalid_argument` on a code point above
U+10FFFF and the uncaught exception kills the process) never reach the recorder.

It is a small fork server: this process loads the vocabulary once (~0.5 s: gcc -E, cffi, GGUF) and
then forks a child that answers requests. When llama.cpp kills the child, the loaded parent answers
the request the child died on with the reason from the child's last words (its stderr, kept in a file
of this process's) and forks a fresh child, so a crash costs a fork, not a reload. This process is
held by tokconf's one supervisor (`tokconf.core.supervisor`, driven by `tokconf.oracles.libllama_client`): if
it dies or hangs itself, its process group is killed and the next request starts a new one.

Frames in both directions are a 4-byte little-endian length and a payload (the supervisor's
`Framing.LENGTH`), so binary input reaches llama_tokenize byte for byte. Requests:
- `M` + u32 count + that many (flag byte, u32 length, text bytes): llama_tokenize, flag bit 0
  add_special, bit 1 parse_special; answered by `O` + per input (i32 count + int32 ids), or a negative
  count alone: llama.cpp needed that many ids, more than the bound (tokconf.oracles.bound);
- `F`: the vocab facts, as `O` + JSON;
- `P` + special byte: every token's piece, as `O` + u32 count + that many u32 lengths + the pieces
  (lengths first: both sides handle 250,000 pieces as two arrays, not a struct call each);
- `D` + flag byte (bit 0 remove_special, bit 1 unparse_special) + int32 ids: llama_detokenize;
- `N` + u32 count + that many (flag byte as for `D`, u32 id count, int32 ids): llama_detokenize of
  each, answered by `O` + per request (u32 length + text).
Errors: `E` + message; `X` + crash reason (the child died on this request; the oracle then retries
its inputs one by one to find the culprit); `S` + the function's name: the child reached a stub of a
tokenizer-only library (`tokconf.builds.tokenizer_only`), which is tokconf's abort, not llama.cpp's, and
must never be recorded as one.

With `--info` instead of `--vocab` it loads the library alone and answers one frame, `O` + JSON of
what it says about itself, or `E` + why it cannot be the oracle (tokconf.oracles.probe).
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
import tempfile
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from ..core.facts import facts_to_json
from .crash import crash_reason
from .libllama import LibraryError, OverBound, Vocab, describe_library


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


def _requests(frame: bytes, item_size: int) -> Iterator[tuple[bool, bool, bytes]]:
    """The requests of an `M` or `N` frame: u32 count, then per request a flag byte, a u32 length in
    items of `item_size` bytes, and those bytes; as (bit 0, bit 1, bytes)."""
    (count,) = struct.unpack_from("<I", frame, 1)
    pos = 5
    for _ in range(count):
        flags, size = struct.unpack_from("<BI", frame, pos)
        pos += 5
        yield bool(flags & 1), bool(flags & 2), frame[pos : pos + item_size * size]
        pos += item_size * size


def _tokenize_many(vocab: Vocab, frame: bytes) -> list[bytes]:
    out = []
    for add_special, parse_special, text in _requests(frame, 1):
        try:
            ids = vocab.tokenize(text, add_special, parse_special)
        except OverBound as over:
            out.append(struct.pack("<i", -min(over.needed, 2**31 - 1)))
            continue
        out.append(struct.pack("<i", len(ids)) + array("i", ids).tobytes())
    return out


def _detokenize_many(vocab: Vocab, frame: bytes) -> list[bytes]:
    out = []
    for remove_special, unparse_special, raw in _requests(frame, 4):
        ids = array("i")
        ids.frombytes(raw)
        text = vocab.detokenize(ids.tolist(), remove_special, unparse_special)
        out.append(struct.pack("<I", len(text)) + text)
    return out


def serve(vocab: Vocab, requests: BinaryIO, answers: BinaryIO) -> None:
    """Answer frames until the parent closes the pipe."""
    while (frame := read_frame(requests)) is not None:
        op = frame[:1]
        if op == b"M":
            write_frame(answers, b"O" + b"".join(_tokenize_many(vocab, frame)))
        elif op == b"F":
            write_frame(answers, b"O" + facts_to_json(vocab.facts()))
        elif op == b"D":
            ids = array("i")
            ids.frombytes(frame[2:])
            write_frame(answers, b"O" + vocab.detokenize(ids.tolist(), bool(frame[1] & 1), bool(frame[1] & 2)))
        elif op == b"N":
            write_frame(answers, b"O" + b"".join(_detokenize_many(vocab, frame)))
        elif op == b"P":
            pieces = vocab.pieces(special=bool(frame[1]))
            lengths = array("I", map(len, pieces))
            write_frame(answers, b"O" + struct.pack("<I", len(pieces)) + lengths.tobytes() + b"".join(pieces))
        else:
            write_frame(answers, b"E" + f"unknown request {op!r}".encode())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lib", type=Path, required=True)
    parser.add_argument("--header", type=Path, required=True)
    parser.add_argument("--include", type=Path, action="append", default=[])
    task = parser.add_mutually_exclusive_group(required=True)
    task.add_argument("--vocab", type=Path, help="serve this vocabulary")
    task.add_argument("--info", action="store_true", help="answer one frame: the library's self-description")
    args = parser.parse_args()
    # Answers go to a private copy of stdout; fd 1 itself now points at stderr, because llama.cpp and
    # ggml print to stdout (ggml_print_backtrace does, on abort) and must not corrupt the frames.
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    if args.info:  # tokconf.oracles.probe: does the library load, and what does it say it is
        try:
            described = describe_library(args.lib, args.header, tuple(args.include))
        except (LibraryError, RuntimeError) as error:  # RuntimeError: gcc -E could not read llama.h
            write_frame(answers, b"E" + str(error).encode())
            return 1
        write_frame(answers, b"O" + json.dumps(described).encode())
        return 0
    try:
        vocab = Vocab(args.lib, args.header, tuple(args.include), args.vocab)
    except Exception as error:  # the parent shows it; this process has nothing else to do
        write_frame(answers, b"E" + str(error).encode())
        return 1
    last_words = _last_words()  # made before `R`: a worker that cannot make it fails loading, never later
    write_frame(answers, b"R")
    while True:
        os.lseek(last_words, 0, os.SEEK_SET)
        os.ftruncate(last_words, 0)
        child = os.fork()
        if child == 0:
            os.dup2(last_words, 1)
            os.dup2(last_words, 2)
            serve(vocab, sys.stdin.buffer, answers)
            os._exit(0)
        _, status = os.waitpid(child, 0)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            return 0  # the parent closed the pipe: done
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        said = _tail(last_words)
        os.write(2, said.encode())  # for the oracle's supervisor, which keeps the end of this process's stderr
        from ..builds.tokenizer_only import STUB_REACHED  # here: 40 ms of imports no worker start should pay

        stub = STUB_REACHED.search(said)
        write_frame(answers, b"S" + stub[1].encode() if stub else b"X" + crash_reason(said, code).encode())


def _last_words() -> int:
    """The file each child's stdout and stderr go to, read when it dies: its own, so a crash's reason is
    this child's and never an earlier one's. In memory where the system has `memfd_create` (Linux): no
    temporary folder is needed, in a sandbox or out."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("tokconf-last-words")
    with tempfile.TemporaryFile() as file:  # already unlinked: the duplicate keeps it
        return os.dup(file.fileno())


def _tail(fd: int, size: int = 8192) -> str:
    """The end of a child's last words (its stderr, and its stdout, where ggml prints a backtrace)."""
    end = os.fstat(fd).st_size
    return os.pread(fd, size, max(0, end - size)).decode("utf-8", errors="replace")


if __name__ == "__main__":
    raise SystemExit(main())
