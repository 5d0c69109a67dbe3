"""`tokconf coverage`: which tokenizer models and pre-tokenizers the recordings gate, of all a
llama.cpp build knows (`tokconf.recording.coverage`)."""

from __future__ import annotations

import argparse
from typing import Any

from ..builds.pins import DEFAULT_BUILD
from . import add_recordings


def add_parser(commands: Any) -> None:
    cov = commands.add_parser(
        "coverage", help="which tokenizer models and pre-tokenizers the recordings gate, of all llama.cpp knows"
    )
    cov.set_defaults(run=run)
    add_recordings(cov, None)
    cov.add_argument("--build", type=int, default=DEFAULT_BUILD, help="the llama.cpp build whose list is used")


def run(args: argparse.Namespace) -> int:
    from ..core.files import BUNDLED_RECORDINGS
    from ..recording.coverage import coverage, describe, known_tokenizers
    from ..recording.format import recording_files

    files = recording_files(args.recordings or [BUNDLED_RECORDINGS])
    print("\n".join(describe(coverage(files, known_tokenizers(args.build)))))
    return 0
