"""`tokconf diff A B`: what changed between two recordings, as Markdown."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..core.files import recordings_arg, recordings_shown


def add_parser(commands: Any) -> None:
    dif = commands.add_parser("diff", help="what changed between two recordings (e.g. two llama.cpp builds)")
    dif.set_defaults(run=run)
    dif.add_argument("before", type=recordings_arg, help="recording file or folder (e.g. recordings/b11192)")
    dif.add_argument("after", type=recordings_arg, help="recording file or folder (e.g. recordings/b11434)")
    dif.add_argument("-o", "--output", type=Path, help="write the Markdown report here (default: stdout)")
    dif.add_argument("--limit", type=int, default=10, help="changed cases shown per vocab (default 10)")
    dif.add_argument(
        "--exit-code", action="store_true", help="exit 1 when any outcome, fact, vocab file or case set changed"
    )


def run(args: argparse.Namespace) -> int:
    from ..builds.fetch import source_dir
    from ..core.files import atomic_write
    from ..recording.diff import VocabDiff, diff, render

    diffs = list(diff([args.before], [args.after]))
    vocabs: dict[str, Path] = {}
    for item in diffs:
        if isinstance(item, VocabDiff):
            gguf = source_dir(item.build_after) / "models" / f"ggml-vocab-{item.name}.gguf"
            if gguf.is_file():
                vocabs[item.name] = gguf
    text = render(diffs, recordings_shown(args.before), recordings_shown(args.after), vocabs, args.limit)
    if args.output:
        atomic_write(args.output, text, "diff report")
    else:
        sys.stdout.write(text)
    changed = sum(len(d.changes) for d in diffs if isinstance(d, VocabDiff))
    print(f"{changed} changed outcomes in {len(diffs)} vocabs", file=sys.stderr)
    # A vocabulary recorded on one side only (a str) is a change too.
    return 1 if args.exit_code and any(isinstance(d, str) or d.changed for d in diffs) else 0
