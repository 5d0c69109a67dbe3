"""The mutation campaign of issue 47, timed: how strong the bundled recordings are (docs/reports/strength.md).

    python benchmarks/strength.py [--work DIR] [--mutants 420] [--jobs 2] [--explain] \
        [--markdown docs/reports/strength.md]

Each step is `tokconf strength`'s, in the work folder (default ./strength-work: keep it out of the
repository), each resumable, so a killed run goes on where it stopped when started again:

1. `build`: every mutant of b11192's tokenizer sources made, a sample of `--mutants` chosen (round
   robin over the regions: every tokenizer model's own code, unicode, the tables, shared code) and
   compiled into one schemata library;
2. `coverage`: every bundled recording through the coverage-instrumented library, gcovr per vocabulary;
3. `run`: the campaign, as `--jobs` shards in parallel processes (`--shard i/n`), mutant 0 first;
4. `report`: the merged journals, printed, and with `--markdown` written as docs/reports/strength.md.

Each step's time is printed with the load average before it: on a shared machine the figures are only
as good as that. With `--explain` (issue 48), every killed mutant is then checked again on the
vocabulary that killed it with `tokconf check --explain`, and the share of them given exactly one
cause, and the share given a cause of kind `character` (the fallback), are printed; `--explain-only N`
does that alone, on the first N killed mutants in the campaign's order (`--jobs` of them at once).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

DEFAULT_WORK = Path("strength-work")


def tokconf(*args: str) -> list[str]:
    return [sys.executable, "-m", "tokconf", *args]


def timed(what: str, command: list[str]) -> float:
    load = os.getloadavg()[0]
    started = time.monotonic()
    subprocess.run(command, check=True)
    seconds = time.monotonic() - started
    print(f"{what}: {seconds:.1f} s (load average before: {load:.2f})", flush=True)
    return seconds


def campaign(work: Path, jobs: int) -> float:
    """Every shard at once, one process each; each resumes from its own journal."""
    load = os.getloadavg()[0]
    started = time.monotonic()
    shards = [subprocess.Popen(tokconf("strength", "run", "--work", str(work), "--shard", f"{i}/{jobs}"))
              for i in range(1, jobs + 1)]  # fmt: skip
    failed = [shard.args for shard in shards if shard.wait() != 0]
    if failed:
        raise SystemExit(f"a shard failed: {failed[0]}")
    seconds = time.monotonic() - started
    print(f"run ({jobs} shards): {seconds:.1f} s (load average before: {load:.2f})", flush=True)
    return seconds


def explained(item: tuple[str, str, int, str]) -> tuple[str, str, list[tuple[str, str]]] | None:
    """`--explain` on one killed mutant (the schemata library, its key, number and the vocabulary that killed
    it first), in a process of the pool (the mutant is chosen by the environment, so one at a time in a
    process): its causes' kinds and labels, or None when the check passes (a hang or crash it does not
    repeat)."""
    import tokconf
    from tokconf.strength.schemata import ENVIRONMENT

    library, key, number, vocab = item
    os.environ[ENVIRONMENT] = str(number)
    run = tokconf.check(f"llama.cpp:{library}", vocabs=[vocab], explain=True, timeout=20)
    if run.passed:
        return None
    return key, vocab, [(c.kind.value, c.label) for c in run.causes]


def explain(work: Path, most: int | None, jobs: int) -> None:
    """Issue 48: `--explain` on every killed mutant (at most `most`, in the campaign's order), on the
    vocabulary whose check killed it first, `jobs` mutants at once."""
    import multiprocessing

    from tokconf.strength.campaign import run_order
    from tokconf.strength.report import merged
    from tokconf.strength.schemata import load_schemata

    schemata = load_schemata(work)
    numbers = {m.key: n for n, m in schemata.mutants.items()}
    order = {key: index for index, (_, mutant) in enumerate(run_order(schemata.mutants)) for key in [mutant.key]}
    outcomes = sorted((o for o in merged((work / "campaign").glob("journal-*.jsonl")).values() if o.first),
                      key=lambda o: order.get(o.key, 0))[:most]  # fmt: skip
    items = [(str(schemata.library), o.key, numbers[o.key], o.first.split("/", 1)[0]) for o in outcomes]
    kinds: Counter[str] = Counter()
    single = with_character = count = 0
    started = time.monotonic()
    with multiprocessing.get_context("fork").Pool(jobs, maxtasksperchild=20) as pool:
        for found in pool.imap_unordered(explained, items):  # one slow mutant holds back no other
            if found is None:
                continue
            key, vocab, causes = found
            count += 1
            single += len(causes) == 1
            with_character += any(kind == "character" for kind, _ in causes)
            kinds.update(kind for kind, _ in causes)
            print(f"{key} on {vocab}: {len(causes)} causes ({', '.join(label for _, label in causes[:4])})", flush=True)
    print(f"explain: {count} killed mutants explained in {time.monotonic() - started:.0f} s ({jobs} at once); "
          f"exactly one cause: {single} ({100 * single / max(1, count):.1f}%); a `character` cause: {with_character} "
          f"({100 * with_character / max(1, count):.1f}%); causes by kind: {json.dumps(dict(kinds))}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--mutants", type=int, default=420)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--explain", action="store_true", help="issue 48: --explain on every killed mutant")
    parser.add_argument("--explain-only", type=int, metavar="N", help="only that, on at most N killed mutants")
    parser.add_argument("--markdown", type=Path, help="write the report there (docs/reports/strength.md)")
    args = parser.parse_args()
    work = args.work.absolute()
    if args.explain_only:
        explain(work, args.explain_only, args.jobs)
        return
    total = 0.0
    if not (work / "schemata.json").is_file():
        total += timed("build", tokconf("strength", "build", "--work", str(work), "--mutants", str(args.mutants)))
    total += timed("coverage", tokconf("strength", "coverage", "--work", str(work)))
    total += campaign(work, args.jobs)
    report = ["strength", "report", "--work", str(work), "--json", str(work / "report.json")]
    total += timed("report", tokconf(*report, *(["--markdown", str(args.markdown)] if args.markdown else [])))
    print(f"campaign: {total:.0f} s in this run (steps already done before it not counted)")
    if args.explain:
        explain(work, None, args.jobs)


if __name__ == "__main__":
    main()
