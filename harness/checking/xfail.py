"""The expected-failure file: known divergences that should not fail the gate, each with its reason.

An entry's `case` is `vocab/mode/case` with shell-style globs in any part (`qwen2/*/whitespace/*`,
`*/bos/vocab/*-after-bos`). A listed case that fails is `xfailed`; one that passes is `xpassed` and
fails the run, so a fixed divergence gets its entry removed. An entry that matched nothing in the
vocabularies checked is reported, and with `--strict-xfail` fails the run: a typo must not hide.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import TokconfError
from ..core.files import FileKind
from ..core.plain_yaml import shown
from ..recording.yaml_io import load_untrusted


@dataclass(frozen=True)
class Entry:
    pattern: str
    reason: str
    link: str = ""

    def describe(self) -> str:
        return f"{self.reason} {self.link}".strip()


@dataclass
class ExpectedFailures:
    """The entries of a YAML file (docs/checking.md), and which of them matched a checked case."""

    entries: list[Entry] = field(default_factory=list)
    matched: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._exact = {e.pattern: e for e in self.entries if not _is_glob(e.pattern)}
        self._globs = [(re.compile(fnmatch.translate(e.pattern)), e) for e in self.entries if _is_glob(e.pattern)]

    @classmethod
    def load(cls, path: Path | None) -> ExpectedFailures:
        if path is None:
            return cls()
        doc = load_untrusted(path, FileKind.XFAIL)  # plain data, a regular file within its cap: no aliases
        entries = doc.get("expected_failures") if isinstance(doc, dict) else None
        if not isinstance(entries, list):
            raise TokconfError(f"{path}: needs an `expected_failures` list", "see docs/checking.md")
        found = []
        for number, entry in enumerate(entries, 1):
            where = f"{path}: entry {number}"
            if not isinstance(entry, dict) or not {"case", "reason"} <= set(entry):
                raise TokconfError(f"{where} needs `case` (vocab/mode/case id) and `reason`, not {shown(entry)}")
            fields = {key: entry.get(key, "") for key in ("case", "reason", "link")}
            wrong = [key for key, value in fields.items() if not isinstance(value, str)]
            if wrong:
                raise TokconfError(f"{where}: `{wrong[0]}` must be a string, not {shown(fields[wrong[0]])}")
            if fields["case"].count("/") < 2:
                raise TokconfError(
                    f"{where}: `case` {shown(fields['case'])} is not vocab/mode/case", "see docs/checking.md"
                )
            found.append(Entry(fields["case"], fields["reason"], fields["link"]))
        return cls(found)

    def lookup(self, vocab: str, mode: str, case: str) -> Entry | None:
        key = f"{vocab}/{mode}/{case}"
        entry = self._exact.get(key) or self._exact.get(f"{vocab}/*/{case}")
        if entry is None:
            entry = next((e for regex, e in self._globs if regex.match(key)), None)
        if entry is not None:
            self.matched.add(entry.pattern)
        return entry

    def unmatched(self, vocabs: set[str]) -> list[Entry]:
        """The entries for the vocabularies checked that matched no case."""
        return [
            e for e in self.entries
            if e.pattern not in self.matched and any(fnmatch.fnmatchcase(v, e.pattern.split("/")[0]) for v in vocabs)
        ]  # fmt: skip


def _is_glob(pattern: str) -> bool:
    return any(ch in pattern for ch in "*?[")
