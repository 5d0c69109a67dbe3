"""`tokconf coverage`: which tokenizer models and pre-tokenizers the recordings gate, of all a
llama.cpp build knows (`tokconf.recordings.coverage`)."""

from __future__ import annotations

import argparse
from typing import Any

from ..core.files import recordings_arg
from ..llama.pins import DEFAULT_BUILD


def add_parser(commands: Any) -> None:
    cov = commands.add_parser(
        "coverage", help="which tokenizer models and pre-tokenizers the recordings gate, of all llama.cpp knows"
    )
    cov.set_defaults(run=run)
    cov.add_argument("--recordings", type=recordings_arg, action="append", default=[], help="recording file or folder")
    cov.add_argument("--build", type=int, default=DEFAULT_BUILD, help="the llama.cpp build whose list is used")


def run(args: argparse.Namespace) -> int:
    from ..core.files import BUNDLED_RECORDINGS
    from ..recordings.coverage import coverage, describe, known_tokenizers
    from ..recordings.format import recording_files

    files = recording_files(args.recordings or [BUNDLED_RECORDINGS])
    print("\n".join(describe(coverage(files, known_tokenizers(args.build)))))
    return 0
