"""`tokconf record` and `tokconf record-decoding`: llama.cpp's answers into recordings."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from ..core.facts import CorpusSample
from ..core.files import recordings_arg
from ..corpus.generator import DEFAULT_COUNT, DEFAULT_SEED
from .llama import add_build

# The synthetic vocabularies' case set: ~110 vocabularies in two builds must fit the repository
# (README "Recordings" states the sizes), so a fixed sample of the corpus and 500 fuzz strings.
SYNTH_SAMPLE: CorpusSample = {"every": 2, "max_bytes": 512}
SYNTH_FUZZ_COUNT = 500


def add_parser(commands: Any) -> None:
    rec = commands.add_parser("record", help="record llama.cpp's ids for the corpus, tests, specials and fuzz")
    rec.set_defaults(run=run)
    add_build(rec)
    rec.add_argument(
        "--llama",
        type=Path,
        metavar="PATH",
        help="record with a llama.cpp of your own: a built libllama.so, or a source tree (built in the cache); "
        "the recordings say exactly which library answered, filed under --build (docs/llama-local.md)",
    )
    rec.add_argument("--vocab", action="append", default=[], help="a vocab name (qwen2) or GGUF path; repeatable")
    rec.add_argument(
        "--corpus",
        action="append",
        type=Path,
        default=[],
        help="corpus file or folder; repeatable (default: the bundled)",
    )
    rec.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"fuzz seed (default {DEFAULT_SEED})")
    rec.add_argument("--fuzz-count", type=int, help=f"fuzz strings (default {DEFAULT_COUNT})")
    rec.add_argument(
        "--out",
        type=Path,
        help="output folder (default: recordings/bN in the current folder; with --llama, "
        "recordings/local-<the first 12 digits of its libllama's sha256>)",
    )
    rec.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="vocabs recorded in parallel")
    rec.add_argument("--backend", choices=("libllama", "cli"), default="libllama", help="cli: cross-check only")
    rec.add_argument("--sample", type=int, default=50, help="with --backend cli: cases per vocab to compare")
    rec.add_argument(
        "--save",
        type=Path,
        metavar="FILE",
        help="with --backend cli: also write llama-tokenize's answers there (JSON; the bundled recordings "
        "keep theirs in llama-tokenize.crosscheck.json)",
    )
    rec.add_argument("--no-decoding", action="store_true", help="record ids only (no *.decoding.yaml)")
    rec.add_argument(
        "--synthetic",
        action="store_true",
        help=f"record the synthetic vocabularies (tokconf vocab synth; --vocab picks recipes) into "
        f"<out>/synthetic, with every {SYNTH_SAMPLE['every']}nd corpus case up to {SYNTH_SAMPLE['max_bytes']} "
        f"bytes and {SYNTH_FUZZ_COUNT} fuzz strings",
    )

    rdec = commands.add_parser(
        "record-decoding", help="record llama.cpp's pieces and detokenizations beside existing recordings"
    )
    rdec.set_defaults(run=run_decoding)
    rdec.add_argument(
        "recordings", nargs="*", type=recordings_arg, help="recording files or folders (default: the bundled)"
    )
    rdec.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="vocabs recorded in parallel")
    rdec.add_argument("--vocab-dir", type=Path, help="folder with the GGUF files (default: the build's models/)")


def run(args: argparse.Namespace) -> int:
    from ..builds.build import require_build
    from ..builds.local import local_build
    from ..builds.vocabs import resolve_vocabs, vocab_name
    from ..core.errors import TokconfError
    from ..core.files import CORPUS
    from ..corpus.files import load_corpus
    from ..oracles.probe import probe_library
    from ..recording.crosscheck import crosscheck_vocab, save
    from ..recording.recorder import Plan, record
    from ..synth.files import synthetic_vocabs

    if args.save and args.backend != "cli":
        raise TokconfError("--save keeps llama-tokenize's answers: it needs --backend cli", "add --backend cli")
    if args.llama:  # probed before any vocabulary: a library that cannot load is an error, not a refusal
        made = local_build(args.llama, args.build, tokenize=args.backend == "cli")
        library = probe_library(made)
        assert made.source.sha256 is not None  # local_build hashes the library it returns
        default_out = f"local-{made.source.sha256[:12]}"
    else:
        made, library, default_out = require_build(args.build), None, f"b{args.build}"
    corpus = load_corpus(args.corpus or [CORPUS])
    if not any(corpus_file.cases for corpus_file in corpus):
        raise TokconfError(
            f"no corpus cases under {' '.join(map(str, args.corpus or [CORPUS]))}",
            "give --corpus the corpus folder (a recording without it would silently record far fewer cases)",
        )
    out = args.out or Path("recordings") / default_out
    if args.synthetic:
        vocabs = synthetic_vocabs(args.vocab)
        fuzz_count = SYNTH_FUZZ_COUNT if args.fuzz_count is None else args.fuzz_count
        plan = Plan(made, tuple(corpus), args.seed, fuzz_count, out / "synthetic", not args.no_decoding,
                    SYNTH_SAMPLE, library)  # fmt: skip
    else:
        vocabs = resolve_vocabs(args.vocab, made)
        fuzz_count = DEFAULT_COUNT if args.fuzz_count is None else args.fuzz_count
        plan = Plan(made, tuple(corpus), args.seed, fuzz_count, out, not args.no_decoding, library=library)
    if not vocabs:
        raise TokconfError(f"no vocabulary to record: {made.models_dir} has no ggml-vocab-*.gguf", "pass --vocab")
    if args.backend == "libllama":
        record(plan, vocabs, args.jobs)
        return 0
    checks = []
    for vocab in vocabs:
        check = crosscheck_vocab(plan, made, vocab, args.sample)
        compared, found = len(check.answers), check.disagreements
        print(
            f"{vocab_name(vocab)}: {compared - len(found)}/{compared} answers agree (libllama worker vs llama-tokenize)"
        )
        for d in found:
            print(f"  {d.case} [{d.mode}]: libllama {d.libllama} != llama-tokenize {d.cli}")
        checks.append(check)
    if args.save:
        save(args.save, made, args.sample, args.seed, checks)
        print(f"llama-tokenize's answers: {args.save}")
    return 1 if any(check.disagreements for check in checks) else 0


def run_decoding(args: argparse.Namespace) -> int:
    from functools import partial

    from ..core.files import BUNDLED_RECORDINGS
    from ..recording.decoding_recorder import record_decoding
    from ..recording.format import recording_files
    from ..recording.recorder import in_parallel

    work = partial(record_decoding, recording=None, vocab_dir=args.vocab_dir)
    in_parallel(work, recording_files(args.recordings or [BUNDLED_RECORDINGS]), args.jobs)
    return 0
