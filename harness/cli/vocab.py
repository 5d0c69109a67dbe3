"""`tokconf vocab list`: every vocabulary the recordings hold, with its tokenizer model and pre name;
`tokconf vocab synth`: the synthetic vocabularies (`tokconf.synth`), listed or written out."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from . import add_recordings


def add_parser(commands: Any) -> None:
    vocab = commands.add_parser("vocab", help="the vocabularies recorded: listed, or the synthetic ones written out")
    sub = vocab.add_subparsers(dest="vocab_command", metavar="COMMAND", required=True)
    listing = sub.add_parser(
        "list",
        help="every vocabulary name the recordings hold (what --vocab takes), its tokenizer model and pre name",
    )
    listing.set_defaults(run=run_list)
    add_recordings(listing, None)
    synth = sub.add_parser(
        "synth",
        help="write the synthetic GGUF vocabularies (deterministic: the recordings pin their sha256)",
        description="Derive GGUF vocabularies from the shipped files of the pinned build: one per "
        "tokenizer.ggml.pre name, one per tokenizer model no shipped file uses, and variants of the vocab "
        "rules ports get wrong. tokconf check and record make them in the cache by themselves.",
    )
    synth.set_defaults(run=run_synth)
    synth.add_argument("--out", type=Path, help="folder to write them to (default: the cache)")
    synth.add_argument("--name", action="append", default=[], help="only this recipe; repeatable")
    synth.add_argument("--list", action="store_true", help="list the recipes and write nothing")


def run_synth(args: argparse.Namespace) -> int:
    from ..core.files import sha256_file
    from ..synth.files import recipes_named, synthesize

    for recipe in recipes_named(args.name):
        if args.list:
            print(f"{recipe.name:36} {recipe.family.value:8} from {recipe.base:10} {recipe.why}")
        else:
            path = synthesize(recipe, args.out)
            print(f"{path}  {sha256_file(path)}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    """One line per recording: its vocabulary name, `tokenizer.ggml.model` and `tokenizer.ggml.pre`
    (`-` where the file has none), from the heads of the files alone (the cases are megabytes)."""
    from ..core.files import BUNDLED_RECORDINGS
    from ..core.printable import printable
    from ..recording.coverage import vocab_heads
    from ..recording.format import recording_files

    for name, model, pre in vocab_heads(recording_files(args.recordings or [BUNDLED_RECORDINGS])):
        print(f"{printable(name):40} {printable(model or '-'):10} {printable(pre or '-')}")
    return 0
