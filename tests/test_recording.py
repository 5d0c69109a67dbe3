"""The recording format: lossless, byte-stable, atomic, sealed by a digest of the whole file, and loud
about corruption and files from elsewhere."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
from pathlib import Path

import pytest
from tokconf.checking.contract import Gate
from tokconf.checking.engine import Selection
from tokconf.checking.session import CheckSession, judged_files
from tokconf.checking.xfail import ExpectedFailures
from tokconf.cli.main import main
from tokconf.core.errors import TokconfError
from tokconf.core.files import pinned
from tokconf.core.outcome import Refusal
from tokconf.corpus.generator import fuzz_strings
from tokconf.recording import decoding, yaml_io
from tokconf.recording.format import RecordedCase, Recording, dumps, load, read_provenance, write
from tokconf.recording.yaml_io import CorruptRecording, load_untrusted, seal

BUNDLED = Path(__file__).resolve().parent.parent / "recordings" / "b11192"

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
        "n_tokens": 3000,
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
        ("cases: [\n", "not a recording tokconf reads"),
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


def _lines() -> list[str]:
    return (BUNDLED / "gpt-2.yaml").read_text(encoding="utf-8").splitlines(keepends=True)


def test_a_truncated_or_edited_recording_is_refused(tmp_path: Path) -> None:
    lines = _lines()
    cut = tmp_path / "gpt-2.yaml"
    end = max(i for i in range(3000) if lines[i].startswith("- id: "))
    cut.write_text("".join(lines[:end]), encoding="utf-8")  # still valid YAML, ending after a whole case
    with pytest.raises(CorruptRecording, match=r"the file is not the one sealed: .*cut short or edited"):
        load(cut)
    edited = tmp_path / "edited.yaml"
    edited.write_text("".join(lines).replace("plain: 15496 995\n", "plain: 15496 996\n", 1), encoding="utf-8")
    with pytest.raises(CorruptRecording, match="the file is not the one sealed"):
        load(edited)
    unsealed = tmp_path / "unsealed.yaml"
    unsealed.write_text("".join(line for line in lines if not line.startswith("  digest: ")), encoding="utf-8")
    with pytest.raises(CorruptRecording, match=r"`provenance.digest` is missing"):
        load(unsealed)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("  add_bos: false\n", "  add_bos: true\n"),
        ("  eog_ids: [50256]\n", "  eog_ids: [50255]\n"),
        ("bos: 50256, eos: 50256,", "bos: 50256, eos: 50255,"),
        ("sha256: cedc56ca", "sha256: 0edc56ca"),  # provenance.vocab.sha256
        ("  llama_cpp: {build: 11192,", "  llama_cpp: {build: 11193,"),
        ("    50256: control\n", "    50256: control|rstrip\n"),
    ],
)
def test_edited_facts_or_provenance_are_refused(tmp_path: Path, old: str, new: str) -> None:
    """The digest covers every field a verdict reads, not only the cases (an older tokconf believed these)."""
    text = "".join(_lines())
    assert text.count(old) >= 1
    edited = tmp_path / "gpt-2.yaml"
    edited.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(CorruptRecording, match="the file is not the one sealed") as caught:
        load(edited)
    assert str(edited) in str(caught.value)


def _older(text: str) -> str:
    """A sealed recording as an older tokconf wrote it: its digest line replaced by `provenance.cases`
    (the count and sha256 of the bytes from `cases:` to the end)."""
    head, cases = text.split("\ncases:\n")
    body = "cases:\n" + cases
    count = sum(line.startswith("- id: ") for line in body.splitlines())
    line = f"  cases: {{count: {count}, sha256: {hashlib.sha256(body.encode()).hexdigest()}}}\n"
    return re.sub(r"  digest: \{.*\}\n", lambda _: line, head + "\n", count=1) + body


def test_a_recording_an_older_tokconf_wrote_is_refused_until_the_user_seals_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "older"
    folder.mkdir()
    bundled = (BUNDLED / "llama-spm.yaml").read_bytes()
    older = folder / "llama-spm.yaml"
    older.write_text(_older(bundled.decode("utf-8")), encoding="utf-8")
    decoded = (BUNDLED / "llama-spm.decoding.yaml").read_text(encoding="utf-8")
    named = hashlib.sha256(bundled).hexdigest()
    old_decoding = re.sub(r"  digest: \{.*\}\n", "", decoded, count=1).replace(
        named, hashlib.sha256(older.read_bytes()).hexdigest()
    )
    (folder / "llama-spm.decoding.yaml").write_text(old_decoding, encoding="utf-8")
    with pytest.raises(CorruptRecording, match=r"`provenance.digest` is missing") as caught:
        load(older)
    assert "tokconf seal --trust" in str(caught.value) and "re-record" in str(caught.value)
    with pytest.raises(CorruptRecording, match=r"`provenance.digest` is missing.*\n.*tokconf seal --trust"):
        decoding.load(folder / "llama-spm.decoding.yaml")

    before = older.read_bytes()
    assert main(["seal", str(folder)]) == 1  # without --trust: says what it would do, writes nothing
    assert "nothing written" in capsys.readouterr().out and older.read_bytes() == before
    assert main(["seal", "--trust", str(folder)]) == 0
    assert older.read_bytes() == bundled  # only the digest line changed: as this tokconf writes it
    assert (folder / "llama-spm.decoding.yaml").read_text(encoding="utf-8") == decoded
    assert decoding.load_for(older) == decoding.load(BUNDLED / "llama-spm.decoding.yaml")
    assert main(["seal", "--trust", str(folder)]) == 0 and "sealed already" in capsys.readouterr().out

    older.write_text(_older(bundled.decode("utf-8")).replace("add_bos: true", "add_bos: false"), encoding="utf-8")
    older.write_text(older.read_text(encoding="utf-8").replace("plain: 15043 3186\n", "plain: 15043 3187\n"))
    assert main(["seal", "--trust", str(folder)]) == 2  # its cases were edited: re-record, never sealed
    assert "no `provenance.cases` line matching its cases" in capsys.readouterr().err


@pytest.mark.parametrize(
    "name", ["/etc/shadow", "../../etc/shadow", "..", "models/x.gguf", "x\\..\\y.gguf", "C:x.gguf", "x\\0.gguf"]
)
def test_a_vocab_file_outside_the_vocab_folder_is_refused_on_load(tmp_path: Path, name: str) -> None:
    recording = _recording([b"x"])
    recording.provenance["vocab"]["file"] = name
    path = tmp_path / "t.yaml"
    path.write_text(dumps(recording), encoding="utf-8")
    with pytest.raises(CorruptRecording, match=r"`provenance.vocab.file` must be a bare file name") as caught:
        load(path)
    assert str(path) in str(caught.value)


BOMB = "".join(f"b{i}: &b{i} [{', '.join([f'*b{i - 1}'] * 9 if i else ['lol'] * 9)}]\n" for i in range(9))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("- id: edge/hello-world\n", "- id: *b8\n"),
        ("  n_tokens: 50257\n", "  n_tokens: *b8\n"),
        ("  why: the canonical example\n", "  why: *b8\n"),
    ],
)
def test_an_alias_bomb_is_refused_without_expanding_it(tmp_path: Path, old: str, new: str) -> None:
    """A 1 KB bomb (9 levels of 9 aliases) would be a list of 387 million strings, `str()`-ed."""
    path = tmp_path / "bomb.yaml"
    small = (BUNDLED / "gpt-2.yaml").read_text(encoding="utf-8").split("\ncases:\n")[0]
    path.write_text(
        BOMB
        + small
        + "\ncases:\n- id: edge/hello-world\n  text: Hello world\n  why: the canonical example\n"
        "  plain: 15496 995\n  special: 15496 995\n  bos: 15496 995\n".replace(old, new)
    )
    with pytest.raises(CorruptRecording, match=r"an alias \(`\*name`\) of the value anchored on line \d+") as caught:
        load(path)
    assert str(path) in str(caught.value) and len(str(caught.value)) < 500


OUTCOME = "an outcome must be a string of ASCII decimal"


def _with_case(tmp_path: Path, case: str) -> Path:
    """A written recording whose only case is `case` (YAML lines), resealed: what is refused is the case."""
    path = tmp_path / "t.yaml"
    write(path, _recording([b"x"]))
    head = path.read_text(encoding="utf-8").split("\ncases:\n")[0]
    path.write_bytes(seal((head + "\ncases:\n" + case).encode("utf-8"), b"facts:"))
    return path


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("- {id: a, text: x, plain: 1 x, special: '1', bos: '1'}\n", OUTCOME),
        ("- {id: a, text: x, plain: '-1', special: '1', bos: '1'}\n", OUTCOME),
        ("- {id: a, text: x, plain: '1_5', special: '1', bos: '1'}\n", OUTCOME),
        ("- {id: a, text: x, plain: '\u0663', special: '1', bos: '1'}\n", OUTCOME),
        ("- {id: a, text: x, plain: '\uff11', special: '1', bos: '1'}\n", OUTCOME),
        ("- {id: a, text: x, plain: '1  2', special: '1', bos: '1'}\n", OUTCOME),
        ("- {id: a, text: x, plain: 7, special: '1', bos: '1'}\n", OUTCOME),
        ("- {id: a, text: x, plain: '" + "9" * 5000 + "', special: '1', bos: '1'}\n", OUTCOME),
        ("- {id: a, text: x, plain: '1\t2', special: '1', bos: '1'}\n", OUTCOME),
        ('- {id: a, text: "\\ud800", plain: "1", special: "1", bos: "1"}\n', "invalid Unicode character escape"),
        ("- {id: a, text: x, bytes_hex: '78', plain: '1', special: '1', bos: '1'}\n", "exactly one input"),
        ("- {id: a, bytes_hex: '7 8', plain: '1', special: '1', bos: '1'}\n", "exactly one input"),
        ("- {id: a, plain: '1', special: '1', bos: '1'}\n", "exactly one input"),
        ("- {id: [a], text: x, plain: '1', special: '1', bos: '1'}\n", "`id` must be a string"),
        ("- {id: a, id: b, text: x, plain: '1', special: '1', bos: '1'}\n", "the key 'id' twice in one mapping"),
        ("- {id: a, text: x, plain: '1', special: '1', bos: '1'}\n" * 2, "duplicate case id 'a'"),
        ("- {id: a, text: x, why: [1], plain: '1', special: '1', bos: '1'}\n", "`why` must be a string"),
        ("- {id: a, text: x, plain: {error: x, more: y}, special: '1', bos: '1'}\n", "an outcome must be"),
        ("- {id: a, text: x, plain: !!int 0x10, special: '1', bos: '1'}\n", "a value tagged `!!int` that is not one"),
        ("- {id: '" + "x" * 100_000 + "', text: x, plain: '1', special: '1', bos: '1'}\n", "`id` must be a string"),
        ("- {id: '" + "x" * 500 + "', text: x, plain: '1', special: '1', bos: [1]}\n", "an outcome must be"),
    ],
)  # fmt: skip
def test_hostile_cases_are_refused_with_file_and_field(tmp_path: Path, case: str, message: str) -> None:
    path = _with_case(tmp_path, case)
    with pytest.raises(CorruptRecording, match=re.escape(message)) as caught:
        load(path)
    assert str(path) in str(caught.value) and len(str(caught.value)) < 1000  # a long id is cut, not repeated


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("n_tokens: 3000", "n_tokens: 99999999999999999999", "`facts.n_tokens` must be an int, found '9999"),
        ("n_tokens: 3000", "n_tokens: 1_5", "`facts.n_tokens` must be an int, found '1_5'"),
        ("n_tokens: 3000", "n_tokens: -1", "`facts.n_tokens` must be from 0 to"),
        ("eog_ids: [2]", "eog_ids: [-2]", "`facts.eog_ids` must be a list of token ids below 3000"),
        ("eog_ids: [2]", "eog_ids: [3000]", "`facts.eog_ids` must be a list of token ids below 3000"),
        ("eos: 2}", "eos: 0x2}", "`facts.special_ids` must map names to token ids"),
        ("  2: control\n", "  true: control\n", "`facts.token_attributes` must map token ids"),
        ("{text: <|end|>}", "{text: <|end|>, bytes_hex: '00'}", "`facts.special_texts` must map token ids"),
        ("sha256: '0000", "sha256: ['0000", "not a recording tokconf reads"),
    ],
)
def test_hostile_facts_are_refused_with_file_and_field(tmp_path: Path, old: str, new: str, message: str) -> None:
    path = tmp_path / "t.yaml"
    write(path, _recording([b"x"]))
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_bytes(seal(text.replace(old, new, 1).encode("utf-8"), b"facts:"))
    with pytest.raises(CorruptRecording, match=re.escape(message)) as caught:
        load(path)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("a: &x [1]\nb: *x\n", "an alias (`*name`) of the value anchored on line 1"),
        ("a: 1\nb: 2\na: 3\n", "the key 'a' twice in one mapping, the second on line 3"),
        ("a: !!binary aGk=\n", "could not determine a constructor"),
        ("a: !!python/object:os.system x\n", "could not determine a constructor"),
        ("? [a]\n: 1\n", "a key that is not a string or a number on line 1"),
        ("a: !!map x\n", "`!!map` on a value that is no mapping (line 1)"),
        ("a: !!seq x\n", "`!!seq` on a value that is no list (line 1)"),
        ("a: !!bool maybe\n", "a value tagged `!!bool` that is not one (line 1)"),
        ("a: [" * 2000 + "]" * 2000 + "\n", "exceeded maximum nesting depth"),
        ('a: "\\xff" \xff\n', "not a expected-failure file tokconf reads"),
    ],
)
def test_the_untrusted_loader_reads_plain_data_only(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "known.yaml"
    path.write_bytes(content.encode("utf-8", "surrogateescape").replace("\xc3\xbf".encode("latin-1"), b"\xff"))
    with pytest.raises(CorruptRecording, match=re.escape(message)) as caught:
        load_untrusted(path, "expected-failure file")
    assert str(path) in str(caught.value) and "no anchors, aliases, tags or repeated keys" in str(caught.value)


def test_the_untrusted_loader_reads_ints_as_plain_decimal_only(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("a: [0, -1, 15496, 1_5496, 0x10, +3, 1:30, 99999999999999999999, 1.5, 2024-01-01, yes, true, ~]\n")
    assert load_untrusted(path, "file") == {
        "a": [
            0,
            -1,
            15496,
            "1_5496",
            "0x10",
            "+3",
            "1:30",
            "99999999999999999999",
            "1.5",
            "2024-01-01",
            "yes",
            True,
            None,
        ]
    }


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


def test_a_pinned_recording_and_its_decoding_are_read_from_disk_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run reads each file it judges when it pins it (`tokconf.core.files.pinned`), once: its
    provenance, its cases and its digest, which its decoding names, come from those bytes. A file
    touched (its bytes unchanged) is still served; one rewritten is refused."""
    recording, beside = tmp_path / "model-rwkv.yaml", tmp_path / "model-rwkv.decoding.yaml"
    for path in (recording, beside):
        path.write_bytes((BUNDLED / "synthetic" / path.name).read_bytes())
    opened: list[Path] = []
    real = os.open

    def counted(path: str | os.PathLike[str], *args: int) -> int:
        opened.append(Path(path))
        return real(path, *args)

    monkeypatch.setattr(os, "open", counted)
    with pinned(judged_files([recording])):
        assert opened == [recording, beside]
        provenance = read_provenance(recording)
        cases = load(recording).cases
        assert decoding.load_for(recording) is not None
        assert opened == [recording, beside]
        os.utime(recording, ns=(1, 1))  # touched: its bytes are those pinned
        assert load(recording).cases == cases
        recording.write_bytes(recording.read_bytes().replace(b"model-rwkv", b"model-rwkw", 1))
        with pytest.raises(TokconfError, match="changed during the run"):
            read_provenance(recording)
    assert provenance["vocab"] and read_provenance(recording) != provenance  # unpinned: the disk again


def test_a_pinned_file_gone_swapped_for_a_huge_one_or_a_link_loop_is_changed_never_absent(tmp_path: Path) -> None:
    """What a kept port can do to a pinned decoding or recording while the run lasts: delete it (its
    decode checks were then dropped, and the run passed), swap in a sparse file far over the cap (hashed
    whole before), make its path a link to itself (a traceback). Each is "changed during the run"."""
    recording, beside = tmp_path / "model-rwkv.yaml", tmp_path / "model-rwkv.decoding.yaml"
    for path in (recording, beside):
        path.write_bytes((BUNDLED / "synthetic" / path.name).read_bytes())
    with pinned(judged_files([recording])):
        beside.unlink()
        with pytest.raises(TokconfError, match="changed during the run"):
            decoding.load_for(recording)
        beside.symlink_to(beside)
        with pytest.raises(TokconfError, match="changed during the run"):
            decoding.load_for(recording)
        with recording.open("r+b") as handle:
            handle.truncate(1 << 40)  # a sparse TiB: refused at its cap, not read
        with pytest.raises(TokconfError, match="changed during the run"):
            load(recording)


def test_a_session_pins_by_absolute_path_so_renaming_its_folder_leaves_nothing_unpinned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--recordings recs`, relative: renaming the folder the judge runs in moves its working folder
    with it, and a pin keyed by the old absolute path met no read. The session makes the paths
    absolute once: after the rename and a rewrite, the read is refused, never of the rewritten file."""
    project = tmp_path / "project"
    (project / "recs").mkdir(parents=True)
    shutil.copy(BUNDLED / "synthetic" / "model-rwkv.yaml", project / "recs")
    monkeypatch.chdir(project)
    session = CheckSession([Path("recs")], Selection(), ExpectedFailures(), Gate(), None)
    [path] = session.recordings()
    session.pin([path])
    try:
        project.rename(tmp_path / "moved")
        rewritten = Path("recs/model-rwkv.yaml")  # the same file, through the moved working folder
        rewritten.write_bytes(rewritten.read_bytes().replace(b"model-rwkv", b"model-rwkw", 1))
        with pytest.raises(TokconfError, match="changed during the run"):
            load(path)
    finally:
        session.close()
