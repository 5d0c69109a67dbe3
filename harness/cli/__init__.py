"""The `tokconf` command line (also `python -m tokconf`): one module per command, each with
`add_parser` and `run`, and here the arguments several commands take alike. A command imports what
it needs only when it runs, so `tokconf --help` and every other command work without the optional
packages one command needs (hypothesis for `fuzz`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..core.files import recordings_arg


def add_recordings(parser: argparse.ArgumentParser, vocabs: str | None = "only these vocabs (repeatable)") -> None:
    """`--recordings` (repeatable), and unless `vocabs` is None `--vocab` (its help) and `--vocab-dir`: the
    arguments every command that reads recordings takes alike."""
    parser.add_argument(
        "--recordings", type=recordings_arg, action="append", default=[], help="recording file or folder"
    )
    if vocabs is not None:
        parser.add_argument("--vocab", action="append", default=[], help=vocabs)
        parser.add_argument(
            "--vocab-dir", type=Path, help="folder with the GGUF files (default: the recording's build)"
        )
