"""One check run over recording files: what `tokconf check` prints and writes, as data."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import TokconfError
from ..implementations.resolve import resolve
from ..recordings.format import recording_files
from .contract import Decision, Gate
from .engine import CaseResult, Selection, Stop, check_file
from .explain import Cause, explain_file
from .report import Summary
from .xfail import ExpectedFailures


@dataclass
class CheckRun:
    """Every result of a run, its summary, and the GGUF file of each vocab (for pieces in reports)."""

    impl_name: str
    stopped: bool = False  # --maxfail was reached: part of the recordings was not checked
    summary: Summary = field(default_factory=Summary)
    results: list[CaseResult] = field(default_factory=list)
    vocabs: dict[str, Path] = field(default_factory=dict)
    causes: list[Cause] = field(default_factory=list)  # with explain: each vocab's, most cases first
    unexplained: list[CaseResult] = field(default_factory=list)  # with explain: failures no cause reproduces
    explain_errors: list[str] = field(default_factory=list)  # with explain: vocabularies it could not explain

    def decide(self, gate: Gate, selection: Selection, xfails: ExpectedFailures) -> Decision:
        """The run's verdict under the contract, with what only the whole run knows: expected-failure
        entries that matched nothing, and `--case` ids that matched no case (unless `--maxfail`
        stopped the run before it got there)."""
        stale = [entry.pattern for entry in xfails.unmatched(set(self.vocabs))]
        unmatched = [] if self.stopped else sorted(selection.cases - {r.case for r in self.results})
        return self.summary.decide(gate, stale, unmatched)


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def check_paths(
    paths: list[Path],
    impl_spec: str,
    selection: Selection,
    xfails: ExpectedFailures,
    vocab_dir: Path | None,
    timeout: float | None,
    progress: Callable[[str], None] = _progress,
    maxfail: int | None = None,
    explain: bool = False,
) -> CheckRun:
    """Check an implementation against every selected recording under `paths`; with `maxfail`, stop
    asking once that many problems were found; with `explain`, group each vocab's failures into
    causes (`tokconf.check.explain`)."""
    files = [p for p in recording_files(paths) if selection.wants_vocab(p.stem)]
    if not files:
        asked = [f"--vocab {v}" for v in sorted(selection.vocabs)] + [f"--claim {p}" for p in selection.claim.patterns]
        raise TokconfError(f"no recording matches {' '.join(asked)}", "check the names")
    impl = resolve(impl_spec, timeout)
    run = CheckRun(impl.name)
    stop = Stop(maxfail)
    try:
        for path in files:
            if stop.reached:
                run.stopped = True
                break
            checked = check_file(path, impl, selection, xfails, vocab_dir, stop)
            run.stopped |= stop.reached
            run.vocabs[checked.recording.vocab_name] = checked.vocab
            run.summary.add(checked.results, checked.recording.group)
            run.results.extend(checked.results)
            if explain:
                explanation = explain_file(checked, impl)
                run.causes += explanation.causes
                run.unexplained += explanation.unexplained
                if explanation.error:
                    run.explain_errors.append(explanation.error)
            progress(f"{checked.recording.vocab_name}: {len(checked.results)} checked")
    finally:
        impl.close()
    return run
