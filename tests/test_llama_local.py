"""`--impl llama.cpp:PATH` and `tokconf record --llama PATH`: a llama.cpp of the user's own, a source
tree built in the cache by its content or a libllama.so as it is, checked, fuzzed and recorded with,
its provenance said, and every way it can be unusable an error.

The patched tree is a copy of the pinned source with one tokenizer line changed, as a vendored copy
or a contributor's branch would be: built once per machine (minutes the first time; ccache and the
content-keyed cache make it seconds after), so every session after the first finds it built.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import tokconf
from tokconf.builds import build as build_module
from tokconf.builds.build import MARKER, Build, collect_garbage, library_folder
from tokconf.builds.fetch import builds_root, local_root, source_dir
from tokconf.builds.local import BUILD_INPUTS, _snapshot, local_build, tree_key
from tokconf.builds.pins import DEFAULT_BUILD
from tokconf.checking.contract import Verdict
from tokconf.checking.engine import DECODE, FACTS
from tokconf.cli.main import main
from tokconf.core.errors import TokconfError
from tokconf.core.files import sha256_file
from tokconf.implementations.llama_cpp import LlamaCppImplementation
from tokconf.implementations.resolve import resolve
from tokconf.oracles.probe import probe_library
from tokconf.recording.decoding import load as load_decoding
from tokconf.recording.decoding import path_for as decoding_path
from tokconf.recording.decoding_recorder import recording_build
from tokconf.recording.format import load

ROOT = Path(__file__).resolve().parent.parent
QWEN2 = ROOT / "recordings" / "b11192" / "qwen2.yaml"

# llm_bigram_bpe::comparator (src/llama-vocab.cpp): of two merges of equal rank the leftmost goes first,
# as in the reference BPE; the patch takes the rightmost, so a run of three equal symbols whose pair
# merges ("   ", "\n\n\n") ends as one symbol and a pair, not a pair and one symbol.
COMPARATOR = "return l.rank > r.rank || (l.rank == r.rank && l.left > r.left);"
PATCHED = "return l.rank > r.rank || (l.rank == r.rank && l.left < r.left);"
GIT = ["git", "-c", "user.name=tokconf", "-c", "user.email=tokconf@example.invalid", "-c", "commit.gpgsign=false"]


@pytest.fixture(scope="session")
def patched_tree(llama_build: Build, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the pinned source in a git checkout, its BPE tie-break changed and not committed
    (docs and models/ left out: they are no build input)."""
    tree = tmp_path_factory.mktemp("patched") / "llama.cpp"
    pinned = source_dir(DEFAULT_BUILD)
    shutil.copytree(
        pinned, tree, ignore=lambda folder, names: ["docs", "models", "media"] if folder == str(pinned) else []
    )
    subprocess.run([*GIT, "init", "-q", str(tree)], check=True)
    subprocess.run([*GIT, "-C", str(tree), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(tree), "commit", "-q", "-m", "b11192"], check=True)
    vocab_cpp = tree / "src" / "llama-vocab.cpp"
    text = vocab_cpp.read_text(encoding="utf-8")
    assert text.count(COMPARATOR) == 1
    vocab_cpp.write_text(text.replace(COMPARATOR, PATCHED), encoding="utf-8")
    return tree


@pytest.fixture(scope="session")
def patched(patched_tree: Path) -> LlamaCppImplementation:
    """The patched tree, built in the cache (once per machine: its content names it)."""
    impl = resolve(f"llama.cpp:{patched_tree}", None)
    assert isinstance(impl, LlamaCppImplementation)
    return impl


def _head(tree: Path) -> str:
    return subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


def test_a_patched_tree_fails_on_the_cases_its_patch_changes(
    patched: LlamaCppImplementation, patched_tree: Path
) -> None:
    run = tokconf.check(f"llama.cpp:{patched_tree}", QWEN2)
    assert not run.decision.passed and run.decision.exit_status == 1
    failed = {(r.case, r.section): r for r in run.results if r.verdict is Verdict.FAILED}
    for mode in ("plain", "special", "bos"):
        spaces, newlines = failed[("llama.cpp/0005", mode)], failed[("llama.cpp/0009", mode)]
        assert (spaces.data, spaces.expected, spaces.actual) == (b"   ", [262], [220, 256])  # '···' -> '·', '··'
        assert (newlines.data, newlines.expected, newlines.actual) == (b"\n\n\n", [1406], [198, 271])
    assert ("edge/hello-world", "plain") not in failed
    # cases alone, never facts or decoding: the vocabulary reads the same
    assert not [r for r in run.results if r.section in (FACTS, DECODE) and r.verdict is not Verdict.PASSED]
    assert not [r for r in run.results if r.verdict is Verdict.ERROR]
    assert len(failed) == 319  # measured: 109 plain, 105 special, 105 bos
    source = patched.build.source
    assert run.impl_name.startswith(f"llama.cpp:{patched_tree} (libllama sha256 {source.sha256}, ")
    assert f"git {_head(patched_tree)} dirty" in run.impl_name


def test_the_pinned_library_given_as_a_file_passes(llama_full_build: Build) -> None:
    run = tokconf.check(f"llama.cpp:{llama_full_build.libllama}", QWEN2)
    assert run.decision.passed
    assert run.summary.problems == [] and len(run.results) > 12_000
    assert f"libllama sha256 {sha256_file(llama_full_build.libllama)}" in run.impl_name
    assert "llama_version 0.5.0-dev, build info b11192-unknown, built with GNU" in run.impl_name


def test_the_provenance_of_a_library(llama_full_build: Build) -> None:
    impl = resolve(f"llama.cpp:{llama_full_build.libllama}", None)
    assert isinstance(impl, LlamaCppImplementation) and impl.library is not None
    source, real = impl.build.source, llama_full_build.libllama.resolve()
    assert (source.kind, source.origin, source.build) == (
        "local-library",
        str(llama_full_build.libllama),
        DEFAULT_BUILD,
    )
    assert (source.sha256, source.library) == (sha256_file(real), str(real))
    assert source.header == str(llama_full_build.llama_h)  # its build folder's CMakeCache.txt names the tree
    assert (source.commit, source.dirty, source.content) == (None, None, None)  # the cache is no git checkout
    assert impl.library.version == "0.5.0-dev"  # llama_version()
    assert impl.library.build_info is not None and impl.library.build_info.startswith("b11192-unknown, built with ")
    assert impl.library.system_info is not None and impl.library.system_info.startswith("CPU : ")


def test_a_library_without_its_tree_is_bound_with_the_pinned_header(llama_full_build: Build, tmp_path: Path) -> None:
    alone = tmp_path / "lib" / "libllama.so"  # its RUNPATH still finds the libggml*.so it was built with
    alone.parent.mkdir()
    shutil.copy(llama_full_build.libllama, alone)
    made = local_build(alone)
    assert made.source.header == f"b{DEFAULT_BUILD}'s (no llama.h found beside the library)"
    assert made.llama_h == llama_full_build.llama_h and made.source.sha256 == sha256_file(llama_full_build.libllama)
    assert probe_library(made).version == "0.5.0-dev"


def test_the_patched_build_is_cached_by_content(
    patched: LlamaCppImplementation, patched_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = patched.build.source
    assert source.content == tree_key(patched_tree) and source.kind == "local-tree"
    marker = library_folder(local_root(source.content)) / MARKER  # a tree is built tokenizer-only
    stamp = marker.stat().st_mtime_ns

    def rebuilt(*args: object) -> None:
        raise AssertionError("rebuilt")

    monkeypatch.setattr(build_module, "compile_tree", rebuilt)
    monkeypatch.setattr(build_module, "compile_library", rebuilt)
    (patched_tree / "README.md").write_text("not a build input\n", encoding="utf-8")
    again = local_build(patched_tree)
    assert again == patched.build and marker.stat().st_mtime_ns == stamp
    header = patched_tree / "include" / "llama.h"
    edited = header.read_text(encoding="utf-8")
    header.write_text(edited + "\n", encoding="utf-8")
    try:
        assert tree_key(patched_tree) != source.content  # a build input changed: another build
    finally:
        header.write_text(edited, encoding="utf-8")
    assert tree_key(patched_tree) == source.content


FAKE_CMAKE = """cmake_minimum_required(VERSION 3.14)
if(EXISTS "${CMAKE_SOURCE_DIR}/src/break")
    message(FATAL_ERROR "tokconf test: this tree does not configure")
endif()
project(fake C)
set(CMAKE_LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
add_library(llama SHARED src/fake.c)
"""


def _fake_tree(tmp_path: Path) -> Path:
    """A tree that is not llama.cpp at all, fast to build: its libllama exports none of llama.h."""
    tree = tmp_path / "fake"
    (tree / "src").mkdir(parents=True)
    (tree / "include").mkdir()
    (tree / "include" / "llama.h").write_text("int fake(void);\n", encoding="utf-8")
    (tree / "src" / "fake.c").write_text("int fake(void) { return 0; }\n", encoding="utf-8")
    (tree / "CMakeLists.txt").write_text(FAKE_CMAKE, encoding="utf-8")
    return tree


def test_a_failing_build_shows_its_log_and_resumes_and_a_non_libllama_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tree that is not llama.cpp at all, fast to build: its libllama exports none of llama.h."""
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path / "cache"))
    tree = _fake_tree(tmp_path)
    (tree / "src" / "break").write_text("", encoding="utf-8")  # src/ is a build input, hence in the snapshot
    with pytest.raises(TokconfError) as failed:
        local_build(tree)
    root = local_root(tree_key(tree))
    message = str(failed.value)
    assert f"building llama.cpp at {tree} failed at `cmake -S {root / 'src'}`" in message
    assert f"(log: {root / 'build.log'})" in message and "this tree does not configure" in message
    assert f"`tokconf llama local {tree}` resumes" in message
    assert not (root / "build" / MARKER).exists()
    (tree / "src" / "break").unlink()  # fixed: another content, another build
    made = local_build(tree)
    assert (root.parent / tree_key(tree) / "build" / MARKER).is_file() and made.libllama.is_file()
    with pytest.raises(TokconfError, match=r"cannot be the oracle: it does not export llama_backend_init") as refused:
        resolve(f"llama.cpp:{tree}", None)
    assert "give the libllama.so of a llama.cpp build" in str(refused.value)


def test_a_fork_without_the_llama_vocab_api_is_told_to_use_an_adapter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A libllama that keeps the model-pointer calls (`llama_tokenize(model, …)`, as forks bundled by
    Python packages do) but has none of the llama_vocab API: told to check it through a `cmd:` adapter
    declaring `llama_cpp`, not to give another library (it is the libllama)."""
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path / "cache"))
    tree = _fake_tree(tmp_path)
    kept = ("llama_backend_init", "llama_model_default_params", "llama_tokenize", "llama_token_to_piece")
    (tree / "include" / "llama.h").write_text("".join(f"void {name}(void);\n" for name in kept), encoding="utf-8")
    (tree / "src" / "fake.c").write_text("".join(f"void {name}(void) {{}}\n" for name in kept), encoding="utf-8")
    local_build(tree)
    with pytest.raises(TokconfError, match=r"cannot be the oracle: it does not export llama_model_load") as refused:
        resolve(f"llama.cpp:{tree}", None)
    assert "this libllama has no llama_vocab API" in str(refused.value)
    assert "a `cmd:` adapter that calls it" in str(refused.value)


def test_an_interrupted_build_resumes_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path / "cache"))
    tree = _fake_tree(tmp_path)
    made = local_build(tree)
    root = local_root(tree_key(tree))
    snapshot = (root / "src" / "src" / "fake.c").stat().st_ino
    (root / "build" / MARKER).unlink()  # as a build stopped half way leaves it
    again = local_build(tree)
    assert again.libllama == made.libllama and (root / "build" / MARKER).is_file()
    assert (root / "src" / "src" / "fake.c").stat().st_ino == snapshot  # the same snapshot, built on


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("llama.cpp:", r"expected llama.cpp:PATH"),
        ("llama.cpp:/no/such/llama.cpp", r"llama.cpp at /no/such/llama.cpp: no such file or folder"),
    ],
)
def test_a_path_that_is_not_there_is_an_error(spec: str, error: str) -> None:
    with pytest.raises(TokconfError, match=error):
        resolve(spec, None)


def test_a_folder_that_is_not_a_tree_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TokconfError, match=r"is not a llama.cpp source tree") as plain:
        resolve(f"llama.cpp:{tmp_path}", None)
    assert "give the root of a llama.cpp source tree, or a built libllama.so" in str(plain.value)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "libllama.so").write_bytes(b"")
    with pytest.raises(TokconfError, match=rf"to use the library built there, give it: {tmp_path}/bin/libllama.so"):
        resolve(f"llama.cpp:{tmp_path}", None)


def test_a_library_that_does_not_load_is_an_error(llama_full_build: Build, tmp_path: Path) -> None:
    """Another architecture (the ELF class byte says 32-bit), a file that is no library, another library
    of llama.cpp's: each refused before any vocabulary, never taken for llama.cpp refusing one."""
    other_arch = tmp_path / "libllama.so"
    data = bytearray(llama_full_build.libllama.read_bytes())
    data[4] = 1  # EI_CLASS: ELFCLASS32
    other_arch.write_bytes(bytes(data))
    with pytest.raises(TokconfError, match=r"cannot be the oracle: it does not load: .*wrong ELF class") as wrong:
        resolve(f"llama.cpp:{other_arch}", None)
    assert "built for this machine" in str(wrong.value)
    text = tmp_path / "notes.txt"
    text.write_text("not a library\n" * 100, encoding="utf-8")
    with pytest.raises(TokconfError, match=r"cannot be the oracle: it does not load: .*invalid ELF header"):
        resolve(f"llama.cpp:{text}", None)
    ggml = llama_full_build.libllama.parent / "libggml-base.so"
    with pytest.raises(TokconfError, match=r"cannot be the oracle: it does not export llama_backend_init"):
        resolve(f"llama.cpp:{ggml}", None)


def test_record_with_a_local_library_says_which_library_answered(
    llama_full_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "t.yaml"
    hello = "  - {id: hello, text: Hello world, why: canonical}\n"
    corpus.write_text(f"theme: t\ndescription: d\ncases:\n{hello}", encoding="utf-8")
    out = tmp_path / "out"
    args = ["record", "--llama", str(llama_full_build.libllama), "--vocab", "bert-bge", "--corpus", str(corpus)]
    assert main([*args, "--fuzz-count", "3", "--out", str(out), "--jobs", "1"]) == 0
    recording = load(out / "bert-bge.yaml")
    recorded = recording.provenance["llama_cpp"]
    real = llama_full_build.libllama.resolve()
    assert recorded == {
        "build": DEFAULT_BUILD,
        "source": "local-library",
        "origin": str(llama_full_build.libllama),
        "sha256": sha256_file(real),
        "commit": None,
        "dirty": None,
        "content": None,
        "library": str(real),
        "header": str(llama_full_build.llama_h),
        "version": "0.5.0-dev",
        "build_info": recorded["build_info"],
        "system_info": recorded["system_info"],
    }
    assert str(recorded["build_info"]).startswith("b11192-unknown") and str(recorded["system_info"]).startswith("CPU")
    bundled = {c.id: c.outcomes for c in load(ROOT / "recordings" / "b11192" / "bert-bge.yaml").cases}
    assert all(bundled[c.id] == c.outcomes for c in recording.cases if c.id in bundled)  # the same library
    decoding = load_decoding(decoding_path(out / "bert-bge.yaml"))
    assert decoding.provenance["llama_cpp"] == recorded
    assert recording_build(recording.provenance["llama_cpp"]).libllama == real  # found again for record-decoding
    with pytest.raises(TokconfError, match=r"made with the libllama of sha256 0{64} .* which is now"):
        recording_build({**recording.provenance["llama_cpp"], "sha256": "0" * 64})


def test_fuzzing_the_patched_tree_finds_the_tie_break(
    patched: LlamaCppImplementation, patched_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["fuzz", "--impl", f"llama.cpp:{patched_tree}", "--vocab", "qwen2", "--mode", "plain", "--profile", "dev"]
    assert main([*args, "--no-db", "--seed", "1", "--found-dir", str(tmp_path)]) == 1
    found = load(tmp_path / "found-qwen2.yaml")
    assert found.provenance["campaigns"][0]["implementation"].startswith(f"llama.cpp:{patched_tree} (libllama sha256")
    capsys.readouterr()


def test_llama_local_prints_the_provenance(llama_full_build: Build, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["llama", "local", str(llama_full_build.libllama)]) == 0
    out = capsys.readouterr().out
    assert f"libllama:  {llama_full_build.libllama.resolve()}" in out
    assert "version:   0.5.0-dev" in out and "build:     b11192-unknown" in out


def test_gc_deletes_local_builds_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path))
    (builds_root() / "local" / "k" / "build").mkdir(parents=True)
    (builds_root() / "local" / "k" / "build" / "libllama.so").write_bytes(b"x" * 100)
    assert collect_garbage(0, set()) == [("local k", 100)]


def test_the_content_key_covers_the_build_inputs_alone(tmp_path: Path) -> None:
    for name in ("CMakeLists.txt", "src/a.cpp", "docs/x.md", "models/v.gguf", "build/bin/libllama.so"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name, encoding="utf-8")
    key = tree_key(tmp_path)
    for outside in ("docs/x.md", "models/v.gguf", "build/bin/libllama.so"):
        (tmp_path / outside).write_text("changed", encoding="utf-8")
    assert tree_key(tmp_path) == key
    (tmp_path / "src" / "a.cpp").chmod(0o755)
    assert tree_key(tmp_path) != key
    assert {"src", "include", "ggml", "CMakeLists.txt", "cmake"} <= set(BUILD_INPUTS)


def test_a_linked_top_level_input_is_followed(tmp_path: Path) -> None:
    """A vendored tree whose ggml/ is a link to a shared one is keyed, and built, as if it were there."""
    for tree in ("plain", "linked"):
        (tmp_path / tree).mkdir()
        (tmp_path / tree / "CMakeLists.txt").write_text("x", encoding="utf-8")
    (tmp_path / "plain" / "ggml").mkdir()
    (tmp_path / "plain" / "ggml" / "ggml.c").write_text("int x;", encoding="utf-8")
    (tmp_path / "linked" / "ggml").symlink_to(tmp_path / "plain" / "ggml")
    assert tree_key(tmp_path / "linked") == tree_key(tmp_path / "plain")


def test_a_link_inside_the_inputs_is_keyed_and_copied_as_its_target(tmp_path: Path) -> None:
    """src/llama-vocab.cpp as a link to a patch kept elsewhere: the key hashed the link's text, so an edit
    at its target kept the old key and the old library (a stale verdict), and the snapshot kept a live
    link (a relative one dangled). Now a link is its target's content, in the key and in the snapshot."""
    tree = tmp_path / "tree"
    (tree / "src").mkdir(parents=True)
    (tree / "CMakeLists.txt").write_text("x", encoding="utf-8")
    patches = tmp_path / "patches"
    patches.mkdir()
    (patches / "llama-vocab.cpp").write_text("int a;", encoding="utf-8")
    (tree / "src" / "llama-vocab.cpp").symlink_to("../../patches/llama-vocab.cpp")
    copy = tmp_path / "copy"
    (copy / "src").mkdir(parents=True)
    (copy / "CMakeLists.txt").write_text("x", encoding="utf-8")
    (copy / "src" / "llama-vocab.cpp").write_text("int a;", encoding="utf-8")
    key = tree_key(tree)
    assert key == tree_key(copy)
    (patches / "llama-vocab.cpp").write_text("int b;", encoding="utf-8")
    assert tree_key(tree) != key
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    _snapshot(tree, snapshot / "src", tree_key(tree))
    copied = snapshot / "src" / "src" / "llama-vocab.cpp"
    assert not copied.is_symlink() and copied.read_text(encoding="utf-8") == "int b;"
    (tree / "src" / "gone.h").symlink_to(tmp_path / "nowhere.h")
    with pytest.raises(TokconfError, match=r"gone\.h is a link that points nowhere"):
        tree_key(tree)
    (tree / "src" / "gone.h").unlink()
    (tree / "src" / "loop").symlink_to(tree / "src")
    with pytest.raises(TokconfError, match="loop links to a folder it is in"):
        tree_key(tree)
