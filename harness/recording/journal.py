"""The journal of a recording in progress: `.NAME.journal` beside the output.

One line per answered case, all modes at once, appended as it is written: `[index, plain, add, parse]`
with ids as the recording writes them (`"1 2 3"`), a refusal as `{"error": reason}`, and `"="` for an
outcome equal to the previous mode's. The text of the cases is not repeated (the journal's key
stands for it), so a journal is always smaller than the recording it becomes: 1.2 MB against 4.1 MB
for gpt-2 (`tests/test_hostile.py`).

An interrupted run leaves the journal; the next run with the same inputs replays it and asks
llama.cpp only for what is missing. A journal made for other inputs (another build, vocab, corpus or
seed), or one that cannot be read, is set aside with a message and the recording starts over. A full
disk stops the run with one error; what was journaled before stays valid.
"""

from __future__ import annotations

import errno
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..core.errors import TokconfError
from ..core.outcome import MODES, Mode, Outcome, Refusal

Answer = tuple[int, dict[Mode, Outcome]]  # a case index and its outcome in every mode
SAME = "="  # this mode's outcome equals the previous mode's


def _node(outcome: Outcome) -> Any:
    return {"error": outcome.reason} if isinstance(outcome, Refusal) else " ".join(map(str, outcome))


def _outcome(node: Any) -> Outcome:
    if isinstance(node, dict) and isinstance(node.get("error"), str):
        return Refusal(node["error"])
    if isinstance(node, str):
        return [int(i) for i in node.split()]
    raise ValueError(node)


class Journal:
    """Append-only progress of one recording, keyed by a hash of everything that decides its content."""

    def __init__(self, path: Path, key: str) -> None:
        self.path = path
        self.done: dict[int, dict[Mode, Outcome]] = {}
        if path.is_file():
            self._replay(key)
        try:
            if not self.done:
                path.write_text(json.dumps({"key": key}) + "\n", encoding="utf-8")
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        except OSError as error:
            raise self._write_error(error) from None

    def _replay(self, key: str) -> None:
        try:
            raw = self.path.read_bytes()
            lines = raw.decode("utf-8").split("\n")
            header = json.loads(lines[0])
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            header = None
        if not isinstance(header, dict) or header.get("key") != key:
            self._set_aside("it was made for other inputs or cannot be read")
            return
        done: dict[int, dict[Mode, Outcome]] = {}
        for line in lines[1:-1]:  # the text after the last newline is a line cut short by the interruption
            try:
                index, *nodes = json.loads(line)
                if not isinstance(index, int) or len(nodes) != len(MODES):
                    raise ValueError(line)
                outcomes: dict[Mode, Outcome] = {}
                previous: Outcome = []
                for mode, node in zip(MODES, nodes, strict=True):
                    previous = outcomes[mode] = previous if node == SAME else _outcome(node)
            except (json.JSONDecodeError, TypeError, ValueError):
                self._set_aside("an entry cannot be read")
                return
            if any(isinstance(o, Refusal) and o.reason.startswith("hang:") for o in outcomes.values()):
                continue  # a timeout depends on the machine's load that day: ask again
            done[index] = outcomes
        self.done = done
        with self.path.open("r+b") as handle:  # drop the cut-off line so new lines start on their own
            handle.truncate(raw.rfind(b"\n") + 1)

    def _set_aside(self, why: str) -> None:
        print(f"{self.path}: journal not used ({why}); the recording starts over", file=sys.stderr)

    def _write_error(self, error: OSError) -> TokconfError:
        full = error.errno in (errno.ENOSPC, errno.EDQUOT)
        return TokconfError(
            f"cannot write the recording journal {self.path}: {error.strerror}",
            "free disk space, then run the same command again: it resumes from what the journal holds"
            if full
            else "choose a writable folder with --out",
        )

    def add(self, answers: list[Answer]) -> None:
        """Record answers to cases, written whole (more than one write where the disk takes part of one):
        a kill loses at most a cut last line, which a replay drops."""
        lines = []
        for index, outcomes in answers:
            nodes: list[Any] = [index]
            previous: Outcome | None = None
            for mode in MODES:
                outcome = outcomes[mode]
                nodes.append(SAME if outcome == previous else _node(outcome))
                previous = outcome
            lines.append(json.dumps(nodes, separators=(",", ":")) + "\n")
        data = memoryview("".join(lines).encode())
        try:
            while data:  # a disk that fills can take part of a write without an error; the rest raises
                written = os.write(self._fd, data)
                if not written:
                    raise OSError(errno.EIO, "a write made no progress")
                data = data[written:]
        except OSError as error:
            raise self._write_error(error) from None
        self.done.update(answers)

    def finish(self) -> None:
        os.close(self._fd)
        self.path.unlink(missing_ok=True)

    def close(self) -> None:
        os.close(self._fd)
