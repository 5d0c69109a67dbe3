"""`tokconf export`: recordings as JSON lines, for ports in any language."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..core.files import recordings_arg


def add_parser(commands: Any) -> None:
    exp = commands.add_parser("export", help="write recordings as JSON lines (one per case and mode)")
    exp.set_defaults(run=run)
    exp.add_argument("recordings", nargs="+", type=recordings_arg, help="recording files or folders")
    exp.add_argument("-o", "--output", type=Path, help="output file (default: stdout)")


def run(args: argparse.Namespace) -> int:
    from ..core.files import atomic_output
    from ..recording.export import export

    if args.output is None:
        count = export(args.recordings, sys.stdout)
    else:
        with atomic_output(args.output, "export") as sink:
            count = export(args.recordings, sink)
    print(f"exported {count} lines", file=sys.stderr)
    return 0
