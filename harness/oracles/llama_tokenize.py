"""`llama-tokenize` once per input: the independent path `tokconf record --backend cli` compares the
libllama worker against (~0.4 s an input: it reloads the vocab every time). Each run is held by the
supervisor (`tokconf.core.supervisor`, `Program.run_once`): its process group killed at the deadline,
its output bounded."""

from __future__ import annotations

from pathlib import Path

from ..builds.build import Build
from ..core.outcome import Outcome, Refusal, RefusalKind
from ..core.supervisor import Framing, Program, ProgramFailed, ProgramTimedOut
from .bound import max_ids, over_bound
from .crash import crash_reason
from .libllama_client import DEFAULT_TIMEOUT


class CliOracle:
    """`llama-tokenize` once per input: exact bytes on stdin, no escapes, BOS and specials set explicitly."""

    def __init__(self, build: Build, vocab: Path, add_bos: bool, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.build = build
        self.vocab = vocab
        self.add_bos = add_bos
        self.timeout = timeout

    def expresses(self, add_special: bool, parse_special: bool) -> bool:
        """Whether llama-tokenize has flags for this mode.

        llama-tokenize passes `add_special = llama_vocab_get_add_bos(vocab) && !--no-bos`
        (tools/tokenize/tokenize.cpp), so add_special=true is reachable only for vocabs that add BOS.
        """
        return not add_special or self.add_bos

    def tokenize(self, data: bytes, add_special: bool, parse_special: bool) -> Outcome:
        if not self.expresses(add_special, parse_special):
            raise ValueError("llama-tokenize cannot express add_special=true for a vocab that does not add BOS")
        command = [str(self.build.llama_tokenize), "-m", str(self.vocab), "--stdin", "--ids", "--no-escape"]
        command += ["--log-disable"]
        if not add_special:
            command.append("--no-bos")
        if not parse_special:
            command.append("--no-parse-special")
        program = Program(command, self.timeout, {"GGML_NO_BACKTRACE": "1"}, framing=Framing.WHOLE)
        try:
            status, output = program.run_once(data)
        except ProgramTimedOut:
            return Refusal(f"hang: no answer within {self.timeout:g} s", RefusalKind.BROKEN)
        except ProgramFailed as error:
            return Refusal(f"llama-tokenize failed: {error}", RefusalKind.BROKEN)
        if status != 0:
            return Refusal(crash_reason(program.stderr.text(), status))
        line = output.decode().strip().splitlines()[-1]
        ids = [int(x) for x in line.strip("[]").split(",") if x.strip()]
        if len(ids) > max_ids(len(data)):  # as the worker holds libllama's answer (tokconf.oracles.bound)
            return Refusal(f"llama-tokenize {over_bound(len(ids), len(data))}", RefusalKind.BROKEN)
        return ids

    def close(self) -> None:
        """Nothing to release: each call is its own process."""
