"""`tokconf strength`: how strong the recordings are, by mutation testing of llama.cpp's tokenizer
(tokconf.strength, docs/reports/strength.md)."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..builds.pins import DEFAULT_BUILD
from ..core.errors import TokconfError

DEFAULT_WORK = Path("strength-work")


def _shard(text: str) -> tuple[int, int]:
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r}: give i/n, e.g. 2/4")
    return int(index), int(count)


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("strength", help="mutation testing: how many wrong llama.cpps the recordings catch")
    steps = parser.add_subparsers(dest="step", required=True)
    build = steps.add_parser("build", help="make the mutants and build them into one schemata library")
    build.add_argument("--mutants", type=int, default=None, help="a sample of this many (default: every one)")
    build.add_argument("--tree", type=Path, default=None, help="a llama.cpp tree (default: the pinned build's)")
    build.set_defaults(run=run_build)
    cover = steps.add_parser("coverage", help="line and branch coverage of every bundled vocabulary")
    cover.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="vocabularies at once (default: cores)")
    cover.set_defaults(run=run_coverage)
    campaign = steps.add_parser("run", help="check each mutant against the bundled recordings (resumable)")
    campaign.add_argument("--shard", type=_shard, default=(1, 1), help="i/n: run shard i of n (journals merge)")
    campaign.set_defaults(run=run_campaign)
    report = steps.add_parser("report", help="scores, survivors, thin kills and coverage of the journals")
    report.add_argument("--markdown", type=Path, help="write the report as Markdown (docs/reports/strength.md)")
    report.add_argument("--json", type=Path, help="write the figures as JSON")
    report.set_defaults(run=run_report)
    show = steps.add_parser("show", help="a mutant's diff and the command that checks it alone")
    show.add_argument("key", help="the mutant's key, or its number")
    show.set_defaults(run=run_show)
    hunt = steps.add_parser("hunt", help="search an input that kills a surviving mutant (llama.cpp the oracle)")
    hunt.add_argument("key", help="the mutant's key, or its number")
    hunt.add_argument("--rounds", type=int, default=5, help="rounds of 2,000 fuzz inputs per vocabulary (default 5)")
    hunt.add_argument(
        "--vocab", action="append", default=[], help="only these vocabularies (default: those reaching it)"
    )
    hunt.add_argument(
        "--most", type=int, default=8, help="at most this many of the vocabularies reaching it (default 8)"
    )
    hunt.set_defaults(run=run_hunt)
    for step in (build, cover, campaign, report, show, hunt):
        step.add_argument(
            "--work", type=Path, default=DEFAULT_WORK, help=f"the campaign's folder (default {DEFAULT_WORK})"
        )
        step.add_argument("--tree-build", type=int, default=DEFAULT_BUILD, help=argparse.SUPPRESS)


def _pinned(args: argparse.Namespace) -> Path:
    tree = getattr(args, "tree", None)
    if tree is not None:
        return Path(tree).absolute()
    from ..builds.fetch import require_source, source_dir

    require_source(args.tree_build)
    return source_dir(args.tree_build)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_build(args: argparse.Namespace) -> int:
    from ..strength.campaign import sample
    from ..strength.mutants import all_mutants
    from ..strength.schemata import build_schemata

    pinned = _pinned(args)
    every = all_mutants(pinned)
    chosen = sample(dict(enumerate(every, 1)), args.mutants)
    _say(f"{len(every)} mutants made, {len(chosen)} chosen; building the schemata library in {args.work} ...")
    made = build_schemata(pinned, args.work.absolute(), chosen)
    (args.work / "tree-source").write_text(str(pinned), encoding="utf-8")
    (args.work / "made.json").write_text(json.dumps({"generated": len(every), "chosen": len(chosen)}), encoding="utf-8")
    print(f"{len(made.mutants)} mutants in {made.library} ({len(made.stillborn)} did not compile)")
    return 0


def _tree_of(work: Path) -> Path:
    path = work / "tree-source"
    if not path.is_file():
        raise TokconfError(f"no campaign in {work}", f"start one: tokconf strength build --work {work}")
    return Path(path.read_text(encoding="utf-8"))


def run_coverage(args: argparse.Namespace) -> int:
    from ..core.files import BUNDLED_RECORDINGS
    from ..recording.format import recording_files
    from ..strength.coverage import coverage_build, run_coverage

    work = args.work.absolute()
    build = coverage_build(_tree_of(work), work)
    run_coverage(build, work, recording_files([BUNDLED_RECORDINGS]), _say, args.jobs)
    print(f"coverage of every bundled vocabulary in {work / 'coverage' / 'vocabs'}")
    return 0


def run_campaign(args: argparse.Namespace) -> int:
    from ..core.files import BUNDLED_RECORDINGS
    from ..strength.campaign import Campaign, Recordings, journal_path, run_order, shard
    from ..strength.coverage import tree_library
    from ..strength.schemata import load_schemata

    work = args.work.absolute()
    pinned = _tree_of(work)
    schemata = load_schemata(work)
    campaign = Campaign(work, tree_library(work / "tree", pinned), Recordings.load([BUNDLED_RECORDINGS]), pinned)
    campaign.run_baseline(_say)
    index, count = args.shard
    chosen = shard(run_order(schemata.mutants), index, count)
    outcomes = campaign.run(chosen, journal_path(work, index, count), _say)
    killed = sum(o.status.value in ("killed", "timeout") for o in outcomes)
    print(f"shard {index}/{count}: {len(outcomes)} mutants, {killed} killed; the report: tokconf strength report")
    return 0


def run_report(args: argparse.Namespace) -> int:
    from ..core.files import BUNDLED_RECORDINGS, atomic_write
    from ..recording.format import load, recording_files
    from ..strength.coverage import all_hits
    from ..strength.report import render, strength_data
    from ..strength.schemata import load_schemata

    work = args.work.absolute()
    schemata = load_schemata(work)
    models = {}
    for path in recording_files([BUNDLED_RECORDINGS]):
        recording = load(path)
        models[recording.vocab_name] = str(recording.facts.get("model") or "refused to load")
    command = "tokconf strength report --work WORK --markdown docs/reports/strength.md"
    data = strength_data(work, _tree_of(work), schemata.mutants, all_hits(work), models, command)
    made = work / "made.json"
    data["made"] = {**(json.loads(made.read_text(encoding="utf-8")) if made.is_file() else {}),
                    "stillborn": len(schemata.stillborn)}  # fmt: skip
    if args.json:
        atomic_write(args.json, json.dumps(data["summary"], indent=1, sort_keys=True) + "\n")
    if args.markdown:
        atomic_write(args.markdown, render(data))
    scores = data["summary"]["scores"]
    print(f"mutation score {scores['fuzz']:.1f}% of {scores['counted']} mutants (llama.cpp's inputs alone "
          f"{scores['llama_cpp']:.1f}%, without fuzz {scores['recorded']:.1f}%); "
          f"{len(data['summary']['survivors'])} survivors, {len(data['summary']['thin'])} thin")  # fmt: skip
    return 0


def _mutant(work: Path, key: str) -> tuple[int, Any]:
    from ..strength.schemata import load_schemata

    schemata = load_schemata(work)
    found = [(n, m) for n, m in schemata.mutants.items() if m.key == key or str(n) == key]
    if not found:
        raise TokconfError(f"no mutant {key} in {work}", "tokconf strength report lists them")
    return found[0]


def run_show(args: argparse.Namespace) -> int:
    from ..core.printable import printable
    from ..strength.schemata import ENVIRONMENT, load_schemata

    work = args.work.absolute()
    schemata = load_schemata(work)
    number, mutant = _mutant(work, args.key)
    source = (_tree_of(work) / mutant.file).read_bytes()
    print("\n".join(printable(line, None) for line in mutant.diff(source).splitlines()))
    check = f"tokconf check --impl llama.cpp:{schemata.library} --maxfail 1 --timeout 10"
    print(f"\ncheck it alone: {ENVIRONMENT}={number} {check}")
    return 0


def run_hunt(args: argparse.Namespace) -> int:
    from ..builds.build import require_build
    from ..core.files import BUNDLED_RECORDINGS
    from ..core.printable import printable
    from ..recording.format import read_provenance, recording_files
    from ..strength.campaign import TABLE_READERS, function_lines, reaching
    from ..strength.coverage import all_hits, tree_library
    from ..strength.hunt import hunt
    from ..synth.files import recorded_vocab

    work = args.work.absolute()
    pinned = _tree_of(work)
    number, mutant = _mutant(work, args.key)
    unicode = (pinned / "src" / "unicode.cpp").read_text(encoding="utf-8")
    table_lines = frozenset(line for name in TABLE_READERS for line in function_lines(unicode, name))
    names = args.vocab or reaching(mutant, all_hits(work), table_lines)[: args.most]
    vocabs = {}
    for path in recording_files([BUNDLED_RECORDINGS]):
        provenance = read_provenance(path)
        if provenance["vocab"]["name"] in names:
            vocabs[provenance["vocab"]["name"]] = recorded_vocab(
                provenance["vocab"], provenance["llama_cpp"]["build"], None
            )
    found = hunt(number, mutant, tree_library(work / "tree", pinned), require_build(DEFAULT_BUILD, tokenize=False),
                 vocabs, args.rounds, _say)  # fmt: skip
    if found is None:
        print(f"no input kills {mutant.key} among the candidates tried on {len(vocabs)} vocabularies")
        return 1
    saved = work / "hunt" / f"{hashlib.sha256(mutant.key.encode()).hexdigest()[:16]}.json"
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps({"key": mutant.key, "vocab": found.vocab, "mode": found.mode,
                                 "hex": found.data.hex()}), encoding="utf-8")  # fmt: skip
    shown = printable(found.data.decode("utf-8", errors="backslashreplace"), None)
    print(f"{mutant.key} is killed on {found.vocab} in {found.mode} by {shown!r} ({found.data.hex()}):"
          f" llama.cpp {printable(repr(found.expected))}, the mutant {printable(repr(found.actual))}")  # fmt: skip
    return 0
