"""The ecosystem's conformance matrix: peers × bundled vocabularies × modes, as data.

People count tokens, build prompts and port tokenizers with the libraries they know (tiktoken,
sentencepiece, Hugging Face `tokenizers`, transformers) and assume the ids are llama.cpp's. This
runs each peer through the same check and `--explain` any port gets, against every bundled
recording, and keeps per cell (peer × vocab × mode) the counts, and per peer × vocab the named
causes with one confirmed example each; `speed` adds encode throughput beside llama.cpp's.
`render` makes docs/reports/ecosystem.md and the HTML page of it; the JSON form (`to_json`/`from_json`)
is what the tests re-run causes and counts from, so the published matrix cannot drift from the
libraries it describes.
"""

from __future__ import annotations

import base64
import datetime
import importlib.metadata
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..checking.contract import Standing, Verdict
from ..checking.engine import Selection
from ..checking.run import check_paths
from ..checking.xfail import ExpectedFailures
from ..core.outcome import MODES, Outcome, outcome_fields, outcome_from_fields
from ..core.render import code_point_list
from ..recording.format import recording_files

FORMAT = 1
LIBRARIES = ("tiktoken", "sentencepiece", "tokenizers", "transformers")  # whose versions the matrix states


@dataclass(frozen=True)
class Peer:
    """A peer as the matrix names it, and the `--impl` spec that runs it."""

    name: str  # e.g. "tiktoken-gguf", "hf-tokenizers (Llama 3 tokenizer.json)"
    spec: str


@dataclass
class Cell:
    """One peer on one vocab in one mode: the verdict counts, or why the peer does not serve it."""

    peer: str
    vocab: str
    mode: str
    counts: dict[str, int] = field(default_factory=dict)  # verdict value -> cases
    declined: str = ""  # when the peer does not load the vocab: `declined: reason` or `broken: reason`

    @property
    def judged(self) -> int:
        return sum(n for v, n in self.counts.items() if Verdict(v).is_judged)

    @property
    def conformance(self) -> float | None:
        """Passed of judged cases, or None where nothing was judged."""
        return self.counts.get(Verdict.PASSED.value, 0) / self.judged if self.judged else None

    @property
    def coverage(self) -> float | None:
        """Judged of all cases: what the peer could be given at all."""
        total = sum(self.counts.values())
        return self.judged / total if total else None


@dataclass
class CauseRow:
    """A named cause of one peer's failures on one vocab, with its example on the minimal input."""

    peer: str
    vocab: str
    kind: str
    label: str
    cases_per_mode: dict[str, int]
    minimal: bytes
    mode: str
    expected: Outcome
    actual: Outcome

    @property
    def codepoints(self) -> list[str]:
        return code_point_list(self.minimal)


@dataclass
class Speed:
    """Encode throughput of one implementation on one vocab's fixed text, in one run."""

    impl: str
    vocab: str
    size: int  # bytes of text
    load_s: float
    cold_s: float  # the first pass after loading
    warm_s: float  # the best of the next passes

    @property
    def cold_mbps(self) -> float:
        return self.size / self.cold_s / 1e6

    @property
    def warm_mbps(self) -> float:
        return self.size / self.warm_s / 1e6


@dataclass
class Matrix:
    """Everything docs/reports/ecosystem.md shows, and how it was made."""

    build: int
    command: str
    date: str
    versions: dict[str, str]
    peers: list[Peer]
    vocabs: list[str]
    cells: list[Cell] = field(default_factory=list)
    causes: list[CauseRow] = field(default_factory=list)
    speeds: list[Speed] = field(default_factory=list)
    unexplained: dict[str, int] = field(default_factory=dict)  # `peer/vocab`: failed cases no cause reproduces
    errors: list[str] = field(default_factory=list)  # what went wrong running a peer (never silent)

    def cell(self, peer: str, vocab: str, mode: str) -> Cell:
        return next(c for c in self.cells if (c.peer, c.vocab, c.mode) == (peer, vocab, mode))


def library_versions() -> dict[str, str]:
    """The installed versions of the peers' libraries (the `[peers]` extra pins them)."""
    found = {}
    for name in LIBRARIES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def shipped_recordings(folder: Path) -> list[Path]:
    """The recordings of real vocabularies in a folder (not its `synthetic/` ones: tokconf's own
    constructions, which no library is written for)."""
    return [p for p in recording_files([folder]) if p.parent == folder]


def check_peers(
    peers: list[Peer], files: list[Path], build: int, command: str, progress: Callable[[str], None]
) -> Matrix:
    """Every peer against every recording file, with `--explain`."""
    vocabs = [p.stem for p in files]
    matrix = Matrix(build, command, datetime.date.today().isoformat(), library_versions(), peers, vocabs)
    for peer in peers:
        progress(f"{peer.name}: checking {len(vocabs)} vocabs")
        run = check_paths(files, peer.spec, Selection(), ExpectedFailures(), None, None, progress, explain=True)
        for vocab in vocabs:
            standing = run.summary.standing.get(vocab, Standing.DECLINED)
            why = next((r.reason for r in run.results if r.vocab == vocab and r.verdict is not Verdict.PASSED), "")
            declined = "" if standing is Standing.LOADED else f"{standing.value}: {why}"
            for mode in MODES:
                counts = run.summary.counts.get((vocab, mode))
                shown = {v.value: n for v, n in counts.items() if n} if counts else {}
                matrix.cells.append(Cell(peer.name, vocab, mode, shown, declined))
        matrix.errors += [f"{peer.name}: {error}" for error in run.explain_errors]
        for result in run.unexplained:
            key = f"{peer.name}/{result.vocab}"
            matrix.unexplained[key] = matrix.unexplained.get(key, 0) + 1
        for cause in run.causes:
            modes: dict[str, int] = {}
            for result in cause.cases:
                modes[result.section] = modes.get(result.section, 0) + 1
            matrix.causes.append(
                CauseRow(peer.name, cause.vocab, cause.kind.value, cause.label, dict(sorted(modes.items())),
                         cause.minimal, cause.mode, cause.expected, cause.actual)
            )  # fmt: skip
    return matrix


def to_json(matrix: Matrix) -> dict[str, Any]:
    def cause(row: CauseRow) -> dict[str, Any]:
        fields = asdict(row)
        fields["minimal"] = base64.b64encode(row.minimal).decode()
        fields["expected"], fields["actual"] = outcome_fields(row.expected), outcome_fields(row.actual)
        return fields

    return {
        "format": FORMAT,
        "build": matrix.build,
        "command": matrix.command,
        "date": matrix.date,
        "versions": matrix.versions,
        "peers": [asdict(p) for p in matrix.peers],
        "vocabs": matrix.vocabs,
        "cells": [asdict(c) for c in matrix.cells],
        "causes": [cause(row) for row in matrix.causes],
        "speeds": [asdict(s) for s in matrix.speeds],
        "unexplained": matrix.unexplained,
        "errors": matrix.errors,
    }


def from_json(doc: dict[str, Any]) -> Matrix:
    """The matrix a previous run wrote (docs/reports/ecosystem.json)."""
    if doc.get("format") != FORMAT:
        raise ValueError(f"ecosystem matrix format {doc.get('format')!r}, expected {FORMAT}")
    causes = []
    for row in doc["causes"]:
        fields = dict(row)
        fields["minimal"] = base64.b64decode(row["minimal"])
        fields["expected"], fields["actual"] = outcome_from_fields(row["expected"]), outcome_from_fields(row["actual"])
        causes.append(CauseRow(**fields))
    return Matrix(
        doc["build"], doc["command"], doc["date"], doc["versions"], [Peer(**p) for p in doc["peers"]], doc["vocabs"],
        [Cell(**c) for c in doc["cells"]], causes, [Speed(**s) for s in doc["speeds"]], doc["unexplained"],
        doc["errors"],
    )  # fmt: skip
