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


STUBBED_CHILD = textwrap.dedent(
    """
    import struct, sys
    def say(payload):
        sys.stdout.buffer.write(struct.pack("<I", len(payload)) + payload)
        sys.stdout.buffer.flush()
    say(b"R")  # loaded
    while head := sys.stdin.buffer.read(4):
        sys.stdin.buffer.read(struct.unpack("<I", head)[0])
        say(b"Sdownstream_hook(unsigned int)")  # as the fork server says a child's stub
    """
)


def test_a_stub_a_forked_child_reaches_is_an_error_never_an_abort(
    llama_build: Build, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A child of the worker's fork server that reaches a stub of the tokenizer-only library dies by
    SIGABRT, as llama.cpp aborting would: the server says `S` and the function's name (not `X` and a
    crash reason), and the oracle raises StubReached, so no recording holds tokconf's abort as
    llama.cpp's refusal."""
    script = tmp_path / "worker.py"
    script.write_text(STUBBED_CHILD)
    monkeypatch.setattr(client.isolated, "command", lambda module, args: [sys.executable, str(script)])
    vocab = llama_build.models_dir / "ggml-vocab-gpt-2.gguf"
    with LibllamaOracle(llama_build, vocab, timeout=20) as oracle, pytest.raises(client.StubReached) as stub:
        oracle.tokenize(b"Hello", False, False)
    assert "reached downstream_hook(unsigned int), which it has as a stub" in str(stub.value)


ONE_SHOT = {  # a one-shot program's whole input on stdin -> (status, output), or the failure it must be
    "echoes and exits 3": ("import sys; sys.stdout.write(sys.stdin.read().upper()); sys.exit(3)", (3, b"ABC")),
    "hangs": ("import sys, time; sys.stdin.read(); time.sleep(60)", "no answer within 1 s"),
    "floods": ("import sys; sys.stdin.read(); sys.stdout.write('x' * 5000)", "more than the 4096 bytes"),
    "lives on": ("import os, sys, time; sys.stdin.read(); os.close(1); time.sleep(60)", "kept running"),
    "reads nothing": ("import sys; sys.exit(5)", (5, b"")),
}


@pytest.mark.parametrize("name", sorted(ONE_SHOT))
def test_a_one_shot_program_gives_its_status_and_output_or_is_ended(name: str) -> None:
    """`Framing.WHOLE` (llama-tokenize, `tokconf.oracles.llama_tokenize`): all of the input, closed after
    it; all of the output and the exit status, within the deadline and the bound, or a `ProgramFailed`
    that says why, the program's whole group killed."""
    source, want = ONE_SHOT[name]
    program = Program([sys.executable, "-c", source], 1.0, framing=Framing.WHOLE, max_answer=4096)
    data = b"abc" if name != "reads nothing" else b"x" * (1 << 20)  # more than a pipe holds: it never reads it
    started = time.monotonic()
    if isinstance(want, tuple):
        assert program.run_once(data) == want
    else:
        with pytest.raises(ProgramFailed, match=want):
            program.run_once(data)
    assert not program.running and time.monotonic() - started < 30
    with pytest.raises(ProcessLookupError):
        os.killpg(program.proc.pid, 0)


def test_a_length_framed_program_saying_more_than_asked_is_ended_showing_its_bytes() -> None:
    """The answer and bytes nobody asked for, in one write: the next request finds them and ends the
    program, showing the bytes (a binary framing has no line to show)."""
    source = (
        "import struct, sys\n"
        "size = struct.unpack('<I', sys.stdin.buffer.read(4))[0]; sys.stdin.buffer.read(size)\n"
        "sys.stdout.buffer.write(struct.pack('<I', 2) + b'ok' + b'\\x01\\x02\\x03'); sys.stdout.buffer.flush()\n"
        "sys.stdin.buffer.read()\n"
    )
    program = Program([sys.executable, "-c", source], 10, framing=Framing.LENGTH)
    assert program.exchange(b"hi") == b"ok"
    with pytest.raises(ProgramFailed, match=r"wrote output nobody asked for: b'\\x01\\x02\\x03'"):
        program.exchange(b"again")
    assert not program.running
