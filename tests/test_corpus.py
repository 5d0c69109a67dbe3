"""The corpus loader: the bundled corpus is valid, and every kind of bad file is named precisely."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokconf.core.errors import TokconfError
from tokconf.corpus.files import load_corpus, load_corpus_file

CORPORA = Path(__file__).resolve().parent.parent / "corpora"


def test_bundled_corpus_loads_with_unique_ids() -> None:
    files = load_corpus([CORPORA])
    ids = [case.id for f in files for case in f.cases]
    assert len(ids) == len(set(ids)) > 500


def test_bundled_corpus_covers_every_whitespace_and_the_long_inputs() -> None:
    cases = {c.id: c.data for f in load_corpus([CORPORA]) for c in f.cases}
    for cp in (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029,
               0x202F, 0x205F, 0x3000):  # fmt: skip
        assert chr(cp).encode() in cases.values(), hex(cp)
    assert cases["long/spaces-10k"] == b" " * 10000
    assert cases["long/digits-5k"] == b"1234567890" * 500
    assert len(cases["documents/python-reference-50k"]) >= 50_000
    assert cases["invalid-utf8/above-max-f4-90"] == bytes.fromhex("f4908080")


def _write(tmp_path: Path, text: str, name: str = "theme.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("cases:\n  - {id: a, text: x, why: w}\n  - {id: a, text: y, why: w}\n", "case 'a': duplicate id"),
        ("cases:\n  - {id: a, text: x}\n", "case 'a': hand-written cases need a `why`"),
        ("cases:\n  - {id: a, bytes_hex: zz, why: w}\n", "case 'a': `bytes_hex` is not hexadecimal"),
        ("cases:\n  - {id: a, text: x, bytes_hex: '00', why: w}\n", "needs exactly one of"),
        ("cases:\n  - {id: a, text: x, why: w, colour: red}\n", "unknown keys ['colour']"),
        ("cases:\n  - {id: Bad Id, text: x, why: w}\n", "case #0: `id` 'Bad Id' must match"),
        ("cases:\n  - {id: a, text: 12, why: w}\n", "`text` must be a string"),
        ("cases:\n  - {id: a, text: x, why: w, repeat: 0}\n", "`repeat` must be a positive integer"),
        (
            "cases:\n  - {id: a, text: xy, why: w, repeat: 1000000000000}\n",
            "case 'a': `repeat: 1000000000000` "
            "makes it 2,000,000,000,000 bytes; a case holds at most 1,048,576 (1 MiB)",
        ),
        ("cases:\n  - {id: a, text: x, why: w, repeat: 1048577}\n", "case 'a': `repeat: 1048577` makes it"),
        ("cases: [\n", "YAML"),
        ("- just a list\n", "top level: must be a mapping"),
    ],
)
def test_bad_corpus_files_are_named_with_file_and_case(tmp_path: Path, body: str, message: str) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(TokconfError) as caught:
        load_corpus_file(path)
    assert str(path) in str(caught.value)
    assert message in str(caught.value)


def test_generated_files_need_no_why_and_repeat_is_lossless(tmp_path: Path) -> None:
    path = _write(tmp_path, 'generated_by: t\ncases:\n  - {id: a, text: "\\x85\\u2028", repeat: 3}\n')
    (case,) = load_corpus_file(path).cases
    assert case.id == "theme/a"
    assert case.data == "\x85\u2028".encode() * 3


def test_two_files_with_one_stem_are_refused(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    _write(tmp_path, "generated_by: t\ncases: []\n", "x.yaml")
    _write(tmp_path / "sub", "generated_by: t\ncases: []\n", "x.yaml")
    with pytest.raises(TokconfError, match="share the name 'x'"):
        load_corpus([tmp_path])


def test_a_corpus_expands_to_no_more_than_one_recording_holds(tmp_path: Path) -> None:
    """`repeat` is shorthand, not a multiplier of memory: the cases of every file loaded for one run
    expand to at most the recording cap (32 MiB), checked case by case before the bytes are made."""
    case = "  - {{id: c{0}, text: a, why: w, repeat: {1}}}\n"
    first = _write(tmp_path, "cases:\n" + "".join(case.format(i, 1 << 20) for i in range(20)), "first.yaml")
    second = _write(tmp_path, "cases:\n" + "".join(case.format(i, 1 << 20) for i in range(20)), "second.yaml")
    assert sum(len(c.data) for c in load_corpus_file(first).cases) == 20 << 20  # each file alone fits
    with pytest.raises(TokconfError) as caught:
        load_corpus([first, second])
    assert f"{second}: case 'c12': the corpus up to this case expands to more than the 32 MiB" in str(caught.value)
    assert "TOKCONF_MAX_RECORDING_MB" in str(caught.value)
