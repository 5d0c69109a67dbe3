"""Files from elsewhere, mutated at random: refused with an error naming the file, or read as they
were, never a traceback, and within a memory limit (issue 24).

Each kind of file tokconf reads is made small and valid (a recording of a few bundled cases, a
decoding, a found file, an expected-failure file), then mutated: cut short, a byte flipped, a line
deleted or repeated (a key deleted or duplicated), a value swapped for an alias bomb, another type,
a huge number or digits `int()` would take (`1_5`, `-1`, Arabic-Indic, fullwidth). A recording or
decoding is also sealed again after the mutation, half the time, so that what its digest would
refuse reaches the checks of every field.

The files are read in one worker process whose address space is limited (`RLIMIT_AS`): an alias
bomb that got expanded would end it with a MemoryError, which the test reports as the failure it is.

Every kind of file, and a vocab file or tokenizer.json too, must also be a regular file within its
size cap (issue 32): a FIFO, a link to /dev/zero or a 3 GB file is refused naming it, by every reader
of that kind and by `tokconf check` end to end, in a process under the same memory limit that is
killed if it hangs.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from tokconf.core.errors import TokconfError
from tokconf.core.outcome import MODES, Refusal
from tokconf.recording import decoding, format
from tokconf.recording.decoding import Decoding, Edit
from tokconf.recording.format import RecordedCase, Recording
from tokconf.recording.yaml_io import seal

BUNDLED = Path(__file__).resolve().parent.parent / "recordings" / "b11192"
MEMORY_LIMIT = 1 << 30  # bytes of address space for the process that reads the files
MAX_MESSAGE = 2000  # an error shows what it must, cut: never a whole value from the file
SEALED_BEFORE = {"recording": b"facts:", "found": b"facts:", "decoding": b"pieces:"}

# 1 KB: nine levels of nine aliases, a list of 387 million strings once expanded.
BOMB = "".join(f"b{i}: &b{i} [{', '.join([f'*b{i - 1}'] * 9 if i else ['lol'] * 9)}]\n" for i in range(9))
HOSTILE_VALUES = [
    "*b8", "[1, 2]", "{a: 1}", "null", "true", "''", "-1", "1_5496", "\u0663", "\uff11", "0x1F", "+5", "1:30",
    "9" * 40, "1e999", "!!binary aGk=", "&x 1", "*undefined", '"\\0"', "{error: *b8}", "'15496 -995'",
    "!!map x", "!!seq x", "!!bool maybe", "!!str [1]", "!!int 0x10", "!!python/name:os.system", "? [a]",
]  # fmt: skip
ODD_DIGITS = ["\u0663", "\uff11", "_", "-", " ", "  ", "+", "\u00b2", "\t"]

WORKER = """
import json, resource, sys, traceback
from pathlib import Path
from tokconf.checking.xfail import ExpectedFailures
from tokconf.core.errors import TokconfError
from tokconf.recording import decoding, format

LOAD = {"recording": format.load, "found": format.load, "decoding": decoding.load,
        "xfail": lambda path: ExpectedFailures.load(path).entries}
WRITE = {"recording": format.write, "found": lambda path, r: format.write(path, r, visible=True),
         "decoding": decoding.write}
originals = {kind: LOAD[kind](Path(path)) for kind, path in json.loads(sys.argv[2]).items()}
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
print("ready", flush=True)
for line in sys.stdin:
    kind, path = json.loads(line)
    path = Path(path)
    try:
        loaded = LOAD[kind](path)
        answer = {"equal": loaded == originals[kind]}
        if kind in WRITE and not answer["equal"]:  # read although it differs: it must be a file tokconf writes
            again = path.with_name("again-" + path.name)
            WRITE[kind](again, loaded)
            answer["written_back"] = LOAD[kind](again) == loaded
    except TokconfError as error:
        answer = {"refused": str(error)[:100_000]}
    except BaseException:
        answer = {"crashed": traceback.format_exc()[-4000:]}
    print(json.dumps(answer), flush=True)
"""


class Reader:
    """The worker process that reads the files, under MEMORY_LIMIT; started again if it dies."""

    def __init__(self, originals: dict[str, Path]) -> None:
        self.originals = originals
        self.process = self._start()

    def _start(self) -> subprocess.Popen[str]:
        args = [
            sys.executable,
            "-c",
            WORKER,
            str(MEMORY_LIMIT),
            json.dumps({k: str(p) for k, p in self.originals.items()}),
        ]
        process = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert process.stdout is not None
        ready = process.stdout.readline()
        assert ready == "ready\n", process.stderr.read() if process.stderr else ready
        return process

    def read(self, kind: str, path: Path) -> dict[str, Any]:
        """What the worker made of the file: `refused` (the message), `equal` (and `written_back`),
        `crashed` (a traceback), or `died` (the process ended: out of memory, for one)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(json.dumps([kind, str(path)]) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        except BrokenPipeError:
            line = ""
        if line:
            answer: dict[str, Any] = json.loads(line)
            return answer
        _, stderr = self.process.communicate()
        status = self.process.returncode
        self.process = self._start()
        return {"died": f"exit status {status}: {stderr[-4000:]}"}

    def close(self) -> None:
        self.process.communicate()  # ends its input: it exits, and every pipe is closed


def _small_recording() -> Recording:
    """A few bundled gpt-2 cases (text, invalid UTF-8, llama.cpp's refusal, a `why`), as recorded."""
    bundled = format.load(BUNDLED / "gpt-2.yaml")
    wanted = {"edge/hello-world", "edge/trailing-newline", "invalid-utf8/above-max-f4-90", "llama.cpp/0001"}
    cases = [case for case in bundled.cases if case.id in wanted or case.id.startswith("invalid-utf8/lone")]
    return Recording(bundled.provenance, bundled.facts, cases)


def _files(folder: Path) -> dict[str, Path]:
    recording = _small_recording()
    files = {kind: folder / name for kind, name in
             (("recording", "gpt-2.yaml"), ("found", "found-gpt-2.yaml"), ("decoding", "gpt-2.decoding.yaml"),
              ("xfail", "known.yaml"))}  # fmt: skip
    format.write(files["recording"], recording)
    found = Recording(
        recording.provenance | {"campaigns": [{"date": "2026-01-01", "implementation": "mine", "seed": 7}]},
        recording.facts,
        [RecordedCase("found-gpt-2/fuzz-0123456789ab", "\u3000x".encode(), {m: [220] for m in MODES},
                      "found by tokconf fuzz: mode plain"),
         RecordedCase("found-gpt-2/fuzz-ba9876543210", b"\xf4\x90", dict.fromkeys(MODES, Refusal("abort: x")))],
    )  # fmt: skip
    format.write(files["found"], found, visible=True)
    provenance = {"llama_cpp": recording.provenance["llama_cpp"], "vocab": recording.provenance["vocab"],
                  "recording": {"file": "gpt-2.yaml", "sha256": "0" * 64}, "harness": "0.1.0"}  # fmt: skip
    pieces = [bytes([i]) for i in range(33, 60)] + [b"\xc4", b"\xe2\x80", b"<|endoftext|>"]
    edits = {"remove-special": {"edge/hello-world": Edit(0, 1, b"h")}, "unparse-special": {}}
    decoding.write(files["decoding"], Decoding(provenance, pieces, {29: b""}, edits))
    files["xfail"].write_text(
        "expected_failures:\n"
        "- {case: gpt-2/plain/edge/hello-world, reason: a known divergence, link: 'https://example.org/1'}\n"
        "- case: '*/bos/vocab/*'\n"
        '  reason: "BOS: \\"quoted\\" text"\n',
        encoding="utf-8",
    )
    return files


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _files(tmp_path_factory.mktemp("originals"))


@pytest.fixture(scope="module")
def reader(files: dict[str, Path]) -> Iterator[Reader]:
    worker = Reader(files)
    yield worker
    worker.close()


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


@st.composite
def _mutated(draw: st.DrawFn, original: bytes) -> bytes:
    """One hostile edit of a file's bytes."""
    lines = _lines(original)
    line = draw(st.integers(0, len(lines) - 1))
    kind = draw(st.sampled_from(["cut", "flip", "delete", "repeat", "swap", "digits", "bytes"]))
    if kind == "cut":
        return original[: draw(st.integers(0, len(original) - 1))]
    if kind == "flip":
        at = draw(st.integers(0, len(original) - 1))
        return original[:at] + bytes([original[at] ^ draw(st.integers(1, 255))]) + original[at + 1 :]
    if kind == "delete":  # a key, a list item or a case line gone
        return b"".join(lines[:line] + lines[line + 1 :])
    if kind == "repeat":  # a key twice, or a line where it does not belong
        to = draw(st.integers(0, len(lines)))
        return b"".join([*lines[:to], lines[line], *lines[to:]])
    if kind == "bytes":
        return original[: draw(st.integers(0, len(original)))] + draw(st.binary(max_size=64))
    text = lines[line].decode("utf-8", "replace")
    if kind == "swap" and ": " in text:  # a value of another type, an alias bomb, a huge or odd number
        value = draw(st.sampled_from(HOSTILE_VALUES))
        key = text[: text.index(": ") + 2]
        lines[line] = (key + value + "\n").encode("utf-8")
        return (BOMB.encode() if "*b8" in value else b"") + b"".join(lines)
    digits = [i for i, c in enumerate(text) if c.isdigit()]
    if kind == "digits" and digits:  # `int()` would take these: 1_5, -1, +3, fullwidth, Arabic-Indic
        at = draw(st.sampled_from(digits))
        text = text[:at] + draw(st.sampled_from(ODD_DIGITS)) + text[at + 1 :]
        lines[line] = text.encode("utf-8")
        return b"".join(lines)
    return original + BOMB.encode()  # a bomb defined, never used: harmless and still refused or read


def _check(reader: Reader, kind: str, path: Path, resealed: bool) -> None:
    answer = reader.read(kind, path)
    assert "died" not in answer, answer["died"]
    assert "crashed" not in answer, answer["crashed"]
    event("refused" if "refused" in answer else "read as it was" if answer["equal"] else "read, another valid file")
    if "refused" in answer:
        message = answer["refused"]
        assert str(path) in message and len(message) <= MAX_MESSAGE, message[:MAX_MESSAGE]
    elif kind in SEALED_BEFORE and not resealed:
        assert answer["equal"], "an edited file was believed: its digest did not refuse it"
    elif not answer["equal"]:
        assert answer.get("written_back", True), "read, but not as tokconf would write it"


SETTINGS = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.mark.parametrize("kind", ["recording", "found", "decoding"])
@SETTINGS
@given(data=st.data())
def test_a_mutated_sealed_file_is_refused_naming_it_or_read_as_it_was(
    kind: str, files: dict[str, Path], reader: Reader, data: st.DataObject
) -> None:
    original = files[kind].read_bytes()
    mutated = data.draw(_mutated(original), label="mutated")
    resealed = data.draw(st.booleans(), label="sealed again") and b"\n" + SEALED_BEFORE[kind] + b"\n" in mutated
    if resealed:
        mutated = seal(mutated, SEALED_BEFORE[kind])
    path = files[kind].parent.parent / f"{files[kind].parent.name}-mutated" / files[kind].name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(mutated)
    _check(reader, kind, path, resealed)


@SETTINGS
@given(data=st.data())
def test_a_mutated_expected_failure_file_is_refused_naming_it_or_read(
    files: dict[str, Path], reader: Reader, data: st.DataObject
) -> None:
    mutated = data.draw(_mutated(files["xfail"].read_bytes()), label="mutated")
    path = files["xfail"].with_name("mutated-known.yaml")
    path.write_bytes(mutated)
    _check(reader, "xfail", path, resealed=False)


BOMBED: list[tuple[str, Callable[[str], str]]] = [
    ("recording", lambda text: BOMB + text.replace("- id: edge/hello-world\n", "- id: *b8\n", 1)),
    ("recording", lambda text: BOMB + text.replace("  n_tokens: 50257\n", "  n_tokens: *b8\n", 1)),
    ("found", lambda text: BOMB + text.replace("- id: found-gpt-2/fuzz-0123456789ab\n", "- id: *b8\n", 1)),
    ("decoding", lambda text: BOMB + text.replace("pieces:\n- '!'\n", "pieces:\n- *b8\n", 1)),
]


@pytest.mark.parametrize(("kind", "bomb"), BOMBED)
def test_an_alias_bomb_is_refused_within_the_memory_limit(
    kind: str, bomb: Callable[[str], str], files: dict[str, Path], reader: Reader
) -> None:
    text = files[kind].read_text(encoding="utf-8")
    path = files[kind].with_name(f"bomb-{files[kind].name}")
    path.write_text(bomb(text), encoding="utf-8")
    assert path.read_text(encoding="utf-8") != BOMB + text
    answer = reader.read(kind, path)
    assert "an alias (`*name`)" in answer.get("refused", ""), answer


def test_an_alias_bomb_in_an_expected_failure_reason_is_refused_within_the_memory_limit(
    files: dict[str, Path], reader: Reader
) -> None:
    path = files["xfail"].with_name("bomb-known.yaml")
    path.write_text(BOMB + "expected_failures:\n- {case: gpt-2/plain/edge/x, reason: *b8}\n", encoding="utf-8")
    answer = reader.read("xfail", path)
    assert "an alias (`*name`)" in answer.get("refused", ""), answer


# Files that are no regular file, or too large (issue 32): a FIFO (a read blocks forever), a link to
# /dev/zero (a read never ends), a 3 GB file (sparse: a read exhausts the memory limit). Each kind of
# file, through every reader of it, must be refused with one error naming it, before any read: each
# is read in a fresh process under MEMORY_LIMIT, killed after HANG_GUARD seconds (a hang is the
# failure; a refusal takes a second).
HANG_GUARD = 60
HUGE = 3 << 30
ATTACKS = {  # what the refusal says, beside the path
    "fifo": "it is a FIFO (named pipe), not a regular file",
    "link to /dev/zero": "(a link to /dev/zero): it is a character device, not a regular file",
    "3 GB": f"it holds {HUGE:,} bytes, over the ",
}

ATTACK_WORKER = """
import json, os, resource, sys, traceback, types
from pathlib import Path
from tokconf.checking.xfail import ExpectedFailures
from tokconf.core.errors import TokconfError
from tokconf.core.files import FileKind
from tokconf.corpus.files import load_corpus, load_corpus_file
from tokconf.fuzz.findings import check_found_files
from tokconf.implementations.peers import hf_tokenizers
from tokconf.builds.vocabs import resolve_vocabs, vocab_file
from tokconf.recording import decoding, format
from tokconf.synth.files import gguf_of

path = Path(sys.argv[2])
READERS = {
    "recording_files": lambda: format.recording_files([path.parent]),
    "format.load": lambda: format.load(path),
    "format.read_provenance": lambda: format.read_provenance(path),
    "decoding.load_for": lambda: decoding.load_for(path.with_name("gpt-2.yaml")),
    "decoding.load": lambda: decoding.load(path),
    "check_found_files": lambda: check_found_files(path.parent, None, [Path("gpt-2.gguf")]),
    "format.load found": lambda: format.load(path, FileKind.FOUND),
    "ExpectedFailures.load": lambda: ExpectedFailures.load(path),
    "load_corpus": lambda: load_corpus([path.parent]),
    "load_corpus_file": lambda: load_corpus_file(path),
    "hf-tokenizers": lambda: hf_tokenizers.factory(str(path)),
    "vocab_file": lambda: vocab_file(path.name, "0" * 64, 11192, path.parent),
    "resolve_vocabs": lambda: resolve_vocabs([str(path)], types.SimpleNamespace(models_dir=path.parent)),
    "gguf_of": lambda: gguf_of(path),
}
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
answers = {}
for name in json.loads(sys.argv[3]):
    try:
        READERS[name]()
        answers[name] = {"read": True}
    except TokconfError as error:
        answers[name] = {"refused": str(error)}
    except BaseException:
        answers[name] = {"crashed": traceback.format_exc()[-4000:]}
print(json.dumps(answers))
"""

KINDS = {  # the hostile file's name, and every reader of its kind
    "recording": ("x.yaml", ["recording_files", "format.load", "format.read_provenance"]),
    "decoding": ("gpt-2.decoding.yaml", ["decoding.load_for", "decoding.load"]),
    "found": ("found-gpt-2.yaml", ["check_found_files", "format.load found"]),
    "xfail": ("known.yaml", ["ExpectedFailures.load"]),
    "corpus": ("x.yaml", ["load_corpus", "load_corpus_file"]),
    "tokenizer.json": ("tokenizer.json", ["hf-tokenizers"]),
    "vocab": ("x.gguf", ["vocab_file", "resolve_vocabs", "gguf_of"]),
}
LISTINGS = {"recording_files"}  # list a folder's files: a regular file of any size is theirs to list


def _hostile(path: Path, attack: str) -> Path:
    if attack == "fifo":
        os.mkfifo(path)
    elif attack == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    else:
        with path.open("wb") as handle:
            handle.truncate(HUGE)  # sparse: no disk used
    return path


def _guarded(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`args` run to its end, or the test failed as the hang it is."""
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=HANG_GUARD, stdin=subprocess.DEVNULL,
                              env=env, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        shown = shlex.join(arg for arg in args if "\n" not in arg)  # not the script
        pytest.fail(f"hung: no end in {HANG_GUARD} s (killed): {shown[-300:]}", pytrace=False)


def _assert_refused(message: str, path: Path, attack: str) -> None:
    assert str(path) in message and ATTACKS[attack] in message and len(message) <= MAX_MESSAGE, message
    assert "Traceback" not in message, message


@pytest.mark.parametrize("attack", list(ATTACKS))
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_file_that_is_no_regular_file_or_too_large_is_refused_naming_it(
    kind: str, attack: str, files: dict[str, Path], tmp_path: Path
) -> None:
    name, readers = KINDS[kind]
    if kind == "decoding":  # beside the recording it decodes
        shutil.copy(files["recording"], tmp_path / "gpt-2.yaml")
    path = _hostile(tmp_path / name, attack)
    readers = [reader for reader in readers if not (attack == "3 GB" and reader in LISTINGS)]
    env = os.environ | {"TOKCONF_MAX_VOCAB_MB": "1024"}  # a vocab may be a model's file: its default cap is above 3 GB
    done = _guarded([sys.executable, "-c", ATTACK_WORKER, str(MEMORY_LIMIT), str(path), json.dumps(readers)], env)
    assert done.returncode == 0, done.stderr[-4000:]
    answers = json.loads(done.stdout)
    for reader in readers:
        assert "refused" in answers[reader], f"{reader}: {answers[reader]}"
        _assert_refused(answers[reader]["refused"], path, attack)


CLI = (
    "import resource, runpy, sys\n"
    "resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))\n"
    "sys.argv = ['tokconf', *sys.argv[2:]]\n"
    "runpy.run_module('tokconf', run_name='__main__', alter_sys=True)\n"
)


def _tokconf(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m tokconf ARGS` under MEMORY_LIMIT."""
    return _guarded([sys.executable, "-c", CLI, str(MEMORY_LIMIT), *args])


@pytest.fixture
def recordings(files: dict[str, Path], tmp_path: Path) -> Path:
    """A folder holding one ordinary recording (a few gpt-2 cases)."""
    folder = tmp_path / "recordings"
    folder.mkdir()
    shutil.copy(files["recording"], folder / "gpt-2.yaml")
    return folder


def test_check_reads_an_ordinary_recording_under_the_memory_limit(recordings: Path) -> None:
    done = _tokconf("check", "--recordings", str(recordings), "--vocab", "gpt-2")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert re.search(r"^\S*\s*gpt-2\b", done.stdout, re.M) and "PASS: " in done.stdout, done.stdout


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_check_on_a_folder_with_a_hostile_recording_says_which_file(attack: str, recordings: Path) -> None:
    path = _hostile(recordings / "x.yaml", attack)
    done = _tokconf("check", "--recordings", str(recordings), "--vocab", "gpt-2", "--vocab", "x")
    assert done.returncode == 2, done.stderr[-4000:]
    _assert_refused(done.stderr, path, attack)


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_check_with_a_hostile_decoding_beside_a_recording_says_which_file(attack: str, recordings: Path) -> None:
    path = _hostile(recordings / "gpt-2.decoding.yaml", attack)
    done = _tokconf("check", "--recordings", str(recordings / "gpt-2.yaml"))
    assert done.returncode == 2, done.stderr[-4000:]
    _assert_refused(done.stderr, path, attack)


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_check_with_a_hostile_expected_failure_file_says_which_file(
    attack: str, recordings: Path, tmp_path: Path
) -> None:
    path = _hostile(tmp_path / "known.yaml", attack)
    done = _tokconf("check", "--recordings", str(recordings), "--xfail", str(path))
    assert done.returncode == 2, done.stderr[-4000:]
    _assert_refused(done.stderr, path, attack)


def test_a_cap_is_set_by_its_variable_and_a_wrong_setting_is_one_clear_error(
    recordings: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = recordings / "gpt-2.yaml"
    assert format.load(path).cases
    size = path.stat().st_size
    monkeypatch.setenv("TOKCONF_MAX_RECORDING_MB", "1")
    if size > 1 << 20:
        pytest.fail("the small recording is no longer small")
    assert format.load(path).cases
    path.write_bytes(path.read_bytes() + b"#" * (1 << 20))
    with pytest.raises(TokconfError, match=rf"{re.escape(str(path))}: it holds {size + (1 << 20):,} bytes, over the "
                       r"recording cap \(1 MiB\)"):  # fmt: skip
        format.load(path)
    monkeypatch.setenv("TOKCONF_MAX_RECORDING_MB", "1.5")
    with pytest.raises(TokconfError, match=r"TOKCONF_MAX_RECORDING_MB='1.5' is not a size in MiB"):
        format.load(path)
