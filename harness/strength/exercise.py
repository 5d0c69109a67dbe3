"""`python -m tokconf.strength.exercise`: one recording's inputs through a coverage-instrumented libllama.

What a check asks of llama.cpp for one vocabulary, and nothing else: every case in every recorded
mode, the facts, every token's piece both ways, and each case's recorded `bos` ids detokenized in each
decoding setting (tokconf.checking.engine). It runs in a process of its own so that the gcov counters
are written when it exits (a live worker's fork server ends its children with `os._exit`, which
writes none). An input on which llama.cpp aborts (its recorded outcome) is asked in a forked child,
whose abort the coverage library's hook (coverage_hook.c) answers by writing its counters first.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..core.outcome import MODES, Refusal
from ..oracles.libllama import Vocab
from ..recording.decoding import DETOKENIZE
from ..recording.format import load


def exercise(vocab: Vocab, recording: Path) -> None:
    loaded = load(recording)
    for case in loaded.cases:
        for mode, outcome in case.outcomes.items():
            if isinstance(outcome, Refusal):  # llama.cpp aborts here: in a child, so this process lives on
                child = os.fork()
                if child == 0:
                    vocab.tokenize(case.data, *MODES[mode])
                    os._exit(0)
                os.waitpid(child, 0)
            else:
                vocab.tokenize(case.data, *MODES[mode])
    vocab.facts()
    vocab.pieces(True)
    vocab.pieces(False)
    for case in loaded.cases:
        ids = case.outcomes.get("bos")
        if isinstance(ids, list):
            for remove, unparse in DETOKENIZE.values():
                vocab.detokenize(ids, remove, unparse)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lib", type=Path, required=True)
    parser.add_argument("--header", type=Path, required=True)
    parser.add_argument("--include", type=Path, action="append", default=[])
    parser.add_argument("--vocab", type=Path, required=True)
    parser.add_argument("--recording", type=Path, required=True)
    args = parser.parse_args()
    try:
        vocab = Vocab(args.lib, args.header, tuple(args.include), args.vocab)
    except RuntimeError:  # llama.cpp refuses this vocabulary, as recorded: its loading is what ran
        return 0
    exercise(vocab, args.recording)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
