"""The expected-failure file: known divergences that should not fail the gate, each with its reason.

An entry names `vocab/mode/case` (or `vocab/*/case`). A listed case that fails is `xfailed`; one that
passes is `xpassed` and fails the run, so a fixed divergence gets its entry removed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from harness.core.errors import TokconfError


@dataclass(frozen=True)
class Entry:
    reason: str
    link: str = ""

    def describe(self) -> str:
        return f"{self.reason} {self.link}".strip()


@dataclass
class ExpectedFailures:
    """`vocab/mode/case` (or `vocab/*/case`) -> its entry, from a YAML file (docs/checking.md)."""

    entries: dict[str, Entry] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path | None) -> ExpectedFailures:
        if path is None:
            return cls()
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as error:
            raise TokconfError(f"cannot read expected-failure file {path}: {error}") from None
        entries = doc.get("expected_failures") if isinstance(doc, dict) else None
        if not isinstance(entries, list):
            raise TokconfError(f"{path}: needs an `expected_failures` list", "see docs/checking.md")
        found = {}
        for entry in entries:
            if not isinstance(entry, dict) or not {"case", "reason"} <= set(entry):
                raise TokconfError(f"{path}: each entry needs `case` (vocab/mode/case id) and `reason`: {entry}")
            found[str(entry["case"])] = Entry(str(entry["reason"]), str(entry.get("link", "")))
        return cls(found)

    def lookup(self, vocab: str, mode: str, case: str) -> Entry | None:
        return self.entries.get(f"{vocab}/{mode}/{case}") or self.entries.get(f"{vocab}/*/{case}")
