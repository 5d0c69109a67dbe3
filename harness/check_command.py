"""`tokconf check`: run the check engine over recordings and print the table (rich).

Exit status 0 only when something passed and nothing failed, broke or unexpectedly passed; 1
otherwise. With --junit, --report (.md or .html) the same results are also written to files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from harness.checking import DECODE, CaseResult, ExpectedFailures, Selection, check_recording, vocab_file
from harness.decoding import load_for
from harness.errors import TokconfError
from harness.impls import resolve
from harness.recording import load, recording_files
from harness.report import Summary, describe, write_junit

BUNDLED = Path(__file__).resolve().parent.parent / "recordings" / "b11192"


def run_check(args: argparse.Namespace) -> int:
    """The `check` command; returns the exit status."""
    console = Console(highlight=False, width=max(120, Console().width))
    paths = args.recordings or [BUNDLED]
    recordings_arg = " ".join(str(p) for p in paths)
    selection = Selection(frozenset(args.vocab), frozenset(args.mode), frozenset(args.case))
    xfails = ExpectedFailures.load(args.xfail)
    files = [p for p in recording_files(paths) if not selection.vocabs or p.stem in selection.vocabs]
    if not files:
        raise TokconfError(f"no recording matches --vocab {' '.join(args.vocab)}", "check the vocab names")
    impl = resolve(args.impl, args.timeout)
    summary = Summary()
    results: list[CaseResult] = []
    vocabs: dict[str, Path] = {}
    try:
        for path in files:
            recording = load(path)
            vocab = vocab_file(recording, args.vocab_dir)
            vocabs[recording.vocab_name] = vocab
            decoding = load_for(path) if not selection.modes or DECODE in selection.modes else None
            found = list(check_recording(recording, impl, vocab, selection, xfails, decoding))
            summary.add(found)
            results.extend(found)
            print(f"{recording.vocab_name}: {len(found)} checked", file=sys.stderr, flush=True)
    finally:
        impl.close()
    shown = summary.problems[: args.details]
    details = [describe(r, vocabs.get(r.vocab), args.impl, recordings_arg) for r in shown]
    for text in details:
        console.print(text, markup=False, soft_wrap=True)  # a repro command must stay one line
        console.print()
    if len(summary.problems) > len(shown):
        console.print(f"... and {len(summary.problems) - len(shown)} more problems (--details N shows more)")
    title = f"tokconf check: {impl.name} against {recordings_arg}"
    summary.print_table(console, title)
    if args.junit:
        index = {id(r): i for i, r in enumerate(results)}
        write_junit(args.junit, results, {index[id(r)]: d for r, d in zip(shown, details, strict=True)})
    if args.report:
        text = summary.html(title, details) if args.report.suffix == ".html" else summary.markdown(title, details)
        args.report.write_text(text, encoding="utf-8")
    totals = summary.totals()
    return 0 if summary.ok and totals["passed"] else 1
