"""`tokconf identify`: which published builds tokenize exactly like an implementation.

On fakes: a history made by `tokconf upgrade` on fake builds, and implementations answering like one
stretch of them, or like none. On real llama.cpp: the pinned build's own libllama is placed in its
stretch of the bundled history (made from real builds b9093..b11434) and not in its neighbours across
a change point, and a tree patched in one line of its tokenizer matches no published build, its
differences listed."""

from __future__ import annotations

import dataclasses
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import fake_history
import pytest
from builds import tokenizer_build
from fake_history import ONLY_EMPTY, small_qwen2
from tokconf.builds.build import Build
from tokconf.builds.fetch import source_dir
from tokconf.builds.pins import DEFAULT_BUILD
from tokconf.cli.main import main
from tokconf.core.errors import TokconfError
from tokconf.core.files import BUNDLED_RECORDINGS, cache_root
from tokconf.core.outcome import Refusal
from tokconf.history import data
from tokconf.history.bisect.probe import ProbeSet
from tokconf.history.data import History
from tokconf.history.identify import Identification, identify
from tokconf.implementations.llama_cpp import LlamaCppImplementation
from tokconf.implementations.resolve import resolve
from tokconf.recording.decoding import Decoding, load_for
from tokconf.recording.format import Recording, load, recording_files


@pytest.fixture(scope="module")
def history_of_fakes(llama_build: Build, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The history of fake builds b11192..b11197 (stretches b11192, b11194..b11195, b11196..b11197),
    made once; the fakes are undone after, so no other test sees them."""
    tmp_path = tmp_path_factory.mktemp("fakes")
    with pytest.MonkeyPatch.context() as monkeypatch:
        fake_history.install(llama_build, monkeypatch, tmp_path)
        kept = tmp_path / "history.json.gz"
        small = small_qwen2(tmp_path / "small")
        args = ["upgrade", "--to", "11197", "--recordings", str(small), "--lock", str(tmp_path / "l")]
        assert main([*args, "-o", str(tmp_path / "report.md"), "--data", str(kept)]) == 0
    return kept


@pytest.fixture
def fake_history_file(
    history_of_fakes: Path, llama_build: Build, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Path:
    """That history, with the fake builds in place for this test (they answer by build number)."""
    fake_history.install(llama_build, monkeypatch, tmp_path)
    return history_of_fakes


def _small(history_file: Path) -> Path:
    """The cut qwen2 recording the fake history was made from."""
    return history_file.parent / "small" / "qwen2.yaml"


def _identify(llama_build: Build, number: int, history_file: Path, history: History | None = None) -> Identification:
    history = history or data.read(history_file)
    recordings = [load(_small(history_file))]
    probes = ProbeSet.from_recordings(recordings, frozenset(), None)
    impl = LlamaCppImplementation(dataclasses.replace(llama_build, build=number), f"fake b{number}")
    return identify(impl, history, recordings, probes, {"qwen2": load_for(_small(history_file))})


def test_each_fake_build_is_placed_in_its_stretch(llama_build: Build, fake_history_file: Path) -> None:
    spans = {}
    for number in (11192, 11195, 11197):
        found = _identify(llama_build, number, fake_history_file)
        spans[number] = [(first.first, last.last) for first, last in found.ranges]
    assert spans == {11192: [(11192, 11192)], 11195: [(11194, 11195)], 11197: [(11196, 11197)]}
    found = _identify(llama_build, 11195, fake_history_file)
    # hello world, then the empty input: each 2 cases x (3 modes and 2 detokenize settings)
    assert found.mismatches == [10, 0, 10]
    assert {case for _, case, _ in found.versus(None)} == {"edge/hello-world", "llama.cpp/0011"}


def test_an_implementation_like_no_build_is_told_so_with_its_nearest(
    llama_build: Build, fake_history_file: Path
) -> None:
    found = _identify(llama_build, ONLY_EMPTY, fake_history_file)  # the empty input's change alone
    assert found.ranges == []
    assert found.mismatches == [10, 20, 10]
    assert (found.nearest.first, found.nearest.last) == (11196, 11197)  # the later of the two as near
    assert {case for _, case, _ in found.versus(None)} == {"edge/empty", "llama.cpp/0002"}


def test_identify_on_the_command_line(
    llama_build: Build, fake_history_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tokconf.implementations import resolve as resolve_module

    def fake(spec: str, *_: object, **__: object) -> LlamaCppImplementation:
        number = int(spec.removeprefix("llama.cpp@"))
        return LlamaCppImplementation(dataclasses.replace(llama_build, build=number), spec)

    monkeypatch.setattr(resolve_module, "resolve", fake)
    args = ["identify", "--data", str(fake_history_file), "--recordings", str(_small(fake_history_file))]
    assert main([*args, "--impl", "llama.cpp@11194"]) == 0
    assert "tokenizes exactly like: b11194..b11195 (2 published builds)" in capsys.readouterr().out
    assert main([*args, "--impl", f"llama.cpp@{ONLY_EMPTY}"]) == 1
    out = capsys.readouterr().out
    assert "no published build in b11192..b11197 tokenizes exactly like it" in out
    assert "against the pinned build b11192 (its recordings): 10 answers differ" in out


def test_a_history_of_other_recordings_is_refused(llama_build: Build, fake_history_file: Path) -> None:
    """Another vocab file, other inputs under the same case ids (another corpus or fuzz seed), or a
    decoding the history's builds were not asked: refused, never matched against stored answers of
    other inputs."""
    history = data.read(fake_history_file)
    other_file = dataclasses.replace(history.made_from, vocabs={"qwen2": "0" * 64})
    with pytest.raises(TokconfError, match="made from other recordings: qwen2's vocab file is not the one"):
        _identify(llama_build, 11192, fake_history_file, dataclasses.replace(history, made_from=other_file))
    other_vocabs = dataclasses.replace(history.made_from, vocabs={"gpt-2": "0" * 64})
    with pytest.raises(TokconfError, match="other recordings: it holds no answers for qwen2"):
        _identify(llama_build, 11192, fake_history_file, dataclasses.replace(history, made_from=other_vocabs))
    no_decoding = dataclasses.replace(history.made_from, decoded=frozenset())
    with pytest.raises(TokconfError, match="qwen2 has a decoding file, but the history's builds were not asked"):
        _identify(llama_build, 11192, fake_history_file, dataclasses.replace(history, made_from=no_decoding))
    recording = load(_small(fake_history_file))
    first, second = recording.cases[0], recording.cases[1]  # their inputs exchanged, the ids kept
    recording.cases[0], recording.cases[1] = (
        dataclasses.replace(first, data=second.data, outcomes=second.outcomes),
        dataclasses.replace(second, data=first.data, outcomes=first.outcomes),
    )
    probes = ProbeSet.from_recordings([recording], frozenset(), None)
    impl = LlamaCppImplementation(llama_build, "b11192")
    with pytest.raises(TokconfError, match="qwen2's cases \\(ids and inputs\\) are not the ones"):
        identify(impl, history, [recording], probes, {})


def _bundled(names: set[str]) -> list[tuple[Recording, Decoding | None]]:
    return [(load(p), load_for(p)) for p in recording_files([BUNDLED_RECORDINGS]) if p.stem in names]


def _identify_real(spec: str, bundled: list[tuple[Recording, Decoding | None]], history: History) -> Identification:
    impl = resolve(spec)
    recordings = [recording for recording, _ in bundled]
    decodings = {recording.vocab_name: decoding for recording, decoding in bundled}
    try:
        probes = ProbeSet.from_recordings(recordings, frozenset(), None)
        return identify(impl, history, recordings, probes, decodings)
    finally:
        impl.close()


def test_the_pinned_library_is_placed_between_its_change_points(llama_build: Build) -> None:
    """The bundled history's stretch holding b11192, asked on the vocabularies whose changes bound it:
    the answer holds b11192 and neither neighbour across those change points."""
    history = data.read()
    index = next(i for i, s in enumerate(history.stretches) if s.first <= DEFAULT_BUILD <= s.last)
    stretch = history.stretches[index]
    bounding = [i for i in (index - 1, index + 1) if 0 <= i < len(history.stretches)]
    assert bounding, "the bundled history has a change point next to the pinned build"
    vocabs = {vocab for vocab, _, _ in _changed_between(history, index, bounding)}
    found = _identify_real(f"llama.cpp:{llama_build.libllama}", _bundled(vocabs), history)
    assert [(first.first, last.last) for first, last in found.ranges] == [(stretch.first, stretch.last)]
    assert not found.versus(None)  # answers as its own recordings do
    for neighbour in bounding:
        assert found.mismatches[neighbour] > 0


X86_64 = platform.machine().lower() in ("x86_64", "amd64") and sys.maxsize > 2**32


@pytest.mark.skipif(not X86_64, reason="llama_model_params is measured in a 64-bit x86-64 process only")
def test_a_library_bound_with_another_versions_header_is_refused_and_placed_with_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """b9093's libllama alone in a folder is bound with the pinned build's llama.h, whose
    llama_model_params has 80 bytes where b9093's has 72: every vocabulary then failed to load, and
    identify placed it in no published build. It is refused before any vocabulary, naming both sizes.
    In an install prefix with its own headers it is placed in b9093's stretch, and a vocabulary b11192
    loads but b9093 refuses is one line saying so. b11434's library alone (the pinned struct) binds, and
    the vocabulary b11192 refuses but it loads is one line the other way round."""
    old = tokenizer_build(9093)
    alone = tmp_path / "alone" / "libllama.so"
    alone.parent.mkdir()
    shutil.copy2(old.libllama, alone)
    said = r"cannot be the oracle: its llama_model_default_params\(\) ends its llama_model_params at byte 72 "
    with pytest.raises(TokconfError, match=said + r"\(padding aside\), where the llama.h .*/b11192/.* of 80 bytes"):
        resolve(f"llama.cpp:{alone}", None)
    assert main(["identify", "--impl", f"llama.cpp:{alone}", "--vocab", "gpt-2"]) == 2
    assert "give its llama.cpp source tree instead" in capsys.readouterr().err
    prefix = tmp_path / "prefix"
    (prefix / "lib").mkdir(parents=True)
    shutil.copy2(old.libllama, prefix / "lib" / "libllama.so")
    for folder in old.include_dirs:
        shutil.copytree(folder, prefix / "include", dirs_exist_ok=True)
    history = data.read()
    index = next(i for i, s in enumerate(history.stretches) if s.first <= 9093 <= s.last)
    stretch = history.stretches[index]
    vocabs = {vocab for vocab, _, _ in _changed_between(history, index, [index + 1])} | {"pre-hy_v4", "llama-spm"}
    asked = [arg for vocab in sorted(vocabs) for arg in ("--vocab", vocab)]
    assert main(["identify", "--impl", f"llama.cpp:{prefix / 'lib' / 'libllama.so'}", *asked]) == 0
    out = capsys.readouterr().out
    assert f"  tokenizes exactly like: b{stretch.first}..b{stretch.last} (" in out
    lines = [line.strip() for line in out.splitlines()]
    assert (
        "pre-hy_v4: it refuses to load it (unknown pre-tokenizer type: 'hy_v4'), b11192 loads it: 2493 answers" in lines
    )
    assert "refused: load:" not in out  # no sample line repeats the refusal
    found = _identify_real(f"llama.cpp:{prefix / 'lib' / 'libllama.so'}", _bundled({"llama-spm"}), history)
    assert sum(isinstance(answer, list) for answer in found.answers.values()) > 1000  # it loaded and tokenized
    newer = tmp_path / "newer" / "libllama.so"
    newer.parent.mkdir()
    shutil.copy2(tokenizer_build(11434).libllama, newer)
    main(["identify", "--impl", f"llama.cpp:{newer}", "--vocab", "pre-glm5"])
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    assert (
        "pre-glm5: b11192 refuses to load it (unknown pre-tokenizer type: 'glm5'), it loads it: 2418 answers" in lines
    )


BREAKS_ON_GLM5 = """
from tokconf.implementations.reference import from_gguf


def load(path):
    if "glm5" in str(path):
        raise RuntimeError("the port broke opening it")
    return from_gguf(path)
"""


def test_a_port_breaking_on_a_vocabulary_llama_cpp_refuses_is_no_loading_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """b11192 refuses glm5's vocabulary; a port whose factory raises there did not load it either: its
    error is shown among the samples, never "it loads it" (a review's case)."""
    (tmp_path / "breaks_on_glm5.py").write_text(BREAKS_ON_GLM5, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    assert main(["identify", "--impl", "breaks_on_glm5:load", "--vocab", "pre-glm5", "--vocab", "pre-gpt-4o"]) == 1
    out = capsys.readouterr().out
    assert "loads it" not in out and "the port broke opening it" in out


def _changed_between(history: History, index: int, others: list[int]) -> set[tuple[str, str, str]]:
    return {key for key, answers in history.outcomes.items() for other in others if answers[index] != answers[other]}


CACHE = cache_root()  # tokconf's own, read before a fixture points TOKCONF_CACHE at a test's folder
GIT = ["git", "-c", "user.name=tokconf", "-c", "user.email=tokconf@example.invalid", "-c", "commit.gpgsign=false"]
COMPARATOR = "return l.rank > r.rank || (l.rank == r.rank && l.left > r.left);"  # as tests/test_llama_local.py
PATCHED = "return l.rank > r.rank || (l.rank == r.rank && l.left < r.left);"


def test_a_patched_tree_matches_no_published_build(llama_build: Build, tmp_path: Path) -> None:
    """b11192's tree with its BPE tie-break flipped (the patch of tests/test_llama_local.py, so its
    build is shared through the cache): qwen2 answers otherwise in 319 outcomes, which no published
    build of the history does."""
    tree = tmp_path / "llama.cpp"
    pinned = source_dir(DEFAULT_BUILD)
    shutil.copytree(
        pinned, tree, ignore=lambda folder, names: ["docs", "models", "media"] if folder == str(pinned) else []
    )
    vocab_cpp = tree / "src" / "llama-vocab.cpp"
    text = vocab_cpp.read_text(encoding="utf-8")
    assert text.count(COMPARATOR) == 1
    vocab_cpp.write_text(text.replace(COMPARATOR, PATCHED), encoding="utf-8")
    subprocess.run([*GIT, "init", "-q", str(tree)], check=True)
    found = _identify_real(f"llama.cpp:{tree}", _bundled({"qwen2"}), data.read())
    assert found.ranges == []
    differ = found.versus(None)
    assert len(differ) == 319 and {vocab for vocab, _, _ in differ} == {"qwen2"}
    assert min(found.mismatches) == 319  # qwen2 never changed in the history: every stretch is as far


DECLINERS = """
from tokconf import Unsupported

def whole(path):
    raise Unsupported("I tokenize nothing")

class _EveryInput:
    def encode(self, data, add_special, parse_special):
        raise Unsupported("not this one", input_class="other")

def every_input(path):
    return _EveryInput()

class _AllButEmpty:
    def __init__(self, path):
        from tokconf.implementations.reference import from_gguf
        self.inner = from_gguf(path)
    def encode(self, data, add_special, parse_special):
        if data:
            raise Unsupported("not this one")
        return self.inner.encode(data, add_special, parse_special)

def all_but_empty(path):
    return _AllButEmpty(path)

class _NoSpecials(_AllButEmpty):
    only_hello = False
    def encode(self, data, add_special, parse_special):
        if parse_special and (b"Hello" in data or not self.only_hello):
            raise Unsupported("no special parsing", input_class="parse-special")
        return self.inner.encode(data, add_special, parse_special)

class _Sly(_NoSpecials):
    only_hello = True

def no_specials(path):
    return _NoSpecials(path)

def sly(path):
    return _Sly(path)

def broken(path):
    raise RuntimeError("boom\\x1b[2KPASS")
"""


def _identify_decliner(
    factory: str, history_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Identification:
    """DECLINERS' `factory`, identified on the cut qwen2 recording against the fake history."""
    (tmp_path / "decliners.py").write_text(DECLINERS, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path))
    impl = resolve(f"decliners:{factory}")
    recordings = [load(_small(history_file))]
    try:
        probes = ProbeSet.from_recordings(recordings, frozenset(), None)
        return identify(impl, data.read(history_file), recordings, probes, {})
    finally:
        impl.close()


@pytest.mark.parametrize(
    ("factory", "why"),
    [
        ("whole", "declined whole: qwen2"),
        (
            "every_input",
            r"it declined every input it was asked \(declined for a reason of its own: other \(the port said: not",
        ),
        ("broken", "it broke on every vocabulary it was asked (.*RuntimeError: boom)"),
    ],
)
def test_nothing_compared_places_it_nowhere(
    factory: str,
    why: str,
    fake_history_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A port that declines every vocabulary or every input, or breaks loading, gave no answer to place:
    an error (exit 2), not every build of the history (with nothing compared, every stretch agrees)."""
    with pytest.raises(TokconfError, match=f"nothing to identify decliners:{factory} by: {why}"):
        _identify_decliner(factory, fake_history_file, tmp_path, monkeypatch)
    args = ["identify", "--data", str(fake_history_file), "--recordings", str(_small(fake_history_file))]
    assert main([*args, "--impl", f"decliners:{factory}"]) == 2
    shown = capsys.readouterr().err  # the port's words escaped: no ANSI escape reaches the terminal
    assert "\x1b" not in shown and (factory != "broken" or "boom\\x1b[2KPASS" in shown)


def test_a_binding_that_dies_where_llama_cpp_aborts_is_placed() -> None:
    """tests/support/aborting_port.py dies (SIGABRT) on the 12 qwen2 outcomes llama.cpp aborts on and answers as
    b11192 elsewhere: placed in the whole history (qwen2 never changed), as `check` passes it; each
    death restarts it and does not count toward giving the vocabulary up."""
    program = f"cmd:{sys.executable} {Path(__file__).parent / 'support' / 'aborting_port.py'} die"
    bundled = _bundled({"qwen2"})
    assert sum(isinstance(o, Refusal) for case in bundled[0][0].cases for o in case.outcomes.values()) == 12
    history = data.read()
    found = _identify_real(program, bundled, history)
    assert [(first.first, last.last) for first, last in found.ranges] == [(history.builds[0], history.builds[-1])]
    assert not found.versus(None)


def test_a_binding_that_dies_on_every_input_is_nothing_to_identify_by() -> None:
    """Dying agrees with a build where it aborts, but a program dying on every input agreed with the 12
    qwen2 aborts and was "nearest" a stretch (exit 1): it said nothing of which build it is like."""
    program = f"cmd:{sys.executable} {Path(__file__).parent / 'support' / 'aborting_port.py'} die-always"
    with pytest.raises(TokconfError, match=r"nothing to identify .* by: (its process died|it broke) on every"):
        _identify_real(program, _bundled({"qwen2"}), data.read())


def test_declines_for_a_reason_of_its_own_agree_with_no_build(
    fake_history_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A port answering the empty input alone and declining the rest (no input class: its own reason)
    is placed nowhere: those declines could hide any difference, as they count against coverage in a
    check."""
    found = _identify_decliner("all_but_empty", fake_history_file, tmp_path, monkeypatch)
    assert found.ranges == [] and found.declined == 0
    # the 4 cases that are not empty x 3 modes in every stretch, and from b11196 on the 2 empty ones too
    assert found.mismatches == [12, 12, 18]


def test_a_reader_that_leaves_early_never_turns_the_answer_into_a_pass(
    llama_build: Build, fake_history_file: Path
) -> None:
    """`tokconf identify ... | true` under `pipefail`: the reader left before the answer, so the exit
    status is a broken pipe's (141), not 0 (which would say some build matches)."""
    files = f"--data {fake_history_file} --recordings {_small(fake_history_file)}"
    command = f"{sys.executable} -m tokconf identify --impl llama.cpp:{llama_build.libllama} {files}"
    env = {**os.environ, "TOKCONF_CACHE": str(CACHE)}  # the vocab files are there (the fakes' cache is not)
    piped = ["bash", "-c", f"set -o pipefail; {command} | true"]
    done = subprocess.run(piped, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 141, done.stderr
    alone = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=300, env=env)
    assert alone.returncode == 0 and "tokenizes exactly like: b11192" in alone.stdout, alone.stderr


@pytest.mark.parametrize(("factory", "placed"), [("no_specials", [(11192, 11192)]), ("sly", [])])
def test_a_mode_is_left_out_only_when_declined_whole(
    factory: str,
    placed: list[tuple[int, int]],
    fake_history_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reference (b11192's answers) declining `parse-special` on every request it fits is a port
    without special parsing: placed on its plain mode. Declining it only on the inputs a later build
    answers otherwise (holding "Hello") could hide that difference: those agree with no build."""
    found = _identify_decliner(factory, fake_history_file, tmp_path, monkeypatch)
    assert [(first.first, last.last) for first, last in found.ranges] == placed
    assert found.declined == (12 if factory == "no_specials" else 0)  # 6 cases x (special, bos)
