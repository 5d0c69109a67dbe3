"""What a campaign found: each shrunk divergence, appended to `found-<vocab>.yaml` as a corpus case (so
the next `tokconf record` keeps it), and the report lines both front ends print."""

from __future__ import annotations

import datetime
import hashlib
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.core.errors import TokconfError
from harness.core.files import atomic_write
from harness.core.outcome import Mode, Outcome, render_outcome
from harness.core.render import INVISIBLE, code_points, first_divergence, ids_window, visible


@dataclass
class Finding:
    vocab: str
    mode: Mode
    data: bytes
    expected: Outcome
    actual: Outcome
    reason: str
    vocab_path: Path | None = None  # its GGUF file, for pieces in the report
    seed: int | None = None  # the campaign's --seed (None: random, replayed from the example database)


def write_findings(found_dir: Path, findings: list[Finding], seed: int | None, impl_name: str) -> list[Path]:
    """Append each finding as a corpus case in `found-<vocab>.yaml` (deduplicated by input)."""
    written = []
    today = datetime.date.today().isoformat()
    for vocab in sorted({f.vocab for f in findings}):
        path = found_dir / f"found-{vocab}.yaml"
        doc = _load_found(path, vocab)
        known = {case["id"] for case in doc["cases"]}
        for finding in (f for f in findings if f.vocab == vocab):
            case_id = "fuzz-" + hashlib.sha256(finding.data).hexdigest()[:12]
            if case_id in known:
                continue
            known.add(case_id)
            case: dict[str, object] = {"id": case_id}
            try:
                case["text"] = finding.data.decode("utf-8")
            except UnicodeDecodeError:
                case["bytes_hex"] = finding.data.hex()
            case["why"] = (
                f"found by tokconf fuzz on {today}: vocab {vocab}, mode {finding.mode}, "
                f"{'random seed' if seed is None else f'seed {seed}'}, "
                f"implementation {impl_name}: {finding.reason}"
            )
            doc["cases"].append(case)
        found_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(path, _dump_visible(doc), "found cases")
        written.append(path)
    return written


class _VisibleDumper(yaml.CSafeDumper):
    """Strings holding an invisible character (U+3000, U+200B, …) are written double-quoted, so that
    `_dump_visible` can spell the character as an escape: a found input stays readable in review."""


def _represent_str(dumper: yaml.CSafeDumper, text: str) -> yaml.ScalarNode:
    style = '"' if any(c in INVISIBLE for c in text) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_VisibleDumper.add_representer(str, _represent_str)


def _dump_visible(doc: dict[str, Any]) -> str:
    """YAML with every invisible character as a `\\uXXXX` escape (they occur only in double-quoted
    scalars, where YAML reads the escape back as the character)."""
    text = yaml.dump(doc, Dumper=_VisibleDumper, sort_keys=False, allow_unicode=True, width=1 << 30)
    for char in INVISIBLE:
        text = text.replace(char, f"\\u{ord(char):04X}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08X}")
    return text


def _load_found(path: Path, vocab: str) -> dict[str, Any]:
    if not path.is_file():
        return {"theme": f"found-{vocab}", "description": "inputs on which a fuzz campaign found a divergence",
                "cases": []}  # fmt: skip
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        raise TokconfError(f"{path} is not a corpus file", "move it away; tokconf fuzz writes found cases there")
    return doc


def describe_finding(finding: Finding, impl_name: str, impl_spec: str) -> list[str]:
    """A shrunk divergence as the report lines both front ends print: the input, both answers with
    their pieces around the first difference, and the command that finds it again."""
    lines = [
        f"{finding.vocab} [{finding.mode}] {finding.reason}",
        f"  input:     {visible(finding.data)}   ({code_points(finding.data)})",
    ]
    expected, actual = finding.expected, finding.actual
    if isinstance(expected, list) and isinstance(actual, list):
        at = first_divergence(expected, actual)
        lines.append(f"  llama.cpp: {ids_window(expected, at, finding.vocab_path, 3)}")
        lines.append(f"  {impl_name}: {ids_window(actual, at, finding.vocab_path, 3)}")
    else:
        lines.append(f"  llama.cpp: {render_outcome(expected)}")
        lines.append(f"  {impl_name}: {render_outcome(actual)}")
    command = ["tokconf", "fuzz", "--impl", impl_spec, "--vocab", finding.vocab, "--mode", finding.mode]
    if finding.seed is not None:
        lines.append(f"  reproduce: {shlex.join([*command, '--seed', str(finding.seed)])}")
    else:
        lines.append(f"  reproduce: {shlex.join(command)}   (random seed: replayed first from the example database)")
    return lines
