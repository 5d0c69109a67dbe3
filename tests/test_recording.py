"""The recording format: lossless, byte-stable, atomic, and loud about corruption."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pytest

from harness.core.errors import TokconfError
from harness.core.outcome import Refusal
from harness.corpus.generator import fuzz_strings
from harness.recordings import yaml_io
from harness.recordings.format import RecordedCase, Recording, dumps, load, write
from harness.recordings.yaml_io import CorruptRecording

TRICKY = [
    b"",
    b" ",
    b"\x00",
    "\ufeffBOM".encode(),
    "\x85\u2028\u2029".encode(),
    "\ufffe\uffff\U0010ffff".encode(),
    b"\r\n\r",
    b"  trailing  \n",
    b"- looks: [like, yaml]",
    b"'quoted' \"both\"",
    b"\x1b[0m\x7f",
    bytes.fromhex("f4908080"),
    b"\xff\xfe",
    "\t\u3000x".encode(),
    b"#comment",
    b"null",
    b"123",
    b"yes",
]


def _recording(datas: list[bytes]) -> Recording:
    facts = {
        "vocab_type": "bpe",
        "model": "gpt2",
        "n_tokens": 3,
        "add_bos": False,
        "add_eos": False,
        "special_ids": {"bos": 1, "eos": 2},
        "eog_ids": [2],
        "token_attributes": {2: "control", 0: "byte"},
        "special_texts": {2: b"<|end|>"},
    }
    cases = [
        RecordedCase(f"t/{i}", data, {"plain": [i, 1], "special": Refusal("abort: x"), "bos": []})
        for i, data in enumerate(datas)
    ]
    provenance = {"llama_cpp": {"build": 1}, "vocab": {"name": "t", "file": "t.gguf", "sha256": "0" * 64}}
    return Recording(provenance, facts, cases)  # type: ignore[arg-type]  # partial on purpose


def test_tricky_inputs_and_the_whole_fuzz_set_survive_a_round_trip(tmp_path: Path) -> None:
    datas = TRICKY + list(fuzz_strings(11192, 2000))
    path = tmp_path / "t.yaml"
    write(path, _recording(datas))
    again = load(path)
    assert [c.data for c in again.cases] == datas
    assert again.cases[0].outcomes == {"plain": [0, 1], "special": Refusal("abort: x"), "bos": []}
    assert again.facts["special_texts"] == {2: b"<|end|>"}
    assert again.facts["token_attributes"] == {0: "byte", 2: "control"}


def test_writing_twice_is_byte_identical_and_ids_are_one_line_per_mode(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    write(path, _recording(TRICKY))
    first = path.read_bytes()
    write(path, load(path))
    assert path.read_bytes() == first
    assert "  plain: 3 1\n" in dumps(load(path))
    assert "  bos: ''\n" in dumps(load(path))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("schema: other/1\n", "not a tokconf-recording/1 recording"),
        ("schema: tokconf-recording/1\nprovenance: {}\nfacts: {}\n", "missing `cases`"),
        ("cases: [\n", "invalid YAML"),
        (
            "schema: tokconf-recording/1\nprovenance: {}\nfacts: {}\ncases:\n- {id: a, text: x, plain: 1 x}\n",
            "an outcome must be a string of ids",
        ),
        (
            "schema: tokconf-recording/1\nprovenance: {}\nfacts: {}\ncases:\n- {id: a, plain: '1'}\n",
            "neither `text` nor `bytes_hex`",
        ),
        (
            "schema: tokconf-recording/1\nprovenance: {}\nfacts: {}\ncases:\n- {id: a, text: x}\n- {id: a, text: y}\n",
            "duplicate case id 'a'",
        ),
        (
            "schema: tokconf-recording/1\nprovenance: {}\nfacts: {}\ncases: []\n",
            "`provenance.llama_cpp.build` must be an int",
        ),
    ],
)
def test_corrupt_recordings_are_refused_with_file_and_remedy(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CorruptRecording) as caught:
        load(path)
    assert str(path) in str(caught.value) and message in str(caught.value)
    assert "re-record" in str(caught.value)


def test_a_failed_write_leaves_the_old_file_untouched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.yaml"
    write(path, _recording(TRICKY))
    before = path.read_bytes()

    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(TokconfError, match=r"cannot write .*No space left on device"):
        write(path, _recording([b"other"]))
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["t.yaml"]


def test_a_truncated_or_edited_recording_is_refused(tmp_path: Path) -> None:
    bundled = Path(__file__).resolve().parent.parent / "recordings" / "b11192" / "gpt-2.yaml"
    lines = bundled.read_text(encoding="utf-8").splitlines(keepends=True)
    cut = tmp_path / "gpt-2.yaml"
    end = max(i for i in range(3000) if lines[i].startswith("- id: "))
    cut.write_text("".join(lines[:end]), encoding="utf-8")  # still valid YAML, ending after a whole case
    with pytest.raises(CorruptRecording, match=r"the cases are not the ones recorded: \d+ cases .*cut short or edited"):
        load(cut)
    edited = tmp_path / "edited.yaml"
    edited.write_text("".join(lines).replace("plain: 15496 995\n", "plain: 15496 996\n", 1), encoding="utf-8")
    with pytest.raises(CorruptRecording, match="the cases are not the ones recorded"):
        load(edited)
    unsealed = tmp_path / "unsealed.yaml"
    unsealed.write_text("".join(line for line in lines if not line.startswith("  cases: {count")), encoding="utf-8")
    with pytest.raises(CorruptRecording, match=r"`provenance.cases` \(the count and sha256 of the cases\) is missing"):
        load(unsealed)


@pytest.mark.parametrize(
    ("cases", "message"),
    [
        ("cases: []\n", "`cases` must be a non-empty list"),
        ("cases:\n- {id: a, text: x, plainx: '1', special: '1', bos: '1'}\n", "unknown keys ['plainx']"),
        ("cases:\n- {id: a, text: x}\n", "no outcome for mode 'plain'"),
    ],
)
def test_cases_without_the_three_modes_are_refused(tmp_path: Path, cases: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    write(path, _recording([b"x"]))
    head = path.read_text(encoding="utf-8").split("\ncases:\n")[0]
    path.write_text(head + "\n" + cases, encoding="utf-8")
    with pytest.raises(CorruptRecording, match=re.escape(message)):
        load(path)


def test_a_large_file_is_parsed_once_and_a_damaged_or_stale_entry_never_believed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "big.yaml"
    write(path, _recording(list(fuzz_strings(count=2000))))
    assert path.stat().st_size >= yaml_io.KEEP_FROM
    parsed = load(path)
    (entry,) = yaml_io.kept_dir().glob("*.marshal")

    def no_parse(raw: bytes) -> None:
        raise AssertionError("parsed again")

    with monkeypatch.context() as patched:  # the kept document is read, and is the parsed one
        patched.setattr(yaml_io, "parse_yaml", no_parse)
        assert load(path) == parsed

        def read_only(*args: object) -> None:
            raise PermissionError("read-only file system")

        patched.setattr(yaml_io.os, "utime", read_only)  # a cache that cannot be touched still serves it
        assert load(path) == parsed
    entry.write_bytes(entry.read_bytes()[:-1] + b"\x00")  # damaged: parsed again and kept again
    assert load(path) == parsed and len(entry.read_bytes()) > 32
    with monkeypatch.context() as patched:
        patched.setattr(yaml_io, "parse_yaml", no_parse)
        assert load(path) == parsed
    edited = _recording(list(fuzz_strings(count=2000))[1:])
    write(path, edited)  # other bytes: another entry, never the old one
    assert load(path).cases == edited.cases and len(list(yaml_io.kept_dir().glob("*.marshal"))) == 2
    monkeypatch.setattr(yaml_io, "KEPT_LIMIT", 0)  # over the limit: the least recently used go
    write(path, _recording(list(fuzz_strings(count=2000))[2:]))
    load(path)
    assert list(yaml_io.kept_dir().glob("*.marshal")) == []


def test_an_unwritable_cache_only_costs_the_speed_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cache").write_text("a file where the cache folder should be")
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "big.yaml"
    recording = _recording(list(fuzz_strings(count=2000)))
    write(path, recording)
    assert load(path).cases == recording.cases == load(path).cases
