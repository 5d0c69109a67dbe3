"""The bundled recordings of the shipped vocabularies (recordings/b11192): complete, faithful to
llama.cpp (a sample of each is re-asked of the live llama.cpp in tests/test_oracle.py, with the worker
its backend cross-check uses), and exportable. The synthetic ones (recordings/b11192/synthetic) are
tests/test_synth.py's."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest
from tokconf.builds.build import Build
from tokconf.builds.vocabs import shipped_vocabs, vocab_name
from tokconf.core.files import sha256_file
from tokconf.core.outcome import MODES, Refusal
from tokconf.corpus.upstream import read_expected, split_inputs
from tokconf.recording.export import export
from tokconf.recording.format import Recording, load, recording_files

BUNDLED = Path(__file__).resolve().parent.parent / "recordings" / "b11192"
FILES = [p for p in recording_files([BUNDLED]) if p.parent == BUNDLED]  # shipped (synthetic/: test_synth.py)


@pytest.fixture(scope="module", params=[p.stem for p in FILES])
def recording(request: pytest.FixtureRequest) -> Recording:
    return load(BUNDLED / f"{request.param}.yaml")


def test_every_shipped_vocab_is_recorded(llama_build: Build) -> None:
    assert sorted(vocab_name(v) for v in shipped_vocabs(llama_build)) == [p.stem for p in FILES]
    assert len(FILES) == 19


def test_provenance_matches_the_vocab_file_and_build(recording: Recording, llama_build: Build) -> None:
    vocab = llama_build.models_dir / recording.provenance["vocab"]["file"]
    assert recording.vocab_sha256 == sha256_file(vocab)
    assert recording.provenance["llama_cpp"]["build"] == 11192
    assert recording.provenance["llama_cpp"]["sha256"] == llama_build.source.sha256
    assert recording.provenance["fuzz"]["count"] == 2000


def test_every_case_has_every_mode_and_fuzz_and_the_crash_case(recording: Recording) -> None:
    ids = {c.id for c in recording.cases}
    assert all(set(c.outcomes) == set(MODES) for c in recording.cases)
    assert sum(i.startswith("fuzz/") for i in ids) == 2000
    assert "invalid-utf8/above-max-f4-90" in ids and "long/spaces-10k" in ids
    assert any(i.startswith("vocab/") for i in ids)


def test_llama_cpp_out_files_are_reproduced_in_plain_mode(recording: Recording, llama_build: Build) -> None:
    vocab = llama_build.models_dir / recording.provenance["vocab"]["file"]
    out = vocab.with_name(vocab.name + ".out")
    if not out.is_file():
        assert not any(c.id.startswith("llama.cpp/") for c in recording.cases)
        return
    inputs = split_inputs(vocab.with_name(vocab.name + ".inp").read_bytes())
    recorded = {c.id: c for c in recording.cases if c.id.startswith("llama.cpp/")}
    assert len(recorded) == len(inputs) == len(read_expected(out))
    for i, (data, expected) in enumerate(zip(inputs, read_expected(out), strict=True)):
        case = recorded[f"llama.cpp/{i:04d}"]
        assert case.data == data
        assert case.outcomes["plain"] == expected, f"{out.name} line {i + 1}"


def test_the_abort_is_recorded_as_an_error_where_llama_cpp_aborts(recording: Recording) -> None:
    case = next(c for c in recording.cases if c.id == "invalid-utf8/above-max-f4-90")
    if recording.facts["vocab_type"] in ("bpe", "wpm"):  # they decode code points (unicode_cpt_from_utf8)
        assert case.outcomes["plain"] == Refusal("abort: uncaught std::invalid_argument: invalid codepoint")
    else:
        assert all(isinstance(o, list) for o in case.outcomes.values())


def test_export_writes_one_json_line_per_case_and_mode() -> None:
    sink = io.StringIO()
    count = export([BUNDLED / "qwen2.yaml"], sink)
    lines = [json.loads(line) for line in sink.getvalue().splitlines()]
    assert count == len(lines) == 3 * len(load(BUNDLED / "qwen2.yaml").cases)
    first = lines[0]
    assert set(first) == {"vocab", "vocab_sha256", "case", "mode", "add_special", "parse_special", "text_b64", "ids"}
    hello = next(x for x in lines if x["case"] == "edge/hello-world" and x["mode"] == "plain")
    assert base64.b64decode(hello["text_b64"]) == b"Hello world" and hello["ids"] == [9707, 1879]
    crash = next(x for x in lines if x["case"] == "invalid-utf8/above-max-f4-90" and x["mode"] == "bos")
    assert crash["add_special"] is True and "invalid codepoint" in crash["error"] and "ids" not in crash
