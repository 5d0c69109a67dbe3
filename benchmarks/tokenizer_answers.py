"""A llama.cpp build's answers on every bundled recording, as digests: what tests/test_tokenizer_build.py
holds the tokenizer-only libllama to.

    python benchmarks/tokenizer_answers.py --build 9093 --build 11434 --sha256 9093=<sdist sha256> \
        --out tests/support/full_build_answers.json

For each build it asks llama.cpp's **full** libllama (its own CMake build, `build/bin/libllama.so` in
the build's cache folder, compiled here first if it is not there; never the tokenizer-only one)
every bundled recording's inputs (recordings/b11192, shipped and synthetic), with the recordings' own
vocab files (found as a bisect finds them: an sdist such as b9093's ships no `models/`), and keeps per
vocabulary a sha256 of (`answer_digests`):

- each mode's outcomes (`plain`, `special`, `bos`), case by case in the recording's order: the ids,
  or the refusal's reason where llama.cpp aborted;
- the facts (`facts`: special ids, add flags, EOG set, attributes, special texts, as the worker says);
- the decoding (`pieces-special`, `pieces-plain`: llama_token_to_piece of every id; `remove-special`,
  `unparse-special`: llama_detokenize of each case's own `bos` ids);

or, where the build refuses the vocabulary, its reason (`load`). Digests, not answers: the file stays
small, and an expected value in it can only have come from a llama.cpp run. The file also says which
library answered (its sha256), from which sdist, and when.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import platform
import sys
import time
from pathlib import Path

from tokconf.builds.build import Build, LibraryKind, build_dir, compile_tree, is_complete, tree_build
from tokconf.builds.fetch import fetch, source_dir
from tokconf.core.facts import facts_to_json
from tokconf.core.files import sha256_file
from tokconf.core.outcome import MODES, Outcome, Refusal
from tokconf.oracles.libllama_client import LibllamaOracle, VocabRefused
from tokconf.recording.decoding import DETOKENIZE, PIECE_KINDS
from tokconf.recording.format import load, recording_files
from tokconf.synth.files import recorded_vocab

ROOT = Path(__file__).resolve().parent.parent
RECORDINGS = ROOT / "recordings" / "b11192"


def _sha(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def _node(outcome: Outcome) -> object:
    return {"refused": outcome.reason} if isinstance(outcome, Refusal) else outcome


def answer_digests(made: Build) -> dict[str, dict[str, str]]:
    """{vocab: {item: sha256}} of `made`'s answers on every bundled recording (the module's docstring
    says which items), a recording per core at a time (each in its own worker process)."""
    paths = recording_files([RECORDINGS])
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return dict(pool.map(lambda path: _vocab_digests(made, path), paths))


def _vocab_digests(made: Build, path: Path) -> tuple[str, dict[str, str]]:
    recording = load(path)
    vocab = recorded_vocab(recording.provenance["vocab"], recording.build, None)
    started = time.monotonic()
    try:
        oracle = LibllamaOracle(made, vocab, timeout=600)  # a 262k vocabulary's pieces on a loaded machine
    except VocabRefused as refused:
        return recording.vocab_name, {"load": _sha(refused.reason)}
    with oracle:
        digests: dict[str, str] = {}
        bos: list[Outcome] = []
        for mode, (add_special, parse_special) in MODES.items():
            outcomes = oracle.tokenize_many([(case.data, add_special, parse_special) for case in recording.cases])
            digests[mode] = _sha([_node(o) for o in outcomes])
            bos = outcomes if mode == "bos" else bos
        digests["facts"] = hashlib.sha256(facts_to_json(oracle.facts())).hexdigest()
        for kind, special in PIECE_KINDS.items():
            digests[kind] = _sha([piece.hex() for piece in oracle.pieces(special)])
        for setting, (remove, unparse) in DETOKENIZE.items():
            asked = [(ids, remove, unparse) for ids in bos if isinstance(ids, list)]
            digests[setting] = _sha([text.hex() for text in oracle.detokenize_many(asked)])
    print(f"b{made.build} {recording.vocab_name}: {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
    return recording.vocab_name, digests


def _command(argv: list[str]) -> str:
    """How this file was made, its output folder left out (where it was written is no part of it)."""
    shown = ["..." if before == "--out" else arg for before, arg in zip(["", *argv], argv, strict=False)]
    return " ".join(["python -P benchmarks/tokenizer_answers.py", *shown])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", type=int, action="append", required=True)
    parser.add_argument("--sha256", action="append", default=[], help="N=HASH: the sdist of a build not pinned")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    vouched = {int(n): h for n, h in (item.split("=", 1) for item in args.sha256)}
    builds = {}
    for number in args.build:
        source = fetch(number, sha256=vouched.get(number))
        made = tree_build(number, source, source_dir(number), build_dir(number))  # llama.cpp's own CMake build
        if not is_complete(made, build_dir(number), tokenize=False):
            compile_tree(made, source_dir(number), build_dir(number), None, False, False, "run this script again")
        assert made.kind is LibraryKind.FULL
        builds[f"b{number}"] = {
            "source": source.describe(),
            "libllama": f"full (llama.cpp's CMake), sha256 {sha256_file(made.libllama)}",
            "made": f"{time.strftime('%Y-%m-%d', time.gmtime())} on {platform.machine()} {platform.system()}",
            "vocabs": answer_digests(made),
        }
    document = {
        "about": "digests of llama.cpp full builds' answers on every bundled recording "
        "(benchmarks/tokenizer_answers.py says what each is)",
        "recordings": "recordings/b11192",
        "builds": builds,
        "made_by": [_command(sys.argv[1:])],
    }
    args.out.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
