"""`tokconf check --report x.html`: the page a port author opens from CI, drawn by a real browser.

A real failing run (two planted bugs, `--explain`) is rendered, opened in headless Chromium, and
its screenshot and DOM are checked: the page draws something, and shows the verdict, every cause's
kind and label, every case id under its cause, and the unexplained ids. A run built by hand holds
hostile text (`<script>`, invalid UTF-8, controls, a lone surrogate, a huge input): it shows as
text, and the page asks for nothing from outside.
"""

from __future__ import annotations

import html
from html.parser import HTMLParser
from pathlib import Path

from browser import chromium, png_pixels
from tokconf.builds.build import Build
from tokconf.checking.contract import Decision, Gate, Verdict
from tokconf.checking.engine import CaseResult, Selection
from tokconf.checking.explain import Cause
from tokconf.checking.explain.causes import case_id
from tokconf.checking.explain.kinds import Character, Kind, Refusing, Stage
from tokconf.checking.run import CheckRun, check_paths
from tokconf.checking.xfail import ExpectedFailures
from tokconf.core.outcome import Refusal, RefusalKind
from tokconf.recording.format import VocabGroup
from tokconf.reporting.html_report import render_html
from tokconf.reporting.report import Invocation, RunReport

RECORDING = Path(__file__).resolve().parent.parent / "recordings" / "b11192" / "llama-spm.yaml"
WIDTH, HEIGHT = 1200, 2000
HOSTILE = "<script>alert(1)</script>"


def section(dom: str, anchor: str) -> str:
    """The serialized DOM of the `<section id=anchor>`, up to its closing tag (sections do not nest
    inside a cause's)."""
    start = dom.index(f'id="{anchor}"')
    return dom[start : dom.index("</section>", start)]


def text(value: str) -> str:
    """A text node as Chromium serializes it."""
    return html.escape(value, quote=False)


def test_a_real_failing_run_reads_in_a_browser(llama_build: Build, tmp_path: Path) -> None:
    """No BOS and U+3000 read as a space: the page shows both causes, each with all its cases."""
    selection, xfails = Selection(), ExpectedFailures()
    run = check_paths([RECORDING], "fake_impls:two_bugs", selection, xfails, None, None, explain=True)
    decision = run.decision
    assert not decision.passed and len(run.causes) == 2
    how = Invocation("fake_impls:two_bugs", (str(RECORDING),))
    page = tmp_path / "report.html"
    page.write_text(render_html(RunReport(run, how, f"tokconf check: {run.impl_name}")), encoding="utf-8")

    shot = tmp_path / "report.png"
    chromium(tmp_path, page, f"--screenshot={shot}", f"--window-size={WIDTH},{HEIGHT}")
    width, height, colours = png_pixels(shot.read_bytes())
    assert (width, height) == (WIDTH, HEIGHT)
    background, most = colours.most_common(1)[0]
    assert len(colours) > 50 and most < 0.95 * width * height, f"a blank page: {most} pixels of {background}"
    green = sum(n for (r, g, b), n in colours.items() if g > r + 60 and g > b + 60)
    red = sum(n for (r, g, b), n in colours.items() if r > g + 100 and r > b + 100)
    assert green > 1000 and red > 1000, "the bars of passed (green) and failed (red) cases are drawn"

    dom = chromium(tmp_path, page, "--dump-dom")
    assert "<script" not in dom
    assert text(decision.line()) in dom
    assert all(text(f"fail: {reason}") in dom for reason in decision.reasons)
    for number, cause in enumerate(run.causes, 1):
        shown = section(dom, f"cause-{number}")
        assert text(cause.kind.value) in shown and text(cause.label) in shown
        listed = [text(case) for case in map(case_id, cause.cases)]
        assert all(f"<li>{case}</li>" in shown for case in listed), f"cause {number} lists every case"
        assert text(how.command(cause.cases[0])) in shown
    assert {c.kind for c in run.causes} == {Kind.BOS_MISSING, Kind.WHITESPACE_CLASS}
    assert "its own pieces" in dom  # two_bugs decodes: its own pieces are shown, and said to be
    unexplained = section(dom, "unexplained") if run.unexplained else ""
    assert all(f"<li>{text(case)}</li>" in unexplained for case in map(case_id, run.unexplained))


class Page(HTMLParser):
    """Every tag, attribute and text node of a page, as a browser parses them."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.attributes: list[tuple[str, str]] = []
        self.text: list[str] = []
        self.feed(source)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes += [(name, value or "") for name, value in attrs]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def hostile_run() -> tuple[CheckRun, Decision, Invocation]:
    """A run whose every string a port or a recording wrote is hostile."""
    vocab = "evil<b>"
    huge = HOSTILE.encode() + b"\xff\xfe\x00" + b"\xe3\x80\x80" * 400_000
    failed = CaseResult(vocab, "plain", HOSTILE, Verdict.FAILED, huge, [1, 2, 3], [1, 5], "different ids")
    unexplained = CaseResult(vocab, "special", "odd&case", Verdict.FAILED, b"\x00<i>", [4], [9], "different ids")
    broken = Refusal(f"crashed: {HOSTILE}", RefusalKind.BROKEN)
    error = CaseResult(vocab, "bos", "<img src=x onerror=alert(2)>", Verdict.ERROR, b"<", [1], broken, broken.reason)
    aborted = CaseResult(vocab, "special", "aborts", Verdict.FAILED, b"\xf8", Refusal(HOSTILE), [7], "returned ids")
    declined = [  # more unsupported reasons than the page lists (letters: numbers would be one reason)
        CaseResult(vocab, "plain", f"d{n}", Verdict.UNSUPPORTED, reason=f"declined <script>{chr(65 + n)}</script>\x0c"
                   + ("\udcff" if n == 0 else ""))
        for n in range(25)
    ]  # fmt: skip
    results = [failed, unexplained, error, aborted, *declined]
    run = CheckRun(f"port{HOSTILE}", results=results, unexplained=[unexplained])
    run.summary.add(results, VocabGroup.USER)
    run.causes = [
        Cause(vocab, Character(Kind.CHARACTER, Stage.VERDICT, culprit=b"<"), huge, "plain", [1, 2, 3], [1, 5]),
        Cause(vocab, Refusing(Kind.NOT_REFUSED, Stage.VERDICT), b"\xf8", "special", Refusal(HOSTILE), [7]),
    ]
    run.causes[0].actual_pieces, run.causes[0].shrunk = (HOSTILE.encode(), b"\xff</pre>"), False
    run.causes[0].cases, run.causes[1].cases = [failed], [aborted]
    run.ended = decision = run.summary.decide(Gate())
    return run, decision, Invocation(f"evil:{HOSTILE}", ("rec<b>.yaml",))


def test_hostile_text_is_shown_as_text_and_nothing_is_fetched(tmp_path: Path) -> None:
    run, decision, how = hostile_run()
    source = render_html(RunReport(run, how, f"title {HOSTILE}"))
    source.encode("utf-8")  # a port's lone surrogate is written as text, never a UnicodeEncodeError
    parsed = Page(source)
    assert parsed.tags.isdisjoint({"script", "img", "link", "iframe", "object", "embed", "base", "form"})
    assert not [name for name, _ in parsed.attributes if name.startswith("on") or name == "src"]
    assert all(value.startswith("#") for name, value in parsed.attributes if name == "href")
    assert "http://" not in source and "https://" not in source and "url(" not in source and "@import" not in source
    shown = "".join(parsed.text)
    assert shown.count(HOSTILE) >= 5  # title, case ids, the reproduce commands, the stories
    assert "\x00" not in source and "<U+0000>" in shown and "<U+000C>" in shown
    assert len(source) < 200_000, "a huge input is cut"
    assert "not fully shrunk" in shown and "its own pieces" in shown and f"refused: {HOSTILE}" in shown
    assert "… and 5 other reason(s), 5 case(s)." in shown  # 25 unsupported reasons, 20 listed
    assert f"fail: {decision.reasons[0]}" in shown and decision.line() in shown

    page = tmp_path / "hostile.html"
    page.write_text(source, encoding="utf-8")
    dom = chromium(tmp_path, page, "--dump-dom")
    assert "<script" not in dom and "<img" not in dom
    assert text(f"port{HOSTILE}") in dom
    for number, cause in enumerate(run.causes, 1):
        assert all(text(case) in section(dom, f"cause-{number}") for case in map(case_id, cause.cases))
    assert text("evil<b>/special/odd&case") in section(dom, "unexplained")
    stories = section(dom, "problems")  # the unexplained failure and the error: each one's story
    assert text("<img src=x onerror=alert(2)>") in stories and text("odd&case") in stories
