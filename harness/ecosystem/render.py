"""docs/reports/ecosystem.md and its HTML page: the matrix as tables, the causes with their examples, the
speeds as ratios to llama.cpp; the page draws the matrix as a coloured grid and the speeds as an SVG
chart, with no script and nothing fetched."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from pathlib import Path

from ..core.files import atomic_write
from ..core.outcome import MODES, Outcome, Refusal, render_outcome
from ..core.render import visible
from .matrix import Cell, Matrix, Speed, to_json
from .speed import LLAMA_CPP

SHOWN_IDS = 16  # ids of an example shown; the JSON holds them all


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.2f}%"


def _modes_said() -> str:
    flags = {mode: ", ".join(f"{n}={str(v).lower()}" for n, v in zip(("add_special", "parse_special"), f, strict=True))
             for mode, f in MODES.items()}  # fmt: skip
    return "; ".join(f"{mode}: {said}" for mode, said in flags.items())


def peer_sources(matrix: Matrix) -> list[str]:
    return [f"- **{p.name}**: `--impl {p.spec}`" for p in matrix.peers]


def cell_text(cell: Cell) -> str:
    """A cell for people: its conformance, or why the peer does not serve the vocab."""
    if cell.declined:
        return cell.declined.split(":", 1)[0]  # declined, broken
    return percent(cell.conformance)


def _ids(outcome: Outcome) -> str:
    if isinstance(outcome, Refusal):
        return render_outcome(outcome)
    shown = " ".join(map(str, outcome[:SHOWN_IDS]))
    return shown + (f" … ({len(outcome)} ids)" if len(outcome) > SHOWN_IDS else "") if outcome else "(no ids)"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def speed_ratio(speed: Speed, base: Speed | None, warm: bool) -> str:
    mine = speed.warm_mbps if warm else speed.cold_mbps
    if base is None:
        return f"{mine:.2f} MB/s"
    theirs = base.warm_mbps if warm else base.cold_mbps
    return f"{mine:.2f} MB/s ({mine / theirs:.2f}×)"


def _speeds_by_vocab(matrix: Matrix) -> dict[str, dict[str, Speed]]:
    found: dict[str, dict[str, Speed]] = {}
    for speed in matrix.speeds:
        found.setdefault(speed.vocab, {})[speed.impl] = speed
    return found


def _speed_columns(matrix: Matrix) -> list[str]:
    return list(dict.fromkeys([LLAMA_CPP, "reference", *[p.name for p in matrix.peers]]))


def markdown(matrix: Matrix) -> str:
    peers = [p.name for p in matrix.peers]
    lines = [
        "# The ecosystem's conformance matrix",
        "",
        "Which tokenizer libraries give llama.cpp's token ids for a GGUF vocabulary, in which mode, why not, and",
        f"how fast. Every bundled b{matrix.build} recording, checked and explained (`--explain`) for each peer;",
        "each cause is named with a minimal input on which llama.cpp's ids and the peer's differ.",
        "",
        f"Made by `{matrix.command}` on {matrix.date}, with "
        + ", ".join(f"{name} {version}" for name, version in matrix.versions.items())
        + ". Conformance is passed of judged cases; a peer that cannot be given an input (not valid UTF-8 for a",
        "`str` API) leaves it unsupported, not judged (coverage is judged of all cases).",
        "",
        "The peers:",
        "",
        *peer_sources(matrix),
        "",
        "## Conformance",
        "",
        f"Each cell: plain · special · bos ({_modes_said()}).",
        "",
        "| vocab | " + " | ".join(peers) + " |",
        "|---|" + "---|" * len(peers),
    ]
    for vocab in matrix.vocabs:
        shown = []
        for peer in peers:
            plain = matrix.cell(peer, vocab, "plain")
            modes = " · ".join(cell_text(matrix.cell(peer, vocab, m)) for m in MODES)
            shown.append(cell_text(plain) if plain.declined else modes)
        lines.append(f"| {vocab} | " + " | ".join(shown) + " |")
    declined = [(c.peer, c.vocab, c.declined) for c in matrix.cells if c.declined and c.mode == "plain"]
    if declined:
        lines += ["", "Not served (the peer declines the vocab, or breaks loading it):", ""]
        lines += [f"- {peer} × {vocab}: {_md(why[:400])}" for peer, vocab, why in declined]
    lines += ["", "Coverage (judged of all cases, plain mode):", "",
              "| vocab | " + " | ".join(peers) + " |", "|---|" + "---|" * len(peers)]  # fmt: skip
    for vocab in matrix.vocabs:
        shown = [percent(matrix.cell(p, vocab, "plain").coverage) for p in peers]
        lines.append(f"| {vocab} | " + " | ".join(shown) + " |")
    lines += ["", "## Causes", ""]
    lines += [
        "Each cause as `--explain` names it, with its cases per mode and one example: the minimal input, its",
        "code points, llama.cpp's ids and the peer's. `tests/test_ecosystem.py` re-runs a sample of them.",
        "",
        "| peer | vocab | kind | what the peer does | cases | minimal input | code points | llama.cpp | peer |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in matrix.causes:
        modes = ", ".join(f"{m} {n}" for m, n in row.cases_per_mode.items())
        minimal = visible(row.minimal, 40) if row.minimal else "(empty)"
        lines.append(
            f"| {row.peer} | {row.vocab} | `{row.kind}` | {_md(row.label)} | {modes} | `{_md(minimal)}` | "
            f"{' '.join(row.codepoints[:8])} | {_md(_ids(row.expected))} | {_md(_ids(row.actual))} |"
        )
    if matrix.unexplained:
        lines += ["", "Failed cases no cause reproduces (listed case by case by `--causes`):", ""]
        lines += [f"- {key.replace('/', ' × ', 1)}: {n}" for key, n in matrix.unexplained.items()]
    lines += ["", "## Speed", ""]
    lines += [
        "Encode throughput on one fixed text (the corpus's prose, code and multilingual prose, about 240 KB), in",
        "plain mode, all measured in the same run; in brackets the ratio to llama.cpp (libllama in the oracle's",
        "worker, so its time includes the pipe). Cold: the first pass after loading; warm: the best of the next two.",
        "",
    ]
    columns = _speed_columns(matrix)
    lines += ["| vocab | pass | " + " | ".join(columns) + " |", "|---|---|" + "---|" * len(columns)]
    for vocab, speeds in _speeds_by_vocab(matrix).items():
        base = speeds.get(LLAMA_CPP)
        for warm in (False, True):
            ratios = [speed_ratio(speeds[c], base, warm) if c in speeds else "—" for c in columns]
            lines.append(f"| {vocab} | {'warm' if warm else 'cold'} | " + " | ".join(ratios) + " |")
    if matrix.errors:
        lines += ["", "## Errors while measuring", ""] + [f"- {_md(e)}" for e in matrix.errors]
    return "\n".join(lines) + "\n"


_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #1f2328; }
table { border-collapse: collapse; margin: 1em 0; } th, td { border: 1px solid #d0d7de; padding: 4px 6px; }
th { background: #f6f8fa; } td.c { text-align: right; min-width: 4.5em; font-variant-numeric: tabular-nums; }
.full { background: #2da44e; color: #fff; } .high { background: #a6e3b0; } .mid { background: #fbe38e; }
.low { background: #ffb3a7; } .none { background: #eaeef2; color: #57606a; }
code { font-size: 12px; } .muted { color: #57606a; } svg text { font: 11px system-ui, sans-serif; }
"""
_STYLE = " ".join(_CSS.split())  # one line in the page: the generated report does not repeat its source


def _shade(cell: Cell) -> str:
    value = cell.conformance
    if cell.declined or value is None:
        return "none"
    return "full" if value == 1 else "high" if value >= 0.95 else "mid" if value >= 0.75 else "low"


def _grid(matrix: Matrix) -> str:
    peers = [p.name for p in matrix.peers]
    head = "".join(f"<th colspan='{len(MODES)}'>{html.escape(p)}</th>" for p in peers)
    modes = "".join(f"<th>{m}</th>" for _ in peers for m in MODES)
    rows = []
    for vocab in matrix.vocabs:
        cells = []
        for peer in peers:
            for mode in MODES:
                cell = matrix.cell(peer, vocab, mode)
                title = html.escape(cell.declined or ", ".join(f"{v} {n}" for v, n in cell.counts.items()), quote=True)
                cells.append(
                    f"<td class='c {_shade(cell)}' id='{html.escape(f'{peer}/{vocab}/{mode}', quote=True)}' "
                    f"title='{title}'>{html.escape(cell_text(cell))}</td>"
                )
        rows.append(f"<tr><th>{html.escape(vocab)}</th>{''.join(cells)}</tr>")
    return f"<table><tr><th rowspan='2'>vocab</th>{head}</tr><tr>{modes}</tr>{''.join(rows)}</table>"


def _chart(matrix: Matrix) -> str:
    """Warm throughput per vocab and implementation, as horizontal bars (log-free, MB/s)."""
    columns = _speed_columns(matrix)
    by_vocab = _speeds_by_vocab(matrix)
    colours = ("#1f6feb", "#8250df", "#2da44e", "#bf8700", "#cf222e", "#0a3069", "#57606a", "#e16f24")
    peak = max((s.warm_mbps for s in matrix.speeds), default=1.0)
    bar, gap, label_w, width = 12, 10, 170, 520
    y = 20
    parts = []
    for vocab, speeds in by_vocab.items():
        parts.append(f"<text x='0' y='{y + 10}' font-weight='bold'>{html.escape(vocab)}</text>")
        y += 16
        for index, impl in enumerate(columns):
            speed = speeds.get(impl)
            if speed is None:
                continue
            length = max(1.0, width * speed.warm_mbps / peak)
            colour = colours[index % len(colours)]
            parts.append(f"<text x='8' y='{y + 10}'>{html.escape(impl)}</text>")
            parts.append(f"<rect x='{label_w}' y='{y}' width='{length:.1f}' height='{bar}' fill='{colour}'/>")
            parts.append(f"<text x='{label_w + length + 4:.1f}' y='{y + 10}'>{speed.warm_mbps:.2f} MB/s</text>")
            y += bar + 3
        y += gap
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{label_w + width + 90}' height='{y}' role='img' "
        f"aria-label='warm encode throughput'>{''.join(parts)}</svg>"
    )


def _causes_table(matrix: Matrix) -> str:
    rows = []
    for row in matrix.causes:
        modes = ", ".join(f"{m} {n}" for m, n in row.cases_per_mode.items())
        rows.append(
            "<tr>" + "".join(
                f"<td>{html.escape(text)}</td>"
                for text in (row.peer, row.vocab, row.kind, row.label, modes,
                             visible(row.minimal, 40) if row.minimal else "(empty)", " ".join(row.codepoints[:8]),
                             _ids(row.expected), _ids(row.actual))
            ) + "</tr>"
        )  # fmt: skip
    head = "".join(
        f"<th>{h}</th>"
        for h in ("peer", "vocab", "kind", "what the peer does", "cases", "minimal input", "code points", "llama.cpp",
                  "peer")
    )  # fmt: skip
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def page(matrix: Matrix) -> str:
    versions = ", ".join(f"{html.escape(n)} {html.escape(v)}" for n, v in matrix.versions.items())
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>tokconf: the ecosystem's conformance matrix</title><style>{_STYLE}</style></head><body>"
        "<h1>The ecosystem's conformance matrix</h1>"
        f"<p class='muted'>Peers against every bundled b{matrix.build} recording; made by "
        f"<code>{html.escape(matrix.command)}</code> on {html.escape(matrix.date)} with {versions}.</p>"
        "<h2>Conformance (passed of judged cases)</h2>"
        "<p class='muted'>green: 100%; light green: ≥95%; yellow: ≥75%; red: below; grey: declined or nothing "
        "judged. Hover a cell for its counts.</p>"
        f"{_grid(matrix)}<h2>Causes</h2>{_causes_table(matrix)}"
        f"<h2>Warm encode throughput</h2>{_chart(matrix)}"
        "</body></html>\n"
    )


def cells_of(matrix: Matrix) -> Iterable[str]:
    """Every cell's id in the page (`peer/vocab/mode`), for whoever checks the page holds them all."""
    return (f"{c.peer}/{c.vocab}/{c.mode}" for c in matrix.cells)


def write_all(matrix: Matrix, out: Path) -> None:
    """ecosystem.json (the data), ecosystem.md and ecosystem.html (both made from it) in `out`."""
    atomic_write(out / "ecosystem.json", json.dumps(to_json(matrix), ensure_ascii=False, indent=1) + "\n")
    atomic_write(out / "ecosystem.md", markdown(matrix))
    atomic_write(out / "ecosystem.html", page(matrix))
