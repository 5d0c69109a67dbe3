"""`tokconf export`: recordings as JSON lines, so a port in any language can read them without YAML.

One line per case and mode: `{"vocab", "vocab_sha256", "case", "mode", "add_special",
"parse_special", "text_b64", "ids"}`, with `"error"` (the refusal reason) in place of `"ids"` where
llama.cpp refused. Lines come in recording order, so exports of two recordings diff cleanly.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from ..core.outcome import MODES, outcome_fields
from .format import load, recording_files


def export_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of one recording file."""
    recording = load(path)
    for case in recording.cases:
        text_b64 = base64.b64encode(case.data).decode()
        for mode, outcome in case.outcomes.items():
            add_special, parse_special = MODES[mode]
            line: dict[str, Any] = {
                "vocab": recording.vocab_name,
                "vocab_sha256": recording.vocab_sha256,
                "case": case.id,
                "mode": mode,
                "add_special": add_special,
                "parse_special": parse_special,
                "text_b64": text_b64,
                **outcome_fields(outcome),
            }
            yield line


def export(paths: list[Path], sink: TextIO) -> int:
    """Write every case of every recording under `paths`; returns the number of lines."""
    count = 0
    for path in recording_files(paths):
        for line in export_lines(path):
            sink.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
            count += 1
    return count
