"""`tokconf upgrade --to N`: from "build N is out" to "what changed, where, since which build" in one
command: build N asked every recorded case, every change between the recordings' build and N found
in its published build (and commit, with `--source`), written as a report. The work is
`tokconf.history.upgrade`'s; this module is its options and the files it writes."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from ..core.files import recordings_shown
from . import add_recordings
from .llama import add_lock, lock_of


def add_parser(commands: Any) -> None:
    up = commands.add_parser(
        "upgrade",
        help="what changed between the recordings' llama.cpp build and build N, and in which build",
        description="Asks build N every case of the recordings (default: the bundled b11192 ones), then finds every "
        "published build between --from and --to where some answer changed: ids, facts, pieces or detokenized text "
        "(each build fetched and built on first use, under the lock's trust policy), and writes the report.",
    )
    up.set_defaults(run=run)
    up.add_argument("--to", type=int, required=True, metavar="N", help="the new build")
    up.add_argument("--from", dest="start", type=int, metavar="M", help="the old build (default: the recordings')")
    add_recordings(up)
    up.add_argument("-o", "--output", type=Path, help="write the Markdown report here (default: stdout)")
    up.add_argument("--html", type=Path, help="also write the report as an HTML page")
    up.add_argument("--data", type=Path, help="also write what every stretch of builds answers (identify --data)")
    up.add_argument("--source", type=Path, metavar="GIT_CHECKOUT", help="bisect each change to its commit too")
    up.add_argument("--jobs", type=int, help="parallel compile jobs (default: all cores)")
    add_lock(up)


def _command(args: argparse.Namespace) -> str:
    """The command line that makes this report again (what the report and the data say they came from)."""
    start = ["--from", str(args.start)] if args.start is not None else []
    words = ["tokconf", "upgrade", *start, "--to", str(args.to)]
    for path in args.recordings:
        words += ["--recordings", recordings_shown(path)]
    for vocab in args.vocab:
        words += ["--vocab", vocab]
    return shlex.join(words)


def run(args: argparse.Namespace) -> int:
    """The upgrade (`tokconf.history.upgrade`), its report written where asked (stdout by default)."""
    from ..core.files import BUNDLED_RECORDINGS, atomic_write, require_folders
    from ..history import data, report
    from ..history.upgrade import upgrade
    from ..recording.format import named_recordings

    require_folders((args.output, args.html, args.data))  # before the walk, not after its hour of probing
    files = named_recordings(args.recordings or [BUNDLED_RECORDINGS], args.vocab)

    def progress(line: str) -> None:
        print(f"tokconf upgrade: {line}", file=sys.stderr, flush=True)

    found = upgrade(files, args.to, args.start, args.vocab_dir, lock_of(args), args.jobs, args.source, _command(args),
                    progress)  # fmt: skip
    parts = report.blocks(found.report)
    if args.output is not None:
        atomic_write(args.output, report.markdown(parts), "report")
        progress(f"report written to {args.output}")
    else:
        print(report.markdown(parts), end="")
    if args.html is not None:
        atomic_write(args.html, report.page(parts), "report")
        progress(f"HTML report written to {args.html}")
    if args.data is not None:
        data.write(args.data, found.history)
        progress(f"build history written to {args.data}")
    return 0
