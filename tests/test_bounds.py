"""Bounded everywhere (issue 46): an answer's length is bounded by its input, a corpus case's expansion
is bounded, and neither ends a run in a MemoryError with no verdict.

The bound (`tokconf.oracles.bound`: 4 ids a byte, plus 8) is held against llama.cpp itself first: no
answer in any bundled recording comes near it. Then a port answering 200,000 ids to every input gets
its verdict, FAIL with every case an error naming the bound, in process, in its worker, as a `cmd:`
program, and as a llama.cpp whose llama_tokenize answers that much; each run under a memory limit
its answers would exceed if they were kept. A corpus case with `repeat: 10**12` is an error naming
the file and the case, made before the bytes are.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
from tokconf.builds.build import Build
from tokconf.builds.fetch import source_dir
from tokconf.builds.local import local_build
from tokconf.builds.pins import DEFAULT_BUILD
from tokconf.oracles.bound import max_ids
from tokconf.recording.format import Recording, load, recording_files, write

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = ROOT / "tests" / "support"  # the ports and programs the tests run
GPT2 = ROOT / "recordings" / "b11192" / "gpt-2.yaml"
MEMORY_LIMIT = 1 << 29  # the address space of the process that judges (and of what it starts)
CASES = 150  # 450 answers of 200,000 ids: 720 MB of lists, were they kept
HANG_GUARD = 600  # seconds: a run that takes longer has hung
FLOOD = 200_000  # ids the flooding ports answer (tests/support/zoo_ports.py, tests/support/cmd_programs.py)
BOUND_ERROR = re.compile(r"answered (?:more than )?\d+ ids for a (?P<size>\d+)-byte input: llama\.cpp answers at most "
                         r"(?P<bound>\d+) \(4 × bytes \+ 8\)")  # fmt: skip

# `python -m tokconf ARGS` with its address space limited (as tests/test_hostile_files.py runs it).
CLI = (
    "import resource, runpy, sys\n"
    "resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))\n"
    "sys.argv = ['tokconf', *sys.argv[2:]]\n"
    "runpy.run_module('tokconf', run_name='__main__', alter_sys=True)\n"
)


def _tokconf(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m tokconf ARGS` under MEMORY_LIMIT, run to its end (or the test fails as the hang it is)."""
    command = [sys.executable, "-c", CLI, str(MEMORY_LIMIT), *args]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=HANG_GUARD, stdin=subprocess.DEVNULL,
                              check=False, env=None)  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung: no end in {HANG_GUARD} s: tokconf {' '.join(args)}", pytrace=False)


@pytest.mark.conformance
def test_llama_cpp_answers_within_the_bound_in_every_bundled_recording() -> None:
    """The bound must never judge llama.cpp's own answer: every answer of b11192's 128 recordings and
    b11434's is within it, with room (the most is 3 ids a byte plus 2: tokconf.oracles.bound)."""
    answers, closest = 0, 0
    for path in recording_files([ROOT / "recordings" / "b11192", ROOT / "recordings" / "b11434"]):
        for case in load(path).cases:
            for outcome in case.outcomes.values():
                if isinstance(outcome, list):
                    answers += 1
                    assert len(outcome) <= max_ids(len(case.data)), (path.name, case.id)
                    closest = max(closest, len(outcome) - 3 * len(case.data))
    assert answers > 900_000 and closest == 2


@pytest.fixture(scope="module")
def gpt2_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CASES cases of gpt-2's recording, as recorded."""
    whole = load(GPT2)
    path = tmp_path_factory.mktemp("bounds") / "gpt-2.yaml"
    write(path, Recording(whole.provenance, whole.facts, whole.cases[:CASES]))
    return path


# llama_vocab::tokenize (src/llama-vocab.cpp), the body of llama_tokenize: patched to answer FLOOD ids.
TOKENIZED = "    auto res = tokenize(std::string(text, text_len), add_special, parse_special);\n"
FLOODED = TOKENIZED + f"    res.resize({FLOOD});\n"


@pytest.fixture(scope="session")
def flooding_llama(llama_build: Build, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the pinned tree whose llama_tokenize answers 200,000 ids to every input, its
    tokenizer-only library built in the cache (once per machine: ccache and its content key)."""
    tree = tmp_path_factory.mktemp("flooding") / "llama.cpp"
    pinned = source_dir(DEFAULT_BUILD)
    shutil.copytree(
        pinned, tree, ignore=lambda folder, names: ["docs", "models", "media"] if folder == str(pinned) else []
    )
    vocab_cpp = tree / "src" / "llama-vocab.cpp"
    text = vocab_cpp.read_text(encoding="utf-8")
    assert text.count(TOKENIZED) == 1
    vocab_cpp.write_text(text.replace(TOKENIZED, FLOODED), encoding="utf-8")
    local_build(tree)
    return tree


FRONT_ENDS = {
    "in process": ("zoo_ports:floods", "--in-process"),
    "its worker": ("zoo_ports:floods",),
    "cmd:": (f"cmd:{sys.executable} {SUPPORT / 'cmd_programs.py'} flood-ids",),
    "llama.cpp worker": ("llama.cpp:{flooding}",),
}


@pytest.mark.parametrize("front_end", list(FRONT_ENDS))
def test_an_answer_past_the_bound_is_that_cases_error_within_the_memory_limit(
    front_end: str, gpt2_slice: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """200,000 ids to each of 450 requests: a verdict (FAIL, exit 1), each case whose bound is below
    that an error naming the bound (the rest, inputs of 50 KB and more, failures: wrong ids), and
    nothing kept that would break the memory limit. (The flooding llama.cpp still aborts where
    llama.cpp does: those cases agree with the recording.)"""
    monkeypatch.setenv("PYTHONPATH", str(SUPPORT))
    impl, *extra = FRONT_ENDS[front_end]
    if "{flooding}" in impl:
        impl = impl.format(flooding=request.getfixturevalue("flooding_llama"))
    junit = tmp_path / "junit.xml"
    done = _tokconf("check", "--impl", impl, "--recordings", str(gpt2_slice), "--junit", str(junit), *extra)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "MemoryError" not in done.stderr and "Traceback" not in done.stderr, done.stderr[-3000:]
    # What each (case, mode) asks: llama.cpp's own abort, where recorded, the flooding llama.cpp does too
    asked = [(len(case.data), outcome) for case in load(gpt2_slice).cases for outcome in case.outcomes.values()]
    if front_end == "llama.cpp worker":
        asked = [(size, outcome) for size, outcome in asked if isinstance(outcome, list)]
    report = ElementTree.parse(junit)
    errors = [error.get("message", "") for error in report.iter("error")]
    assert len(errors) == sum(max_ids(size) < FLOOD for size, _ in asked) > 400
    for message in errors:
        said = BOUND_ERROR.search(message)
        assert said and int(said["bound"]) == max_ids(int(said["size"])) < FLOOD, message
    assert len(list(report.iter("failure"))) == sum(max_ids(size) >= FLOOD for size, _ in asked)


@pytest.mark.usefixtures("llama_full_build")  # `tokconf record` needs the pinned build before it reads a corpus
def test_a_huge_repeat_is_one_error_naming_the_file_and_case_before_any_bytes(tmp_path: Path) -> None:
    corpus = tmp_path / "huge.yaml"
    corpus.write_text(
        "cases:\n  - {id: ok, text: fine, why: w}\n  - {id: huge, text: a, why: w, repeat: 1000000000000}\n"
    )
    done = _tokconf("record", "--corpus", str(corpus), "--vocab", "gpt-2", "--out", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr[-3000:]
    assert f"{corpus}: case 'huge': `repeat: 1000000000000` makes it 1,000,000,000,000 bytes" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()
