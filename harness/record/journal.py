"""The journal of a recording in progress: `.NAME.journal` beside the output.

One JSON line per answered case and mode, appended and flushed as it is written. An interrupted run
leaves the journal; the next run with the same inputs replays it and asks llama.cpp only for what
is missing. A journal made for other inputs (another build, vocab, corpus or seed), or one that
cannot be read, is set aside and the recording starts over.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from harness.core.outcome import MODES, Mode, Outcome, Refusal

Answer = tuple[tuple[int, Mode], Outcome]  # (case index, mode) -> outcome


class Journal:
    """Append-only progress of one recording, keyed by a hash of everything that decides its content."""

    def __init__(self, path: Path, key: str) -> None:
        self.path = path
        self.done: dict[tuple[int, Mode], Outcome] = {}
        if path.is_file():
            self._replay(key)
        if not self.done:
            path.write_text(json.dumps({"key": key}) + "\n", encoding="utf-8")
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)

    def _replay(self, key: str) -> None:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
            header = json.loads(lines[0]) if lines else {}
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            header = {}
        if not isinstance(header, dict) or header.get("key") != key:
            return
        done: dict[tuple[int, Mode], Outcome] = {}
        for line in lines[1:]:
            try:
                entry = json.loads(line)
                mode, index = entry["mode"], entry["i"]
                error = entry.get("error")
                outcome: Outcome = Refusal(error) if isinstance(error, str) else entry["ids"]
                if mode not in MODES or not isinstance(index, int) or not isinstance(outcome, Refusal | list):
                    raise ValueError(line)
            except json.JSONDecodeError:
                break  # the line being written when the run was interrupted
            except (KeyError, TypeError, ValueError):
                print(f"{self.path}: unreadable journal entry; recording starts over", file=sys.stderr)
                return
            if isinstance(outcome, Refusal) and outcome.reason.startswith("hang:"):
                continue  # a timeout depends on the machine's load that day: ask again
            done[(index, mode)] = outcome
        self.done = done

    def add(self, answers: list[Answer]) -> None:
        """Record answers to (case index, mode) pairs: one write, so a kill loses at most its last line."""
        lines = []
        for (index, mode), outcome in answers:
            entry: dict[str, Any] = {"i": index, "mode": mode}
            if isinstance(outcome, Refusal):
                entry["error"] = outcome.reason
            else:
                entry["ids"] = outcome
            lines.append(json.dumps(entry) + "\n")
            self.done[(index, mode)] = outcome
        os.write(self._fd, "".join(lines).encode())

    def finish(self) -> None:
        os.close(self._fd)
        self.path.unlink(missing_ok=True)

    def close(self) -> None:
        os.close(self._fd)
