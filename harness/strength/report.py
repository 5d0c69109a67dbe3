"""What a campaign found, as data and as docs/reports/strength.md: scores, survivors, thin kills, coverage.

mutation score = killed / (mutants - equivalent), a `timeout` counted as killed (a hang) and apart;
per file, per region (a tokenizer model's own code, unicode, the tables, shared code) and per
operator; and the same score for the three tiers of the recordings (tokconf.strength.campaign.Tier),
side by side. A survivor is a gap unless the reviewed list (equivalent.yaml beside this module) names
it with a reason; an entry the campaign killed is stale, and said so. A survivor stays a gap, but
survivors.yaml may say why (most need a vocabulary none of the bundled ones is), and an input found
to kill it that the recordings the campaign checked do not hold is shown with it. Coverage: gcov's lines and
branches (throw branches left out) of llama-vocab.cpp and unicode.cpp, over every bundled
vocabulary and per tokenizer model, every line no vocabulary reaches listed by function, each with
its reason: an arid line (logging, an error), an API the oracle never calls, or the reviewed reason
in uncovered.yaml, else `no reason yet`.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.errors import TokconfError
from ..core.plain_yaml import parse_yaml
from ..core.printable import printable
from .campaign import THIN, Outcome, Status, Tier, read_journal, region
from .coverage import COVERED, LineHits
from .mutants import ARID, Mutant


def _data_file(name: str) -> Path:
    return Path(str(resources.files("tokconf.strength") / name))


def reviewed(name: str) -> list[dict[str, Any]]:
    """A reviewed list beside this module (equivalent.yaml, survivors.yaml, uncovered.yaml): entries of a `key`, a
    non-empty `reason` and, in uncovered.yaml, whether a bundled vocabulary could reach the lines
    (`reachable`, default false)."""
    path = _data_file(name)
    entries = parse_yaml(path.read_bytes()) if path.is_file() else []
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("key"), str) and isinstance(e.get("reason"), str) and e["reason"]
        and isinstance(e.get("reachable", False), bool) and set(e) <= {"key", "reason", "reachable"}
        for e in entries
    ):  # fmt: skip
        raise TokconfError(f"{path}: each entry must be a `key`, a non-empty `reason` (and `reachable`)", "fix it")
    return entries


def equivalents() -> dict[str, str]:
    """The reviewed equivalent mutants: key -> why no input can tell it from llama.cpp."""
    return {e["key"]: e["reason"] for e in reviewed("equivalent.yaml")}


def merged(journals: Iterable[Path]) -> dict[str, Outcome]:
    """Every journal's outcomes by mutant key (a mutant in two shards' journals: the later file's)."""
    found: dict[str, Outcome] = {}
    for path in sorted(journals):
        for outcome in read_journal(path):
            found[outcome.key] = outcome
    return found


@dataclass(frozen=True)
class Score:
    killed: int
    timeouts: int
    total: int  # mutants less the equivalent ones

    @property
    def percent(self) -> float:
        return 100.0 * self.killed / self.total if self.total else 100.0

    def __str__(self) -> str:
        return f"{self.percent:.1f}% ({self.killed}/{self.total})"


def score(outcomes: list[Outcome], equivalent: dict[str, str], tier: Tier = Tier.FUZZ) -> Score:
    counted = [o for o in outcomes if o.key not in equivalent or o.killed_in(Tier.FUZZ)]
    killed = [o for o in counted if o.killed_in(tier)]
    return Score(len(killed), sum(o.status is Status.TIMEOUT for o in killed), len(counted))


def summary(mutants: dict[int, Mutant], outcomes: dict[str, Outcome], equivalent: dict[str, str]) -> dict[str, Any]:
    """The campaign's figures as data (`tokconf strength report --json`)."""
    by_key = {m.key: m for m in mutants.values()}
    done = [o for o in outcomes.values() if o.key in by_key]

    def grouped(of: Any) -> dict[str, dict[str, Any]]:
        groups: dict[str, list[Outcome]] = {}
        for outcome in done:
            groups.setdefault(of(by_key[outcome.key]), []).append(outcome)
        return {name: _scores(members, equivalent) for name, members in sorted(groups.items())}

    survivors = [o for o in done if not o.killed_in(Tier.FUZZ) and o.key not in equivalent]
    thin = [o for o in done if o.status is Status.KILLED and o.kills < THIN]
    return {
        "mutants": len(done),
        "equivalent": sorted(o.key for o in done if o.key in equivalent and not o.killed_in(Tier.FUZZ)),
        "stale_equivalent": sorted(o.key for o in done if o.key in equivalent and o.killed_in(Tier.FUZZ)),
        "scores": _scores(done, equivalent),
        "by_file": grouped(lambda m: Path(m.file).name),
        "by_region": grouped(region),
        "by_operator": grouped(lambda m: m.operator.value),
        "statuses": dict(Counter(o.status.value for o in done)),
        "survivors": sorted(o.key for o in survivors),
        "thin": sorted(o.key for o in thin),
    }


def _scores(outcomes: list[Outcome], equivalent: dict[str, str]) -> dict[str, Any]:
    whole = score(outcomes, equivalent)
    return {
        "mutants": len(outcomes),
        **{tier.name.lower(): score(outcomes, equivalent, tier).percent for tier in Tier},
        "killed": whole.killed,
        "timeouts": whole.timeouts,
        # hangs no tier before the last is credited with (no check of theirs had failed before they hung)
        "unplaced": sum(
            o.status is Status.TIMEOUT and not o.killed_in(Tier.RECORDED)
            for o in outcomes
            if o.key not in equivalent or o.killed_in(Tier.FUZZ)
        ),
        "counted": whole.total,
    }


# -- coverage


@dataclass(frozen=True)
class FileCoverage:
    code: frozenset[int]
    covered: frozenset[int]
    branches: int
    taken: int
    functions: dict[int, str]  # line -> function


def coverage_of(hits: Iterable[LineHits]) -> dict[str, FileCoverage]:
    """Line and branch coverage of each covered file over the vocabularies' hits together."""
    hits = list(hits)
    result = {}
    for file in COVERED:
        code = frozenset().union(*(h.code.get(file, frozenset()) for h in hits))
        covered = frozenset().union(*(h.lines.get(file, frozenset()) for h in hits))
        branches: dict[tuple[int, int], bool] = {}
        for hit in hits:
            for where, taken in hit.branches.get(file, {}).items():
                branches[where] = branches.get(where, False) or taken
        functions = {n: f for hit in hits for n, f in hit.functions.get(file, {}).items()}
        result[file] = FileCoverage(code, covered, len(branches), sum(branches.values()), functions)
    return result


@dataclass(frozen=True)
class Unreached:
    """Lines of one function no bundled vocabulary reaches, and why."""

    function: str
    lines: list[int]
    reason: str
    reachable: bool  # whether some bundled vocabulary could: a gap, not a limit


ARID_REASON = "arid: logging, an assertion or an error that no bundled vocabulary or input raises"
BRACE_REASON = (
    "a closing brace: gcov's line for the destructors an exception passing through would run (-O0); no bundled"
    " input throws there"
)


def uncovered(source: str, cover: FileCoverage, file: str, reasons: list[dict[str, Any]]) -> list[Unreached]:
    """Every line no vocabulary reaches, grouped by function and reason: the first entry of uncovered.yaml
    whose key matches (`file:FIRST-LAST` a line range, else `file:function`, shell patterns allowed), else
    `arid` when the line logs, asserts or raises, a closing brace's exception cleanup, else `no reason yet` (a gap)."""
    lines = source.split("\n")
    name = Path(file).name
    found: dict[tuple[str, str, bool], list[int]] = {}
    for number in sorted(cover.code - cover.covered):
        function = cover.functions.get(number, "")
        why, reachable = "no reason yet", True
        for entry in reasons:
            key = entry["key"]
            span = re.fullmatch(rf"{re.escape(name)}:(\d+)(?:-(\d+))?", key)
            if (span and int(span[1]) <= number <= int(span[2] or span[1])) or (
                not span and fnmatch.fnmatchcase(f"{name}:{function}", key)
            ):
                why, reachable = entry["reason"], entry.get("reachable", False)
                break
        else:
            if ARID.search(lines[number - 1]):
                why, reachable = ARID_REASON, False
            elif lines[number - 1].strip() in ("}", "};"):
                why, reachable = BRACE_REASON, False
        found.setdefault((function, why, reachable), []).append(number)
    return [Unreached(function, numbers, why, reachable) for (function, why, reachable), numbers in found.items()]


def render(data: dict[str, Any]) -> str:
    """docs/reports/strength.md from `strength_data` (every text from a file or the campaign made printable)."""
    s = data["summary"]
    made_by = "<!-- made by `tokconf strength report --work WORK --markdown docs/reports/strength.md`; do not edit -->"
    out = ["# How strong are the recordings", "", made_by, ""]
    out += [data["intro"], ""]
    scores = s["scores"]
    out += ["## The mutation score", "", "| part of the recordings | score |", "|---|---|"]
    for tier in Tier:
        out.append(f"| {tier.title} | {scores[tier.name.lower()]:.1f}% |")
    if scores["unplaced"]:
        hangs = 100.0 * scores["unplaced"] / max(1, scores["counted"])
        fuzz = max(0.0, scores["fuzz"] - scores["recorded"] - hangs)  # no -0.0
        held = f"{scores['unplaced']} hangs ({hangs:.1f}%) that no earlier tier is credited with"
        out += ["", f"The whole recordings' score holds {held} (which input hung is not known); the fuzz strings'"
                f" own kills add {fuzz:.1f} points."]  # fmt: skip
    made = data.get("made", {})
    if made.get("generated"):
        out += [
            "",
            f"{made['generated']} mutants made; a sample of {made['chosen']} (round robin over the regions, each"
            f" region's by the sha256 of its keys) built; {made['stillborn']} of them did not compile (not counted).",
        ]
        built = made["chosen"] - made["stillborn"]
        if s["mutants"] < built:
            checked = f"{s['mutants']} of the {built} built mutants are checked so far"
            out.append(f"**The campaign is not finished: {checked}** (in the order of their keys' sha256: an even"
                       " sample); `tokconf strength run` goes on from there.")  # fmt: skip
    out += ["", f"{s['mutants']} mutants checked: " + ", ".join(f"{n} {k}" for k, n in sorted(s["statuses"].items()))
            + f"; {scores['timeouts']} of the kills are hangs (time limit); {len(s['equivalent'])} equivalent;"
            f" {len(s['thin'])} thin (killed by fewer than {THIN} checks).", ""]  # fmt: skip
    for title, key in (("file", "by_file"), ("region", "by_region"), ("operator", "by_operator")):
        out += [
            f"### By {title}",
            "",
            f"| {title} | mutants | llama.cpp's inputs | without fuzz | whole |",
            "|---|---|---|---|---|",
        ]
        for name, row in s[key].items():
            out.append(f"| {printable(name)} | {row['mutants']} | {row['llama_cpp']:.1f}% | {row['recorded']:.1f}% |"
                       f" {row['fuzz']:.1f}% |")  # fmt: skip
        out.append("")
    out += ["## Survivors", ""]
    for key in s["survivors"]:
        out += [f"- `{printable(key)}`: reached by {printable(data['reach'].get(key, 'no vocabulary'), None)}"]
        if key in data.get("hunted", {}):
            out.append(f"  killed by {_found(data['hunted'][key])}: an input found against the mutant (llama.cpp the"
                       " oracle), not in the recordings this campaign checked")  # fmt: skip
        if key in data.get("surviving", {}):
            why = printable(data["surviving"][key], None)
            out.append(f"  why it survives (reviewed: harness/strength/survivors.yaml): {why}")
        out += ["", "  ~~~~diff"]
        out += [f"  {printable(line, None)}" for line in data["diffs"][key].splitlines()] + ["  ~~~~", ""]
    if not s["survivors"]:
        out.append("None.")
    out += ["", "## Thin kills", ""]
    for key in s["thin"]:
        out.append(f"- `{printable(key)}`: {data['kills'][key]} checks")
        added = sorted({k.split("/", 2)[2] for k in data.get("killers", {}).get(key, []) if f"/{ADDED}/" in k})
        if added:
            out[-1] += f", held by {', '.join(f'`{printable(c)}`' for c in added)}: added for it (corpora/{ADDED}.yaml)"
        if key in data.get("surviving", {}):
            out[-1] += f"; why (reviewed: harness/strength/survivors.yaml): {printable(data['surviving'][key], None)}"
        if key in data.get("hunted", {}):
            out[-1] += f"; a new input kills it: {_found(data['hunted'][key])}, not in the recordings checked"
    if not s["thin"]:
        out.append("None.")
    out += ["", "## Equivalent mutants (reviewed: harness/strength/equivalent.yaml)", ""]
    out += [f"- `{printable(k)}`: {printable(data['equivalent'][k], None)}" for k in s["equivalent"]] or ["None."]
    if s["stale_equivalent"]:
        out += [
            "",
            "Listed as equivalent but killed (stale entries): " + ", ".join(f"`{k}`" for k in s["stale_equivalent"]),
        ]
    out += ["", "## Coverage", "", data["coverage_intro"], ""]
    out += ["| file | lines | lines a bundled vocabulary can reach | branches |", "|---|---|---|---|"]
    for file, row in data["coverage"].items():
        out.append(f"| {file} | {row['lines']} | {row['reachable']} | {row['branches']} |")
    out += ["", "### By tokenizer model", "", "| model | vocabularies | llama-vocab.cpp lines | unicode.cpp lines |",
            "|---|---|---|---|"]  # fmt: skip
    for model, row in data["by_model"].items():
        out.append(
            f"| {printable(model)} | {row['vocabs']} | {row['src/llama-vocab.cpp']} | {row['src/unicode.cpp']} |"
        )
    out += ["", "### Lines no bundled vocabulary reaches", ""]
    for file, groups in data["uncovered"].items():
        for group in groups:
            gap = "" if not group.reachable else " (a gap)"
            out.append(f"- {Path(file).name} `{printable(group.function)}` lines {_ranges(group.lines)}{gap}:"
                       f" {printable(group.reason, None)}")  # fmt: skip
    return "\n".join(out) + "\n"


ADDED = "strength"  # the theme of the cases added to kill mutants (corpora/strength.yaml)


def _found(found: dict[str, str]) -> str:
    """A killing input as the page shows it: the text, its bytes, the vocabulary and the mode."""
    text = bytes.fromhex(found["hex"]).decode("utf-8", errors="backslashreplace")
    shown = printable(text if len(text) <= 200 else f"{text[:80]}… ({len(found['hex']) // 2:,} bytes)", None)
    hexed = found["hex"] if len(found["hex"]) <= 64 else f"{found['hex'][:64]}…"
    return f"`{shown}` (hex {hexed}) on {printable(found['vocab'])}, {printable(found['mode'])}"


def _ranges(numbers: list[int]) -> str:
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


INTRO = """A PASS against the bundled recordings says a tokenizer answers as llama.cpp b11192 on every recorded input.
What is it worth? Each mutant here is one small change to b11192's tokenizer sources (llama-vocab.cpp,
unicode.cpp, unicode-data.cpp), a plausible port bug, checked as an implementation against the bundled
recordings: they kill it when a check fails. The score is killed / (mutants - equivalent).

How it is made (`tokconf strength`, `pip install 'tokconf[strength]'`; benchmarks/strength.py runs it all):
`build --mutants N` makes the mutants from clang's syntax tree and compiles a sample into one schemata
library (the mutant chosen by `TOKCONF_MUTANT` when it loads); `coverage` runs every bundled recording
through a gcov-instrumented build; `run [--shard i/n]` checks each mutant against the vocabularies whose
coverage reaches it (resumable); `report --markdown docs/reports/strength.md` writes this page; `hunt KEY` searches
an input that kills a survivor; `show KEY` prints a mutant's diff and the command that checks it alone.
Made by `{command}`."""
COVERAGE_INTRO = (
    "gcov line and branch coverage (throw branches left out) of a coverage-instrumented tokenizer-only build,"
    " every bundled recording's inputs, facts and decoding run through it (`tokconf strength coverage`)."
)


def strength_data(work: Path, pinned: Path, mutants: dict[int, Mutant], hits: dict[str, LineHits],
                  models: dict[str, str], command: str) -> dict[str, Any]:  # fmt: skip
    """Everything docs/reports/strength.md shows, as data: `models` is each vocabulary's tokenizer model."""
    outcomes = merged((work / "campaign").glob("journal-*.jsonl"))
    equivalent = equivalents()
    data = summary(mutants, outcomes, equivalent)
    by_key = {m.key: m for m in mutants.values()}
    sources = {file: (pinned / file).read_bytes() for file in {m.file for m in mutants.values()}}
    whole = coverage_of(hits.values())
    by_model: dict[str, dict[str, Any]] = {}
    for model in sorted(set(models.values())):
        names = [n for n in hits if models.get(n) == model]
        cover = coverage_of(hits[n] for n in names)
        by_model[model] = {"vocabs": len(names), **{f: _percent(c.covered, c.code) for f, c in cover.items()}}
    reasons = reviewed("uncovered.yaml")
    unreached = {f: uncovered((pinned / f).read_text(encoding="utf-8"), c, f, reasons) for f, c in whole.items()}
    return {
        "intro": INTRO.format(command=command),
        "coverage_intro": COVERAGE_INTRO,
        "summary": data,
        "reach": {k: _reach(outcomes[k], by_key[k], unreached) for k in data["survivors"]},
        "diffs": {k: by_key[k].diff(sources[by_key[k].file]) for k in data["survivors"]},
        "hunted": hunted(work),
        "kills": {k: outcomes[k].kills for k in data["thin"]},
        "killers": {k: outcomes[k].killers for k in data["thin"]},
        "equivalent": equivalent,
        "surviving": {e["key"]: e["reason"] for e in reviewed("survivors.yaml")},
        "coverage": {
            f: {
                "lines": _percent(c.covered, c.code),
                "reachable": _reachable(c, unreached[f]),
                "branches": f"{100 * c.taken / max(1, c.branches):.1f}% ({c.taken}/{c.branches})",
            }
            for f, c in whole.items()
        },
        "by_model": by_model,
        "uncovered": unreached,
    }


def hunted(work: Path) -> dict[str, dict[str, str]]:
    """The killing inputs found against a mutant (by `tokconf strength hunt`, or by hand and checked the
    same way, saved in its shape), by mutant key: inputs the recordings the campaign checked do not hold."""
    found = {}
    for path in sorted((work / "hunt").glob("*.json")):
        entry = json.loads(path.read_text(encoding="utf-8"))
        found[entry["key"]] = entry
    return found


def _reach(outcome: Outcome, mutant: Mutant, unreached: dict[str, list[Unreached]]) -> str:
    """Which vocabularies reach a survivor; for one none reaches, why its line is unreached."""
    if outcome.vocabs:
        return ", ".join(outcome.vocabs[:8]) + (" …" if len(outcome.vocabs) > 8 else "")
    why = next((g.reason for g in unreached.get(mutant.file, []) if mutant.line in g.lines), "")
    return f"no vocabulary ({why})" if why else "no vocabulary"


def _reachable(cover: FileCoverage, unreached: list[Unreached]) -> str:
    """Line coverage of the code a bundled vocabulary could reach: the lines uncovered.yaml or the arid rule
    says none can are left out of the count (and listed with their reason)."""
    limit = sum(len(group.lines) for group in unreached if not group.reachable)
    reachable = len(cover.code) - limit
    return f"{100 * len(cover.covered) / max(1, reachable):.1f}% ({len(cover.covered)}/{reachable})"


def _percent(part: frozenset[int], whole: frozenset[int]) -> str:
    return f"{100 * len(part) / max(1, len(whole)):.1f}% ({len(part)}/{len(whole)})"
