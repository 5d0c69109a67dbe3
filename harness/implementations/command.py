"""`cmd:PROGRAM ARGS…`: a tokenizer in any language, over JSON lines (docs/line-protocol.md).

The program is one long-lived process. Anything it does wrong — crash, hang past the per-case
timeout, a line that is not JSON, an answer for another request — becomes that case's error with
what it said, and the program is restarted (and the vocabulary reloaded) for the next case.

Protocol 2 adds what protocol 1 programs could not be checked on: the vocab facts (`facts`) and
decoding (`token_to_piece`, `detokenize`), each declared by the program when it loads a vocabulary.
A program that answers the handshake without `"protocol": 2` is spoken to in protocol 1.
"""

from __future__ import annotations

import base64
import enum
import json
import os
import select
import shlex
import subprocess
import sys
import tempfile
import time
from typing import Any

from harness.core.errors import TokconfError
from harness.core.facts import ExposedFacts, Fact
from harness.core.outcome import Outcome, Refusal, RefusalKind, Request, is_utf8
from harness.implementations.base import Broken, Decoder, Session, Unsupported, VocabInfo

PROTOCOL = 2  # the newest version tokconf speaks; it also speaks 1
DECODING_OPS = frozenset({"token_to_piece", "detokenize"})
PIECES_PER_REQUEST = 4096


class InputClass(enum.Enum):
    """What a protocol 2 program may declare, in its handshake, that it cannot be given: such inputs
    are answered `{"unsupported": CLASS}` and counted per class, never passed. An unsupported answer
    that was not declared, or that does not fit the input, is an error."""

    INVALID_UTF8 = "invalid-utf8"  # the input is not valid UTF-8 (a port whose API takes strings)
    NUL = "nul"  # the input holds a NUL byte (a port on C strings)
    PARSE_SPECIAL = "parse-special"  # requests with parse_special true
    ADD_SPECIAL = "add-special"  # requests with add_special true
    OTHER = "other"  # any input, with a `reason` (shown and counted apart)

    def fits(self, request: Request) -> bool:
        data, add_special, parse_special = request
        if self is InputClass.INVALID_UTF8:
            return not is_utf8(data)
        if self is InputClass.NUL:
            return b"\x00" in data
        if self is InputClass.PARSE_SPECIAL:
            return parse_special
        if self is InputClass.ADD_SPECIAL:
            return add_special
        return True


class ProgramFailed(Exception):
    """The program broke the protocol on one request; the message says how."""


MAX_LINE = 64 << 20  # the longest answer line taken (a 1 MB input's ids are about 2 MB of JSON)
STDERR_KEPT = 1 << 20  # the program's stderr is kept up to this much, then started over


class Program:
    """One running instance of the program, with line-based I/O that cannot hang: every request has
    one deadline for writing it and reading the whole answer, writes never block on a program that
    stopped reading, a closed stdout is noticed while the program lives, and an answer line is
    bounded (`MAX_LINE`) and gathered in linear time."""

    def __init__(self, argv: list[str], timeout: float) -> None:
        self.argv = argv
        self.timeout = timeout
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the program)
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, bufsize=0
            )
        except OSError as error:
            self._stderr.close()
            raise TokconfError(f"cannot start {shlex.join(argv)}: {error.strerror}", "check the cmd: program") from None
        assert self.proc.stdin is not None and self.proc.stdout is not None
        os.set_blocking(self.proc.stdin.fileno(), False)
        self._buffer = bytearray()
        self._next_id = 0

    def stderr_tail(self, lines: int = 5) -> str:
        size = self._stderr.seek(0, os.SEEK_END)
        self._stderr.seek(max(0, size - 4000))
        text = self._stderr.read().decode("utf-8", errors="replace")
        if size > STDERR_KEPT:  # a chatty program: keep the disk it uses bounded
            self._stderr.truncate(0)
        return "\n".join(text.strip().splitlines()[-lines:])

    def _remaining(self, deadline: float) -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ProgramFailed(f"no answer within {self.timeout:g} s")
        return left

    def _write(self, data: bytes, deadline: float) -> None:
        assert self.proc.stdin is not None
        fd = self.proc.stdin.fileno()
        view = memoryview(data)
        while view:
            _, ready, _ = select.select([], [fd], [], self._remaining(deadline))
            if not ready:
                continue
            try:
                view = view[os.write(fd, view) :]
            except BrokenPipeError:
                raise ProgramFailed(f"the program closed its input ({self._status()})") from None
            except BlockingIOError:
                continue

    def _status(self) -> str:
        """How the program ended, waiting briefly; a program that closed its pipes but lives is killed."""
        try:
            code = self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return "it closed its output but kept running, and was killed"
        tail = self.stderr_tail()
        return f"the program exited with status {code}" + (f"; stderr: {tail}" if tail else "")

    def _readline(self, deadline: float) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        searched = 0
        while (end := self._buffer.find(b"\n", searched)) < 0:
            searched = len(self._buffer)
            if searched > MAX_LINE:
                raise ProgramFailed(f"answered a line longer than {MAX_LINE >> 20} MiB without a newline")
            ready, _, _ = select.select([fd], [], [], self._remaining(deadline))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise ProgramFailed(self._status())
            self._buffer += chunk
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        return line

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send one request, return its answer, or raise ProgramFailed saying what went wrong."""
        deadline = time.monotonic() + self.timeout
        request_id = self._next_id
        self._next_id += 1
        self._write((json.dumps({**message, "id": request_id}) + "\n").encode(), deadline)
        line = self._readline(deadline)
        try:
            answer = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ProgramFailed(f"answered a line that is not JSON: {line[:200]!r}") from None
        if not isinstance(answer, dict) or answer.get("id") != request_id:
            raise ProgramFailed(f"answered for another request (wanted id {request_id}): {line[:200]!r}")
        return answer

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()
        self._stderr.close()


STOP_AFTER = 5  # consecutive broken answers after which a vocabulary's remaining cases are not sent
PROGRESS_SECONDS = 5.0


class CommandSession:
    """One vocabulary loaded into the program; the program is restarted after any failure, and given
    up on (its remaining cases errors, with the reason once) after `STOP_AFTER` failures in a row."""

    def __init__(self, owner: CommandImplementation, vocab: VocabInfo) -> None:
        self.owner = owner
        self.vocab = vocab
        self.dead: str | None = None  # why the program could not be (re)started: every later case is an error
        self.failures_in_a_row = 0
        self.ops: frozenset[str] = frozenset()  # the protocol 2 ops the program declared for this vocabulary

    def _load(self) -> None:
        vocab = self.vocab
        message: dict[str, Any] = {"op": "load", "path": str(vocab.path), "vocab_type": vocab.vocab_type}
        message.update(model=vocab.model, pre=vocab.pre)
        if self.owner.protocol >= 2:
            message.update(name=vocab.name, sha256=vocab.sha256, n_tokens=vocab.n_tokens, special_ids=vocab.special_ids)
        answer = self.owner.program().ask(message)
        if answer.get("ok") is not True:
            raise Unsupported(str(answer.get("error") or f"the program did not load {vocab.path.name}"))
        if self.owner.protocol >= 2:
            _same_vocabulary(vocab, answer)
        ops = answer.get("ops", []) if self.owner.protocol >= 2 else []
        self.ops = frozenset(op for op in ops if isinstance(op, str)) if isinstance(ops, list) else frozenset()

    def start(self) -> None:
        """Load the vocabulary into the program, restarting it first when it failed; a program that
        cannot be brought back makes the session dead, not the run."""
        try:
            self._load()
        except ProgramFailed as failure:
            self.dead = f"the program failed loading {self.vocab.path.name}: {failure}"

    def _restart(self) -> None:
        try:
            self.owner.restart()
        except TokconfError as error:
            self.dead = f"the program could not be restarted: {error.problem}"
            return
        try:
            self.start()
        except (Unsupported, Broken) as why:  # it loaded the vocabulary before, and now declines it
            self.dead = f"after a restart, the program did not load {self.vocab.path.name}: {why}"

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        """One request for this vocabulary; a failure restarts the program (or, after `STOP_AFTER` in a
        row, gives up on it) and is raised as ProgramFailed."""
        if self.dead is not None:
            raise ProgramFailed(self.dead)
        try:
            answer = self.owner.program().ask(message)
        except ProgramFailed as failure:
            self.failures_in_a_row += 1
            if self.failures_in_a_row >= STOP_AFTER:
                self.dead = _given_up(self.failures_in_a_row, str(failure))
            else:
                self._restart()
            raise
        self.failures_in_a_row = 0
        return answer

    def encode_one(self, request: Request) -> Outcome:
        data, add_special, parse_special = request
        message = {"op": "encode", "text_b64": base64.b64encode(data).decode()}
        try:
            answer = self.ask({**message, "add_special": add_special, "parse_special": parse_special})
        except ProgramFailed as failure:
            return Refusal(str(failure), RefusalKind.BROKEN)
        if "error" in answer:
            return Refusal(str(answer["error"]))
        if self.owner.protocol >= 2 and "unsupported" in answer:
            return self.owner.unsupported(request, answer)
        ids = answer.get("ids")
        if not isinstance(ids, list) or not all(_is_id(i) for i in ids):
            return Refusal(f"`ids` is not a list of integers: {json.dumps(answer)[:200]}", RefusalKind.BROKEN)
        return ids

    def encode_many(self, requests: list[Request]) -> list[Outcome]:
        """One request at a time, with a progress line every few seconds (a live one on a terminal)."""
        live = sys.stderr.isatty()
        shown = time.monotonic()
        out: list[Outcome] = []
        for request in requests:
            out.append(self.encode_one(request))
            if time.monotonic() - shown >= PROGRESS_SECONDS:
                shown = time.monotonic()
                line = f"  {self.vocab.path.name}: {len(out)}/{len(requests)} answered by {self.owner.argv[0]}"
                print(line, end="\r" if live else "\n", file=sys.stderr, flush=True)
        return out

    def decoder(self) -> Decoder | None:
        """The program's decoding, when it declared both decoding ops for this vocabulary (protocol 2)."""
        return CommandDecoder(self) if self.ops >= DECODING_OPS else None

    def facts(self) -> ExposedFacts:
        """The facts the program answers to `facts` (protocol 2); the ones it leaves out are not checked.
        A wrong type (`1` for a flag, `true` for an id) is broken, not compared: in Python `True == 1`."""
        if "facts" not in self.ops:
            return {}
        try:
            answer = self.ask({"op": "facts"})
        except ProgramFailed as failure:
            raise Broken(f"the facts request failed: {failure}") from None
        given = answer.get("facts")
        if not isinstance(given, dict):
            raise Broken(f"the facts answer has no `facts` object: {json.dumps(answer)[:200]}")
        found: ExposedFacts = {}
        for fact in Fact:
            value = given.get(fact.value)
            if value is None:
                continue
            if fact in (Fact.ADD_BOS, Fact.ADD_EOS) and not isinstance(value, bool):
                raise Broken(f"fact {fact.value} must be true or false, not {json.dumps(value)}")
            if fact in (Fact.BOS, Fact.EOS) and not _is_id(value):
                raise Broken(f"fact {fact.value} must be a token id, not {json.dumps(value)}")
            if fact is Fact.EOG_IDS:
                if not isinstance(value, list) or not all(_is_id(i) for i in value):
                    raise Broken(f"fact eog_ids must be a list of token ids, not {json.dumps(value)[:200]}")
                value = sorted(value)
            found[fact] = value
        return found

    def close(self) -> None:
        """The program stays up for the next vocabulary."""


def _same_vocabulary(vocab: VocabInfo, answer: dict[str, Any]) -> None:
    """A program that says which vocabulary it loaded (`n_tokens`, `special_ids` in its load answer)
    and names another one is stopped there, with one reason for every case, not thousands of failures."""
    differences = []
    if "n_tokens" in answer and answer["n_tokens"] != vocab.n_tokens:
        differences.append(f"n_tokens {answer['n_tokens']!r} (llama.cpp: {vocab.n_tokens})")
    given = answer.get("special_ids", {})
    if isinstance(given, dict):
        for name, token in sorted(given.items()):
            if name in vocab.special_ids and token != vocab.special_ids[name]:
                differences.append(f"{name} {token!r} (llama.cpp: {vocab.special_ids[name]})")
    if differences:
        raise Broken(f"vocabulary mismatch: the program loaded another vocabulary than {vocab.path.name}: "
                     + ", ".join(differences))  # fmt: skip


def _is_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class CommandDecoder:
    """`token_to_piece` and `detokenize` over the protocol (version 2); a failure is raised, and the
    check engine reports that decoding check as an error."""

    def __init__(self, session: CommandSession) -> None:
        self.session = session

    def _answer(self, message: dict[str, Any], key: str) -> Any:
        answer = self.session.ask(message)
        if "error" in answer:
            raise ProgramFailed(f"{message['op']} answered an error: {answer['error']}")
        if key not in answer:
            raise ProgramFailed(f"the {message['op']} answer has no `{key}`: {json.dumps(answer)[:200]}")
        return answer[key]

    def pieces(self, special: bool) -> list[bytes]:
        """Every token's piece, `PIECES_PER_REQUEST` ids a request."""
        n_tokens = self.session.vocab.n_tokens or 0
        pieces: list[bytes] = []
        for start in range(0, n_tokens, PIECES_PER_REQUEST):
            ids = list(range(start, min(n_tokens, start + PIECES_PER_REQUEST)))
            given = self._answer({"op": "token_to_piece", "ids": ids, "special": special}, "pieces_b64")
            if not isinstance(given, list) or len(given) != len(ids):
                raise ProgramFailed(f"token_to_piece answered {len(given) if isinstance(given, list) else 'no'} "
                                    f"pieces for {len(ids)} ids")  # fmt: skip
            pieces += [_b64(piece) for piece in given]
        return pieces

    def detokenize(self, ids: list[int], remove_special: bool, unparse_special: bool) -> bytes:
        message = {"op": "detokenize", "ids": ids, "remove_special": remove_special, "unparse_special": unparse_special}
        return _b64(self._answer(message, "text_b64"))


def _b64(value: Any) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (TypeError, ValueError):
        raise ProgramFailed(f"not base64: {str(value)[:80]!r}") from None


def _given_up(count: int, failure: str) -> str:
    why = f"given up after {count} failures in a row, the last: {failure}"
    if "not JSON" in failure:
        why += " (the program writes other lines on stdout: stdout is for protocol answers only, log to stderr)"
    return why


class CommandImplementation:
    """`cmd:PROGRAM ARGS…`, started once and restarted only when it fails."""

    def __init__(self, command: str, timeout: float, label: str = "cmd") -> None:
        try:
            self.argv = shlex.split(command)
        except ValueError as error:  # an unclosed quote
            raise TokconfError(
                f"--impl cmd:{command}: {error}", "quote the program and its arguments as a shell would"
            ) from None
        if not self.argv:
            raise TokconfError("--impl cmd: needs a program", "e.g. --impl 'cmd:./my-tokenizer --serve'")
        self.timeout = timeout
        self._program: Program | None = None
        self.info = self._handshake()
        self.protocol = 2 if self.info.get("protocol") == 2 else 1  # what the program speaks
        self.declared = self._declared() if self.protocol >= 2 else frozenset()
        self.name = f"{self.info.get('name', self.argv[0])} ({label})"

    def _handshake(self) -> dict[str, Any]:
        try:
            answer = self.program().ask({"op": "hello", "protocol": PROTOCOL})
        except ProgramFailed as failure:
            self.close()
            raise TokconfError(
                f"{shlex.join(self.argv)} failed the handshake: {failure}", "see docs/line-protocol.md"
            ) from None
        if not isinstance(answer.get("vocab_types"), list):
            self.close()
            raise TokconfError(f"{shlex.join(self.argv)}: the hello answer has no `vocab_types` list: {answer}")
        return answer

    def _declared(self) -> frozenset[InputClass]:
        """The input classes the handshake says the program cannot be given."""
        names = self.info.get("unsupported", [])
        classes = {c.value: c for c in InputClass}
        if not isinstance(names, list) or not all(isinstance(n, str) and n in classes for n in names):
            self.close()
            raise TokconfError(
                f"{shlex.join(self.argv)}: the hello answer's `unsupported` must list input classes "
                f"({', '.join(classes)}), not {names!r}",
                "see docs/line-protocol.md, section 1",
            )
        return frozenset(classes[n] for n in names)

    def unsupported(self, request: Request, answer: dict[str, Any]) -> Refusal:
        """An `unsupported` answer: counted under its declared class, or an error when the class was
        not declared or does not fit the input (a gate must not be passed by declining inputs)."""
        name, reason = answer["unsupported"], answer.get("reason")
        cls = next((c for c in InputClass if c.value == name), None)
        if cls is None or cls not in self.declared:
            declared = ", ".join(sorted(c.value for c in self.declared)) or "none"
            why = f"answered unsupported ({name!r}) without declaring it in the handshake (declared: {declared})"
            return Refusal(why, RefusalKind.BROKEN)
        if not cls.fits(request):
            return Refusal(
                f"answered unsupported ({cls.value}) for an input that is not {cls.value}", RefusalKind.BROKEN
            )
        detail = f": {reason}" if cls is InputClass.OTHER and isinstance(reason, str) else ""
        return Refusal(f"{cls.value} (declared unsupported){detail}", RefusalKind.UNSUPPORTED)

    def program(self) -> Program:
        if self._program is None:
            self._program = Program(self.argv, self.timeout)
        return self._program

    def restart(self) -> None:
        if self._program is not None:
            self._program.proc.kill()
            self._program.close()
        self._program = None
        self._handshake()

    def open(self, vocab: VocabInfo) -> Session:
        if vocab.vocab_type not in self.info["vocab_types"]:
            raise Unsupported(f"the program supports {self.info['vocab_types']}, not {vocab.vocab_type}")
        session = CommandSession(self, vocab)
        session.start()
        return session

    def close(self) -> None:
        if self._program is not None:
            self._program.close()
            self._program = None
