"""Fuzz campaigns: a deliberately wrong implementation is found, shrunk and kept as a recording that
gates it; a right one is not flagged; the example database replays a finding first."""

from __future__ import annotations

import io
import os
import tracemalloc
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest
from tokconf.builds.build import Build
from tokconf.cli.main import main
from tokconf.core.files import BUNDLED_RECORDINGS, sha256_file
from tokconf.corpus.files import load_corpus_file
from tokconf.fuzz import Engine
from tokconf.fuzz.campaign import Campaign, CampaignStats
from tokconf.fuzz.database import MAX_ENTRY, HypothesisView, hypothesis_key, open_database
from tokconf.fuzz.findings import Finding
from tokconf.fuzz.report import Progress, summary_lines, write_html
from tokconf.implementations.resolve import resolve
from tokconf.recording.format import load, write


def fuzz(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    status = main(["fuzz", *args])
    captured = capsys.readouterr()
    return status, captured.out


def test_a_wrong_whitespace_class_is_found_shrunk_and_kept_as_a_corpus_case(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    status, out = fuzz(
        capsys, "--impl", "fake_impls:ideographic_space_is_space", "--vocab", "qwen2", "--mode", "plain",
        "--profile", "ci", "--no-db", "--found-dir", str(tmp_path), "--seed", "0",
    )  # fmt: skip
    assert status == 1
    assert "qwen2 [plain] different ids" in out and "(U+3000)" in out
    assert "  llama.cpp: >220 '·'" not in out and "'<U+3000>'" in out  # pieces, whitespace visible
    assert (
        "reproduce: tokconf fuzz --impl fake_impls:ideographic_space_is_space --vocab qwen2 --mode plain --seed 0"
        in out
    )
    assert "1 distinct failures" in out
    found = load(tmp_path / "found-qwen2.yaml")  # a recording: llama.cpp's answers in every mode
    assert [case.data for case in found.cases] == ["\u3000".encode()]  # shrunk to the one character
    recorded = next(c for c in load(BUNDLED_RECORDINGS / "qwen2.yaml").cases if c.data == "\u3000".encode())
    assert found.cases[0].outcomes == recorded.outcomes  # the same answers `tokconf record` got
    assert found.provenance["campaigns"][0]["seed"] == 0
    assert found.provenance["campaigns"][0]["implementation"] == "fake_impls:ideographic_space_is_space"
    assert found.vocab_sha256 == load(BUNDLED_RECORDINGS / "qwen2.yaml").vocab_sha256
    assert 'text: "\\u3000"' in (tmp_path / "found-qwen2.yaml").read_text(encoding="utf-8")  # visible, escaped
    assert "mode plain, seed 0, implementation fake_impls:ideographic_space_is_space" in (found.cases[0].why or "")
    assert list((tmp_path / "cwd").iterdir()) == []  # no stray .hypothesis/ where the campaign ran
    # the finding gates the port at once, and the next `tokconf record` keeps its input
    assert main(["check", "--impl", "fake_impls:ideographic_space_is_space", "--recordings", str(tmp_path)]) == 1
    assert main(["check", "--impl", "reference", "--recordings", str(tmp_path)]) == 0
    corpus = load_corpus_file(tmp_path / "found-qwen2.yaml")
    assert [(c.id, c.data) for c in corpus.cases] == [(found.cases[0].id, "\u3000".encode())]


def test_the_example_database_replays_a_failure_first(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--impl", "fake_impls:ideographic_space_is_space", "--vocab", "gpt-2", "--mode", "special"]
    args += ["--database", str(tmp_path / "db"), "--found-dir", str(tmp_path / "found")]
    status, out = fuzz(capsys, *args)
    assert status == 1 and "(example " in out
    assert any((tmp_path / "db").rglob("*"))
    status, out = fuzz(capsys, *args, "--seed", "5")
    assert status == 1 and "1 distinct failures" in out
    assert "(replayed from the example database as example 1, seed 5)" in out
    assert len(load(tmp_path / "found" / "found-gpt-2.yaml").cases) == 1  # not written twice


def _recorded_by_b11191(path: Path) -> None:
    """The found file as a campaign on b11191 would have written it (an edit by hand is refused as damage)."""
    recording = load(path)
    recording.provenance["llama_cpp"]["build"] = 11191
    write(path, recording, visible=True)


def _cut_short(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-40])


@pytest.mark.parametrize(
    ("spoil", "error"),
    [
        (_recorded_by_b11191, "holds findings recorded by llama.cpp b11191"),
        (_cut_short, "restore it from git or re-record it"),
    ],
    ids=["another-build", "damaged"],
)
def test_a_found_file_of_another_build_or_damaged_is_refused_before_any_work(
    llama_build: Build,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    spoil: Callable[[Path], None],
    error: str,
) -> None:
    args = ["--impl", "fake_impls:ideographic_space_is_space", "--vocab", "gpt-2", "--mode", "plain", "--no-db"]
    assert fuzz(capsys, *args, "--found-dir", str(tmp_path), "--seed", "1")[0] == 1
    path = tmp_path / "found-gpt-2.yaml"
    spoil(path)
    assert main(["fuzz", *args, "--found-dir", str(tmp_path), "--seed", "1"]) == 2
    captured = capsys.readouterr()
    assert "found-gpt-2.yaml" in captured.err and error in captured.err
    assert "gpt-2: 200 examples" not in captured.err and "examples" not in captured.out  # nothing was fuzzed


def test_llama_cpp_against_itself_finds_nothing(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for vocab in ("llama-spm", "bert-bge"):
        status, out = fuzz(
            capsys, "--impl", "llama.cpp@11192", "--vocab", vocab, "--profile", "dev", "--no-db", "--seed", "1",
            "--found-dir", str(tmp_path),
        )  # fmt: skip
        assert status == 0, out
        assert "600 examples" in out and "0 distinct failures" in out
    assert not list(tmp_path.iterdir())


def test_an_unsupported_vocab_is_reported(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = fuzz(
        capsys, "--impl", "fake_impls:bpe_only", "--vocab", "llama-spm", "--no-db", "--found-dir", str(tmp_path)
    )
    assert status == 1  # the contract: nothing in scope
    assert "unsupported: llama-spm: only BPE vocabularies" in out and "1 unsupported vocabs" in out
    assert "fail: nothing in scope: the implementation declined every vocabulary (llama-spm)" in out


def test_a_binding_whose_llama_cpp_refuses_a_vocab_is_said_so(
    llama_build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A LoadRefused carries llama.cpp's reason alone: the campaign says it is a refusal to load, never
    an unworded decline."""
    (tmp_path / "refusing_binding.py").write_text(
        "import tokconf\n\ndef load(path):\n    raise tokconf.LoadRefused(\"unknown pre-tokenizer type: 'x'\")\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    found = tmp_path / "found"
    status, out = fuzz(
        capsys, "--impl", "refusing_binding:load", "--vocab", "llama-spm", "--no-db", "--found-dir", str(found)
    )
    assert status == 1
    assert "unsupported: llama-spm: refused to load it: unknown pre-tokenizer type: 'x'" in out


def test_a_port_declining_every_input_finds_nothing_and_fails(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No divergence is found in a port that tokenizes nothing: the contract fails it all the same."""
    args = ["--impl", "zoo_ports:declines_every_input", "--vocab", "gpt-2", "--mode", "plain", "--max-examples", "40"]
    status, out = fuzz(capsys, *args, "--no-db", "--found-dir", str(tmp_path))
    assert status == 1 and "0 distinct failures" in out
    assert (
        "\nFAIL: 40 unsupported; coverage 0/40 cases in scope (0.00%), 1 vocab x mode — nothing judged in gpt-2 plain\n"
        in out
    )


def test_a_short_campaign_finds_no_divergence_in_the_reference(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CI's campaign: the bundled reference against the live llama.cpp, one vocab of each type it supports."""
    args = ["--impl", "reference", "--profile", "dev", "--seed", "3", "--no-db", "--found-dir", str(tmp_path)]
    for vocab in ("qwen2", "gemma-4", "llama-spm", "bert-bge"):
        args += ["--vocab", vocab]
    status, out = fuzz(capsys, *args)
    assert status == 0, out
    assert "2400 examples" in out and "0 distinct failures" in out
    assert not list(tmp_path.iterdir())


def test_a_campaign_can_be_watched_live_and_reported(llama_build: Build, tmp_path: Path) -> None:
    stream = io.StringIO()
    stats = CampaignStats(seed=2)
    impl = resolve("fake_impls:ideographic_space_is_space", None)
    found: list[Finding] = []
    campaign = Campaign(llama_build, impl, ["plain", "bos"], 1200, open_database(""), stats, found.append,
                        Progress(stream, every=0))  # fmt: skip
    campaign.fuzz_vocab(llama_build.models_dir / "ggml-vocab-gpt-2.gguf")
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 4  # a line per batch here (every=0)
    assert "examples (" in lines[0] and "/s) | gpt-2 [plain]" in lines[0]
    assert "| gpt-2 [bos] 1,200 | findings 2" in lines[-1]
    assert [f.data for f in found] == ["\u3000".encode()] * 2 and stats.examples == 2400
    assert [(v, m, t.examples, t.findings) for (v, m), t in stats.targets.items()] == [
        ("gpt-2", "plain", 1200, 1), ("gpt-2", "bos", 1200, 1)
    ]  # fmt: skip
    assert stats.timeline[-1][1:] == (2400, 2) and stats.timeline == sorted(stats.timeline)
    table = summary_lines(stats)
    assert table[0].split() == [
        "vocab", "mode", "examples", "replayed", "new", "failing", "findings", "unsupported", "skipped"
    ]  # fmt: skip
    assert table[1].split()[:5] == ["gpt-2", "plain", "1,200", "0", "1,200"] and table[1].split()[6] == "1"
    write_html(tmp_path / "r.html", "campaign", stats, ["a finding"])
    report = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert report.count("<polyline") == 2 and "findings (0 to 2)" in report and "<pre>a finding</pre>" in report
    impl.close()


@pytest.mark.parametrize(
    ("impl", "vocab", "mode"),
    [("fake_impls:two_bugs", "llama-spm", "bos"), ("fake_impls:normalizes_nfc", "qwen2", "plain")],
)
def test_the_batch_engine_finds_the_other_planted_bugs(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str], impl: str, vocab: str, mode: str
) -> None:
    args = ["--impl", impl, "--vocab", vocab, "--mode", mode, "--profile", "ci", "--no-db", "--seed", "4"]
    status, out = fuzz(capsys, *args, "--found-dir", str(tmp_path))
    assert status == 1, out
    minimal = [case.data for case in load(tmp_path / f"found-{vocab}.yaml").cases]
    if impl.endswith("two_bugs"):  # the missing BOS shows on the empty input; U+3000 is not in llama-spm's way
        assert b"" in minimal
    else:  # every minimal input is one NFC changes, and ddmin left nothing NFC would not need
        for data in minimal:
            text = data.decode("utf-8")
            assert unicodedata.normalize("NFC", text) != text
            assert all(unicodedata.normalize("NFC", text[:i] + text[i + 1 :]) == text[:i] + text[i + 1 :]
                       or len(text) == 1 for i in range(len(text)))  # fmt: skip


def test_a_poisoned_folder_database_is_replayed_within_its_share_and_the_run_says_so(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One 24 MB entry (it cost 21 s and 730 MB when replay read it whole) and more entries than the
    budget (they left a campaign generating nothing, and exiting 0)."""
    sha = sha256_file(llama_build.models_dir / "ggml-vocab-gpt-2.gguf")
    store = open_database(str(tmp_path / "db"))
    for n in range(300):
        store.keep(sha, "plain", b"entry %03d" % n)
    (folder,) = (f for f in (tmp_path / "db").iterdir() if len(list(f.iterdir())) == 300)
    with (folder / ("0" * 16)).open("wb") as poison:  # named as hypothesis names an entry, and read first
        poison.truncate(24 << 20)  # sparse: 24 MB to a reader, nothing on the disk
    tracemalloc.start()
    replay = store.replay(sha, "plain", 100)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert (len(replay.entries), replay.too_large, replay.beyond_share) == (100, 1, 200)
    assert peak < 16 * MAX_ENTRY  # the 24 MB entry was read no further than its first 64 KiB
    args = ["--impl", "reference", "--vocab", "gpt-2", "--mode", "plain", "--max-examples", "200", "--seed", "3"]
    args += ["--database", str(tmp_path / "db"), "--found-dir", str(tmp_path / "found")]
    status, out = fuzz(capsys, *args, "--report", str(tmp_path / "r.html"))
    assert status == 0, out
    totals = "200 examples (100 replayed, 100 new)"  # at most half the budget replayed
    skipped = "201 database entries skipped (1 over 64 KiB, 200 beyond the replay share)"
    assert totals in out and skipped in out
    assert ["gpt-2", "plain", "200", "100", "100", "0", "0", "0", "201"] in [line.split() for line in out.splitlines()]
    report = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert totals in report and skipped in report and "<th>new</th>" in report and "<th>skipped</th>" in report


def test_a_shared_layer_is_read_under_the_local_one_and_never_written(tmp_path: Path) -> None:
    local, shared = str(tmp_path / "local"), str(tmp_path / "shared")
    for where, entries in ((local, [b"b", b"c"]), (shared, [b"a", b"b"])):
        for data in entries:
            open_database(where).keep("0" * 64, "bos", data)
    layered = open_database(local, shared)
    layered.keep("0" * 64, "bos", b"d")
    replay = layered.replay("0" * 64, "bos", 10)
    assert sorted(replay.entries) == [b"a", b"b", b"c", b"d"]  # b, held by both, is replayed once
    assert (replay.too_large, replay.beyond_share) == (0, 0)
    assert sorted(open_database(shared).replay("0" * 64, "bos", 10).entries) == [b"a", b"b"]
    share = layered.replay("0" * 64, "bos", 3)
    assert (len(share.entries), share.beyond_share) == (3, 2)  # the local layer spent it: the shared one is left


def _described(out: str) -> list[str]:
    """A finding's report lines, from its first line to its reproduce line."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if " different ids (" in line)
    return lines[start : start + 5]


def test_the_hypothesis_engine_finds_shrinks_and_reports_as_the_default_engine_does(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    args = ["--impl", "fake_impls:ideographic_space_is_space", "--vocab", "qwen2", "--mode", "plain", "--no-db"]
    args += ["--max-examples", "300", "--seed", "0"]
    outs = {}
    for engine in Engine:
        status, outs[engine] = fuzz(capsys, *args, "--engine", engine, "--found-dir", str(tmp_path / engine))
        assert status == 1, outs[engine]
        assert "300 examples (0 replayed, 300 new)" in outs[engine] and "1 distinct failures" in outs[engine]
    ours, theirs = (load(tmp_path / engine / "found-qwen2.yaml") for engine in (Engine.HYPOTHESIS, Engine.TOKCONF))
    assert [c.data for c in ours.cases] == ["\u3000".encode()]  # shrunk to the one character
    assert [(c.id, c.outcomes) for c in ours.cases] == [(c.id, c.outcomes) for c in theirs.cases]
    assert ours.provenance["campaigns"] == theirs.provenance["campaigns"]
    head, *body, reproduce = _described(outs[Engine.HYPOTHESIS])
    assert head.startswith("qwen2 [plain] different ids (example ") and head.endswith(", seed 0)")
    assert body == _described(outs[Engine.TOKCONF])[1:-1]  # input, both answers' pieces, the gate command
    assert reproduce == (
        "  reproduce: tokconf fuzz --impl fake_impls:ideographic_space_is_space --vocab qwen2 --mode plain "
        "--engine hypothesis --no-db --seed 0"
    )
    assert list((tmp_path / "cwd").iterdir()) == []  # hypothesis's caches went to tokconf's, not to .hypothesis/
    status, again = fuzz(capsys, *args, "--engine", "hypothesis", "--found-dir", str(tmp_path / "again"))
    assert _described(again)[0] == head  # seeded: the same example finds it again


def test_the_engines_share_the_example_database(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Over a database hypothesis draws from its own randomness (a seed turns its database off), so the
    planted bug is one every example reaches (`fake_impls.OneIdTooMany`, found at the first example and
    shrunk to the empty input): what is asserted is what the database keeps, whatever the draw."""
    args = ["--impl", "fake_impls:one_id_too_many", "--vocab", "gpt-2", "--mode", "special"]
    args += ["--max-examples", "200", "--database", str(tmp_path / "db"), "--found-dir", str(tmp_path / "found")]
    status, out = fuzz(capsys, *args, "--engine", "hypothesis", "--seed", "1")
    assert status == 1 and "200 examples (0 replayed, 200 new)" in out and "1 distinct failures" in out
    # over a database hypothesis draws from its own randomness: the database reproduces the finding
    assert "--mode special --engine hypothesis   (replayed first from the example database)" in out
    sha = sha256_file(llama_build.models_dir / "ggml-vocab-gpt-2.gguf")
    store = open_database(str(tmp_path / "db"))
    assert store.replay(sha, "special", 10).entries == {b""}  # the input, for either engine
    assert HypothesisView(store).fetch(hypothesis_key(sha, "special"))  # hypothesis's own entry
    status, out = fuzz(capsys, *args, "--seed", "2")  # the default engine replays it first
    assert status == 1 and "(replayed from the example database as example 1, seed 2)" in out
    status, out = fuzz(capsys, *args, "--engine", "hypothesis", "--seed", "3")
    assert status == 1 and "(replayed from the example database as example 1, seed 3)" in out
    assert "200 examples (2 replayed, 198 new)" in out  # the input, then hypothesis's entry
    assert HypothesisView(store).fetch(hypothesis_key(sha, "special"))  # kept: it still fails
    assert len(load(tmp_path / "found" / "found-gpt-2.yaml").cases) == 1


def test_the_hypothesis_engine_finds_nothing_in_llama_cpp_against_itself(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--impl", "llama.cpp@11192", "--vocab", "llama-spm", "--max-examples", "100", "--no-db", "--seed", "1"]
    status, out = fuzz(capsys, *args, "--engine", "hypothesis", "--found-dir", str(tmp_path))
    assert status == 0, out
    assert "300 examples (0 replayed, 300 new)" in out and "0 distinct failures" in out
    assert not list(tmp_path.iterdir())
