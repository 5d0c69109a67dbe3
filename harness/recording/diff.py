"""`tokconf diff A B`: what changed between two recordings of the same inputs (e.g. two builds).

Per vocabulary: whether the GGUF file changed, which facts changed, and for each mode the cases
whose outcome changed, each with its first divergence and the pieces around it. Vocabularies or
cases present on one side only are listed too. The output is Markdown, so a report can be committed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import TokconfError
from ..core.outcome import MODES, Mode, Outcome, render_outcome
from ..core.render import first_divergence, ids_window, visible
from .format import Recording, load, recording_files
from .pieces import pieces_of


@dataclass
class Change:
    case: str
    mode: Mode
    data: bytes
    before: Outcome
    after: Outcome


@dataclass
class VocabDiff:
    name: str
    sha_before: str
    sha_after: str
    build_after: int
    facts: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    only_before: list[str] = field(default_factory=list)
    only_after: list[str] = field(default_factory=list)
    compared: int = 0

    @property
    def changed(self) -> bool:
        """Anything differs: an outcome, a fact, the vocab file, or the set of cases."""
        return bool(self.changes or self.facts or self.only_before or self.only_after) or (
            self.sha_before != self.sha_after
        )


def _facts_changed(before: Mapping[str, object], after: Mapping[str, object]) -> dict[str, tuple[Any, Any]]:
    changed = {}
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        if a != b:
            changed[key] = (a, b)
    return changed


def diff_recording(before: Recording, after: Recording) -> VocabDiff:
    """Compare two recordings of one vocabulary, case by case and mode by mode."""
    result = VocabDiff(before.vocab_name, before.vocab_sha256, after.vocab_sha256, after.build)
    result.facts = _facts_changed(before.facts, after.facts)
    later = {case.id: case for case in after.cases}
    earlier = {case.id for case in before.cases}
    for case in before.cases:
        other = later.get(case.id)
        if other is None:
            result.only_before.append(case.id)
            continue
        if other.data != case.data:
            raise TokconfError(
                f"{before.vocab_name}: case {case.id} has different input on each side",
                "diff recordings made from the same corpus, seed and generator version",
            )
        for mode in MODES:
            if mode in case.outcomes and mode in other.outcomes:
                result.compared += 1
                if case.outcomes[mode] != other.outcomes[mode]:
                    result.changes.append(Change(case.id, mode, case.data, case.outcomes[mode], other.outcomes[mode]))
    result.only_after = [case.id for case in after.cases if case.id not in earlier]
    return result


def diff(before: list[Path], after: list[Path]) -> Iterator[VocabDiff | str]:
    """Each vocabulary's diff, or the name of a vocabulary recorded on one side only (as `-name`/`+name`)."""
    left = {p.stem: p for p in recording_files(before)}
    right = {p.stem: p for p in recording_files(after)}
    for name in sorted(set(left) | set(right)):
        if name not in right:
            yield f"-{name}"
        elif name not in left:
            yield f"+{name}"
        else:
            yield diff_recording(load(left[name]), load(right[name]))


def render(
    diffs: list[VocabDiff | str], label_before: str, label_after: str, vocabs: dict[str, Path], limit: int = 10
) -> str:
    """The Markdown report; `vocabs` maps a vocab name to its GGUF file after the change (for pieces)."""
    lines = [f"# Recording diff: {label_before} → {label_after}", ""]
    header = "| vocab | vocab file | facts changed | outcomes compared | changed | plain | special | bos |"
    lines += [header, "|---|---|---|---|---|---|---|---|"]
    for item in diffs:
        if isinstance(item, str):
            side = label_before if item.startswith("-") else label_after
            lines.append(f"| {item[1:]} | only in {side} | | | | | | |")
            continue
        per_mode = {m: sum(1 for c in item.changes if c.mode == m) for m in MODES}
        file_state = "same" if item.sha_before == item.sha_after else "**changed**"
        lines.append(
            f"| {item.name} | {file_state} | {', '.join(item.facts) or '—'} | {item.compared} | {len(item.changes)} "
            f"| {per_mode['plain']} | {per_mode['special']} | {per_mode['bos']} |"
        )
    for item in diffs:
        if isinstance(item, str) or not (item.changes or item.facts or item.only_before or item.only_after):
            continue
        lines += ["", f"## {item.name}", ""]
        if item.sha_before != item.sha_after:
            lines.append(f"- vocab file: `{item.sha_before[:16]}…` → `{item.sha_after[:16]}…`")
        for key, (a, b) in item.facts.items():
            lines.append(f"- fact `{key}`: `{_short(a)}` → `{_short(b)}`")
        if item.only_before or item.only_after:
            lines.append(f"- cases only before: {len(item.only_before)}, only after: {len(item.only_after)}")
        for change in item.changes[:limit]:
            lines.append(f"- `{change.case}` [{change.mode}] input `{visible(change.data, 80)}`")
            a, b = change.before, change.after
            if isinstance(a, list) and isinstance(b, list):
                at = first_divergence(a, b)
                vocab = vocabs.get(item.name)
                lines.append(f"  - first divergence at {at}; before: {ids_window(a, at, pieces_of(vocab), 2)}")
                lines.append(f"  - after: {ids_window(b, at, pieces_of(vocab), 2)}")
            else:
                lines.append(f"  - before: {render_outcome(a)}; after: {render_outcome(b)}")
        if len(item.changes) > limit:
            lines.append(f"- … and {len(item.changes) - limit} more")
    return "\n".join(lines) + "\n"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
