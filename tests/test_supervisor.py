"""The one supervisor of child processes (`tokconf.core.supervisor`): its two framings, and the llama.cpp
worker held by it as a `cmd:` program is (a framing it breaks is an error of its own, never llama.cpp's
abort)."""

from __future__ import annotations

import os
import signal
import struct
import sys
import textwrap
import time
from pathlib import Path

import pytest
from tokconf.builds.build import Build
from tokconf.core.outcome import Refusal, RefusalKind
from tokconf.core.supervisor import Framing, Program, ProgramExited, ProgramFailed
from tokconf.oracles import libllama_client as client
from tokconf.oracles.libllama_client import LibllamaOracle


@pytest.mark.parametrize(
    ("framing", "buffer", "cut"),
    [
        (Framing.LINE, b"", None),
        (Framing.LINE, b'{"id": 1}', None),
        (Framing.LINE, b'{"id": 1}\n{"id"', (9, 10)),
        (Framing.LENGTH, b"\x03\x00", None),
        (Framing.LENGTH, b"\x03\x00\x00\x00ab", None),
        (Framing.LENGTH, b"\x03\x00\x00\x00abcX", (7, 7)),
        (Framing.LENGTH, b"\x00\x00\x00\x00", (4, 4)),
    ],
)
def test_a_framing_finds_a_whole_message_and_only_one(framing: Framing, buffer: bytes, cut: tuple[int, int]) -> None:
    assert framing.cut(bytearray(buffer), 0, 1 << 20) == cut
    if cut is not None:
        assert framing.message(bytearray(buffer), cut[0]) == (b'{"id": 1}' if framing is Framing.LINE else buffer[4:7])


def test_a_framing_refuses_a_message_over_its_bound_before_it_is_whole() -> None:
    with pytest.raises(ProgramFailed, match="announced an answer of 1000 bytes, more than the 999 it may take"):
        Framing.LENGTH.cut(bytearray(struct.pack("<I", 1000)), 0, 999)
    with pytest.raises(ProgramFailed, match="answered a line longer than"):
        Framing.LINE.cut(bytearray(b"x" * 1001), 0, 1000)
    assert Framing.LENGTH.frame(b"abc") == b"\x03\x00\x00\x00abc"
    assert Framing.LINE.frame(b"abc") == b"abc\n"


ECHO = textwrap.dedent(
    """
    import struct, sys
    while head := sys.stdin.buffer.read(4):
        (size,) = struct.unpack("<I", head)
        data = sys.stdin.buffer.read(size)
        if data == b"lie":  # announces 1 GiB and sends 3 bytes
            sys.stdout.buffer.write(struct.pack("<I", 1 << 30) + b"abc")
        elif data == b"die":
            sys.stderr.write("dying now\\n")
            sys.exit(3)
        else:
            sys.stdout.buffer.write(struct.pack("<I", len(data) * 2) + data * 2)
        sys.stdout.buffer.flush()
    """
)


def test_a_length_framed_program_is_held_as_a_line_framed_one(tmp_path: Path) -> None:
    """The llama.cpp worker's framing, on a program of the test's: binary answers of any size, a
    length over the bound refused before it is read (the program ended), an exit with its status."""
    script = tmp_path / "echo.py"
    script.write_text(ECHO)
    program = Program([sys.executable, str(script)], 10, framing=Framing.LENGTH, max_answer=1 << 20)
    assert program.exchange(b"\n\x00\xff") == b"\n\x00\xff" * 2  # no line in it: bytes, whole
    assert program.exchange(b"x" * 300_000) == b"x" * 600_000  # more than a pipe holds at once
    with pytest.raises(
        ProgramFailed, match=f"announced an answer of {1 << 30} bytes, more than the {1 << 20} it may take"
    ):
        program.exchange(b"lie")
    assert not program.running
    again = Program([sys.executable, str(script)], 10, framing=Framing.LENGTH)
    with pytest.raises(ProgramExited, match="exited with status 3; stderr: dying now"):
        again.exchange(b"die")
    assert again.end() == 3


def test_a_llama_cpp_worker_breaking_its_framing_is_an_error_never_its_abort(
    llama_build: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer over the worker's bound is cut off by the supervisor: the case is an error naming why
    (BROKEN: never agreement with a recorded abort), and the next request gets a fresh worker."""
    vocab = llama_build.models_dir / "ggml-vocab-gpt-2.gguf"
    text = b"Hello world " * 40
    with LibllamaOracle(llama_build, vocab, timeout=20) as oracle:
        ids = oracle.tokenize(text, False, False)
        assert isinstance(ids, list)
        monkeypatch.setattr(client, "MAX_ANSWER", 100)
        oracle.close()  # the next request starts a worker held to the new bound
        long = oracle.tokenize(text, False, False)
        monkeypatch.setattr(client, "MAX_ANSWER", 1 << 30)
        again = oracle.tokenize(text, False, False)
    size = 1 + 4 + 4 * len(ids)  # `O`, the count, the ids
    reason = f"llama.cpp's worker failed: announced an answer of {size} bytes, more than the 100 it may take"
    assert long == Refusal(reason, RefusalKind.BROKEN)
    assert again == ids and oracle.restarts == 2


def test_a_llama_cpp_worker_that_died_idle_costs_no_answer(llama_build: Build) -> None:
    """A worker killed between requests did not die on the next one: that request goes to a fresh
    worker and gets llama.cpp's ids (it was a crash reason, an abort no input caused)."""
    vocab = llama_build.models_dir / "ggml-vocab-gpt-2.gguf"
    with LibllamaOracle(llama_build, vocab, timeout=20) as oracle:
        ids = oracle.tokenize(b"Hello world", False, False)
        assert oracle._program is not None
        os.killpg(oracle._program.proc.pid, signal.SIGKILL)
        time.sleep(0.2)  # dead before the request, not during it
        assert oracle.tokenize(b"Hello world", False, False) == ids
        assert (oracle.restarts, oracle.crashes) == (1, 0)
