"""The story of a bisect: the two builds around the change, the upstream range to read, what changed
(inputs with before/after ids and pieces), what was skipped, and the artifacts it trusted."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...builds.fetch import fetched_source
from ...core.outcome import MODES, render_outcome
from ...core.render import code_points, first_divergence, ids_window, visible
from ...recording.decoding import DETOKENIZE
from ...recording.pieces import pieces_of
from .commits import Commit
from .probe import VOCAB_WIDE, Answer, Answers, Key, PieceChanges, Prober, ProbeSet, Target, same
from .search import Bisection

EXAMPLES = 5
UPSTREAM = "https://github.com/ggml-org/llama.cpp"


def _outcome(key: Key, answer: Answer, other: Answer, vocab: Path) -> str:
    """One side of a change: ids around the first difference, the facts fields that differ, the
    pieces' digest, or the detokenized text."""
    item = key[2]
    if isinstance(answer, list) and isinstance(other, list) and answer:
        return ids_window(answer, first_divergence(answer, other), pieces_of(vocab), 3)
    if isinstance(answer, str) and isinstance(other, str) and item == "facts":
        return json.dumps(_differing(json.loads(answer), json.loads(other)))[:300]
    if isinstance(answer, str) and item in DETOKENIZE:
        return visible(bytes.fromhex(answer), 120) or "(empty text)"
    return answer if isinstance(answer, str) else render_outcome(answer)


def _differing(mine: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """The fields of `mine` that differ from `theirs`, and inside a table (token attributes, special
    texts) only the entries that differ (None: not in `mine`): one id's changed attribute is not a
    table of 300 entries."""
    found: dict[str, Any] = {}
    for key in sorted(mine.keys() | theirs.keys()):
        a, b = mine.get(key), theirs.get(key)
        if a != b:
            found[key] = _differing(a, b) if isinstance(a, dict) and isinstance(b, dict) else a
    return found


def counted(changed: Iterable[Key], size: int) -> str:
    """`3 outcomes of 6`, and how many facts, piece lists and detokenized texts besides."""
    items = [item for _, _, item in changed]
    ids = sum(1 for item in items if item in MODES)
    others = f" and {len(items) - ids} facts, pieces or detokenized texts" if len(items) > ids else ""
    return f"{ids} outcomes of {size}{others}"


def piece_lines(changes: list[tuple[int, bytes, bytes]] | str, lo_name: str, hi_name: str) -> list[str]:
    """The ids whose piece changed: how many, and the first few (what a pieces digest stands for); or
    why they could not be listed."""
    if isinstance(changes, str):
        return [f"    ids rendered otherwise from {lo_name} to {hi_name}: not listed ({changes})"]
    shown = ", ".join(f"{i}: {visible(a, 20)!r} → {visible(b, 20)!r}" for i, a, b in changes[:EXAMPLES])
    more = f" (and {len(changes) - EXAMPLES} more)" if len(changes) > EXAMPLES else ""
    return [f"    ids rendered otherwise from {lo_name} to {hi_name}: {len(changes)} ({shown}{more})"]


def describe(result: Bisection[int], prober: Prober, good: int, bad: int, listed: int) -> str:
    lo, hi = result.last_good, result.first_bad
    lines = [
        f"tokconf bisect: b{good} (good) .. b{bad} (bad): {listed} published builds, {len(result.probed)} probed",
        f"  last build answering like b{good}:  b{lo}",
        f"  first build answering otherwise:     b{hi}",
        f"  upstream: tags b{lo}..b{hi}, {UPSTREAM}/compare/b{lo}...b{hi} (`git log b{lo}..b{hi}` in a checkout)",
    ]
    if result.between:
        lines.append("  the change may also be in a skipped build: " + ", ".join(f"b{b}" for b in result.between))
    for build, why in sorted(result.skipped.items()):
        lines.append(f"  skipped b{build}: {why}")
    lines += _changes(prober, lo, hi, f"b{lo}", f"b{hi}")
    if hi != bad:
        after = prober.answers[hi]
        rest = sum(1 for key in after if not same(after[key], prober.answers[bad].get(key)))
        lines.append(
            f"  b{hi} answers like b{bad}" if not rest else
            f"  {rest} outcomes change again after b{hi}: another change lies in b{hi}..b{bad} "
            f"(tokconf bisect --good {hi} --bad {bad})"
        )  # fmt: skip
    lines.append("  artifacts:")
    for build in sorted(b for b in prober.answers if isinstance(b, int)):
        source = fetched_source(build)
        lines.append(f"    b{build}: {source.describe() if source else 'answers from the probe cache'}")
    return "\n".join(lines)


def _changes(prober: Prober, lo: Target, hi: Target, lo_name: str, hi_name: str) -> list[str]:
    """How many outcomes differ between two probed targets, and the shortest inputs among them."""
    before, after = prober.answers[lo], prober.answers[hi]
    changed = [key for key in before if not same(before[key], after.get(key))]
    vocabs = sorted({vocab for vocab, _, _ in changed})
    pieces = prober.piece_changes(lo, hi, changed)
    lines = [f"  changed between them: {counted(changed, prober.probes.size)}, in {', '.join(vocabs)}"]
    return lines + examples(prober.probes, changed, before, after, lo_name, hi_name, pieces)


def examples(
    probes: ProbeSet,
    changed: Iterable[Key],
    before: Answers,
    after: Answers,
    lo_name: str,
    hi_name: str,
    pieces: PieceChanges,
) -> list[str]:
    """The vocabularies' facts and pieces that changed, then the shortest inputs among `changed`, each
    with both sides' ids (pieces around the first difference) or detokenized text (also what tokconf
    upgrade's report shows for each change)."""
    paths = {name: path for name, path, _ in probes.vocabs}
    data = {(name, case_id): raw for name, _, cases in probes.vocabs for case_id, raw in cases}
    width = max(len(lo_name), len(hi_name))
    lines = []
    for key in sorted(changed, key=lambda k: (len(data.get((k[0], k[1]), b"")), k))[:EXAMPLES]:
        vocab, case, item = key
        if case == VOCAB_WIDE:
            lines.append(f"  {vocab} [{item}]")
        else:
            raw = data[vocab, case]
            lines.append(f"  {vocab} [{item}] {case}: {visible(raw, 80)}  ({code_points(raw, 8)})")
        lines.append(f"    {lo_name:{width}}: {_outcome(key, before[key], after[key], paths[vocab])}")
        lines.append(f"    {hi_name:{width}}: {_outcome(key, after[key], before[key], paths[vocab])}")
        if (vocab, item) in pieces:
            lines += piece_lines(pieces[vocab, item], lo_name, hi_name)
    return lines


def describe_commits(result: Bisection[Target], prober: Prober, commits: list[Commit], good: int, bad: int) -> str:
    """The commit-level story inside the tag range b`good`..b`bad`; the tags stand for their commits."""
    subjects = {c.sha: c.subject for c in commits}
    tag_commits = {good: "", bad: commits[-1].sha}

    def name(target: Target) -> str:
        if isinstance(target, int):
            sha = tag_commits[target]
            return f"b{target}" + (f" ({sha[:12]})" if sha else "")
        return target[:12]

    def line(target: Target) -> str:
        sha = target if isinstance(target, str) else tag_commits[target]
        subject = f"  {subjects[sha]}" if sha in subjects else ""
        link = f"  {UPSTREAM}/commit/{sha}" if sha else ""
        return f"{name(target)}{subject}{link}"

    lo, hi = result.last_good, result.first_bad
    lines = [
        f"tokconf bisect, commits: {len(commits)} commits after b{good} up to b{bad} in {prober.source}, "
        f"{len(result.probed)} probed",
        f"  last commit answering like b{good}:  {line(lo)}",
        f"  first commit answering otherwise:    {line(hi)}",
    ]
    if result.between:
        lines.append("  the change may also be in a skipped commit: " + ", ".join(map(name, result.between)))
    for target, why in result.skipped.items():
        lines.append(f"  skipped {name(target)}: {why}")
    lines += _changes(prober, lo, hi, name(lo), name(hi))
    return "\n".join(lines)
