"""`tokconf check`: run the check engine over recordings and print the table.

Exit status 0 only when the verdict contract (`tokconf.checking.contract`) says PASS: every claimed
vocab x mode judged and covered, nothing failed, broke or unexpectedly passed; 1 otherwise, with
every reason. With --junit, --report (.md or .html) the same results are also written to files, and
with --json the verdict (`tokconf.reporting.verdict_json`).

The verdict line is the last line printed. What a port wrote reaches the terminal only as
`core.printable` makes it, behind a prefix, and rich interprets none of it: no markup (`[bold]`,
`[link=…]`), no emoji codes (`:smile:`), no highlighting.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..core.printable import escape_unprintable
from ..options import CHECK, add_to_argparse, count, positive


def add_parser(commands: Any) -> None:
    chk = commands.add_parser("check", help="check an implementation against recordings; prints the table")
    chk.set_defaults(run=run)
    add_to_argparse(chk, CHECK)
    chk.add_argument("--junit", type=Path, help="write JUnit XML here")
    chk.add_argument("--report", type=Path, help="write a .md or .html report here")
    chk.add_argument("--maxfail", type=positive(int), metavar="N", help="stop after N failing cases (errors count)")
    chk.add_argument("-x", "--exitfirst", action="store_const", const=1, dest="maxfail", help="stop at the first")
    chk.add_argument(
        "--jobs", type=count, default=1, metavar="N",
        help="check N recordings at a time, each in its own process (0: one per core; default 1); "
        "one at a time with --maxfail",
    )  # fmt: skip
    chk.add_argument(
        "--details", type=count, default=20, help="failing cases shown in full on the terminal (default 20)"
    )


def run(args: argparse.Namespace) -> int:
    """The `check` command; returns the exit status. The implementation is made by the run, once every
    recording it judges has been hashed (`tokconf.checking.run.check_paths`)."""
    impl = args.impl or "reference"
    _outputs_ready(args, impl)  # before the implementation is made: making `llama.cpp@N` can fail or take minutes
    jobs = args.jobs if args.jobs > 0 else os.cpu_count() or 1
    return _checked(args, impl, jobs)


def _outputs_ready(args: argparse.Namespace, impl: str) -> None:
    """Every output file can be written, and the verdict files say "not finished" until the run ends:
    a run that stops early (its implementation cannot be made, a kill, a crash) never leaves an earlier
    run's passing verdict or JUnit file for a CI step to read."""
    from ..core.errors import TokconfError
    from ..core.files import require_folders
    from ..reporting.junit import write_unfinished_junit
    from ..reporting.report import REPORT_FORMATS
    from ..reporting.verdict_json import write_unfinished

    require_folders((args.junit, args.report, args.causes, args.json))
    if args.report is not None and args.report.suffix not in REPORT_FORMATS:
        raise TokconfError(f"--report {args.report}: the name must end in .md or .html", "e.g. --report report.html")
    if args.json:
        write_unfinished(args.json, impl)
    if args.junit:
        write_unfinished_junit(args.junit, impl)


class Progress:
    """What a run says while it checks: on a terminal one live line (rich's progress bar, gone when the
    run ends); elsewhere (a CI log) a line at most every `QUIET` seconds. It is given the run's progress
    lines (`check_paths`): each recording checked is a step."""

    QUIET = 30.0

    def __init__(self, recordings: int) -> None:
        self.recordings = recordings
        self.done = 0
        self.said = time.monotonic()
        self.bar: Any = None
        self.task: Any = None

    def __enter__(self) -> Progress:
        if sys.stderr.isatty():
            from rich.progress import Progress as Bar

            self.bar = Bar(transient=True, console=_stderr_console())
            self.bar.start()
            self.task = self.bar.add_task("checking", total=self.recordings)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def __call__(self, line: str) -> None:
        self.done += line.endswith(" checked") and not line.startswith("interleaved:")
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done, description=escape_unprintable(line)[:60])
        elif time.monotonic() - self.said >= self.QUIET:
            self.said = time.monotonic()
            print(f"checked {self.done} of {self.recordings} recordings", file=sys.stderr, flush=True)


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True, markup=False, emoji=False, highlight=False)


def _checked(args: argparse.Namespace, impl: str, jobs: int) -> int:
    """The rest of `run`."""
    from rich.console import Console

    from ..checking.contract import Claim, Gate, grants_of
    from ..checking.engine import Selection
    from ..checking.explain.causes import write_causes
    from ..checking.run import check_paths
    from ..checking.session import selected_recordings
    from ..checking.xfail import ExpectedFailures
    from ..core.errors import TokconfError
    from ..core.files import BUNDLED_RECORDINGS, atomic_write
    from ..core.keeper import adopting
    from ..core.printable import printable
    from ..core.sandbox import SandboxPolicy
    from ..reporting.junit import write_junit
    from ..reporting.report import Invocation, RunReport, terminal_table
    from ..reporting.verdict_json import write_verdict

    paths = args.recordings or [BUNDLED_RECORDINGS]
    how = Invocation.of(impl, args.recordings, args.timeout, args.xfail, args.vocab_dir, args.load_timeout)
    gate = Gate(Claim(tuple(args.claim), args.min_coverage), args.strict, args.strict_xfail, claimable=True,
                granted=grants_of(args.allow_decline))  # fmt: skip
    selection = Selection(frozenset(args.vocab), frozenset(args.mode), frozenset(args.case), claim=gate.claim)
    xfails = ExpectedFailures.load(args.xfail)
    explain = args.explain or args.causes is not None
    full = args.table == "full"
    sandbox = SandboxPolicy.of(args.sandbox, args.sandbox_write, args.sandbox_network)
    sandbox.keep_out_of([path for path in (args.json, args.junit, args.report, args.causes) if path is not None])
    try:
        with adopting(), Progress(len(selected_recordings(paths, selection))) as progress:
            run = check_paths(paths, impl, selection, xfails, args.vocab_dir, args.timeout, progress=progress,
                              maxfail=args.maxfail, explain=explain, gate=gate, jobs=jobs,
                              load_timeout=args.load_timeout, in_process=args.in_process, sandbox=sandbox)  # fmt: skip
    except SystemExit as exit:  # from port code no adapter call guards: the run has no verdict, never a green one
        raise TokconfError(
            f"the implementation ended the run (sys.exit({exit.code!r})): no verdict",
            "fix the implementation; run it without --in-process, in a worker process, to keep the run going",
        ) from None
    title = f"tokconf check: {printable(run.impl_name)} against {how.recordings_shown(paths)}"
    report = RunReport(run, how, title)
    # port text is shown as it is: no [markup], no :emoji: codes, no highlighting; the table's cells too
    console = Console(markup=False, emoji=False, highlight=False, width=max(120, Console().width))

    def say(text: str) -> None:
        console.print(text, soft_wrap=True)  # a repro command must stay one line

    shown = report.shown(args.details)  # on the terminal, with every failed fact; the report files hold every one
    for text in shown:
        say(text + "\n")
    if len(report.details) > len(shown):
        say(f"... and {len(report.details) - len(shown)} more failing cases (--details N shows more)")
    for text in report.causes:
        say(text + "\n")
    for line in report.fault_lines():
        say(line)
    for line in report.notes(each=full):
        say(line)
    console.print(terminal_table(run.summary, report.title, full))
    if not full:
        where = f"every case: {args.report}" if args.report else "every case: --report FILE (.html or .md)"
        say(f"a row per vocabulary and mode: --table full; {where}")
    if args.causes:
        write_causes(args.causes, report.causes_document())
    if args.junit:  # every problem's story, not only the ones shown
        write_junit(args.junit, run.results, report.stories())
    if args.report and args.report.suffix == ".html":
        from ..reporting.html_report import render_html

        atomic_write(args.report, render_html(report), "report")
    elif args.report:
        atomic_write(args.report, report.markdown(), "report")
    if args.json:
        write_verdict(args.json, report.decision, run.summary, run.impl_name)
    for line in report.ending():  # the verdict line last: nothing follows it
        say(line)
    return report.decision.exit_status
