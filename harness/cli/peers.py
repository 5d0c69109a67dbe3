"""`tokconf peers`: every peer against every bundled recording, explained, with encode speeds beside
llama.cpp's and the reference's, written as ecosystem.md, ecosystem.html and ecosystem.json
(docs/reports/ecosystem.md is this command's output)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from ..core.files import recordings_arg

DEFAULT_PEERS = ("transformers-gguf", "tiktoken-gguf", "sentencepiece-gguf")


def _peer(value: str) -> tuple[str, str]:
    """`NAME=SPEC`, or a bare SPEC named after itself."""
    name, _, spec = value.partition("=")
    return (name, spec) if spec else (value, value)


def add_parser(commands: Any) -> None:
    cmd = commands.add_parser("peers", help="the ecosystem matrix: peers x bundled vocabs x modes, causes, speeds")
    cmd.set_defaults(run=run)
    cmd.add_argument("--peer", type=_peer, action="append", default=[], metavar="[NAME=]SPEC",
                     help=f"a peer to check (repeatable; default: {', '.join(DEFAULT_PEERS)})")  # fmt: skip
    cmd.add_argument("--recordings", type=recordings_arg, help="recordings folder (default: the bundled b11192 set)")
    cmd.add_argument("--out", type=Path, default=Path("."), help="folder for ecosystem.md/.html/.json (default: .)")
    cmd.add_argument("--no-speed", action="store_true", help="skip the speed measurements")


def run(args: argparse.Namespace) -> int:
    from ..builds.pins import DEFAULT_BUILD
    from ..core.errors import TokconfError
    from ..core.files import BUNDLED_RECORDINGS
    from ..ecosystem.matrix import Peer, check_peers, shipped_recordings
    from ..ecosystem.render import write_all
    from ..ecosystem.speed import measure

    if not args.out.is_dir():
        raise TokconfError(f"--out {args.out}: not a folder", "create it, or write elsewhere")
    peers = [Peer(name, spec) for name, spec in (args.peer or [(p, p) for p in DEFAULT_PEERS])]
    files = shipped_recordings(args.recordings or BUNDLED_RECORDINGS)
    command = shlex.join(["tokconf", "peers", *sys.argv[2:]]) if sys.argv[1:2] == ["peers"] else "tokconf peers"
    matrix = check_peers(peers, files, DEFAULT_BUILD, command, lambda line: print(line, file=sys.stderr))
    if not args.no_speed:
        measure(matrix, files, lambda line: print(line, file=sys.stderr))
    write_all(matrix, args.out)
    print(
        f"wrote {args.out / 'ecosystem.md'}, .html and .json: {len(matrix.peers)} peers x {len(matrix.vocabs)} vocabs"
    )
    for error in matrix.errors:
        print(f"error: {error}", file=sys.stderr)
    return 1 if matrix.errors else 0
