"""`tokconf vocab synth`: the synthetic vocabularies (`tokconf.synth`), listed or written out."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_parser(commands: Any) -> None:
    vocab = commands.add_parser("vocab", help="the synthetic vocabularies recorded beside the shipped ones")
    sub = vocab.add_subparsers(dest="vocab_command", metavar="COMMAND", required=True)
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
