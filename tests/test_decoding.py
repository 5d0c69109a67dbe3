"""Decoding recordings: recorded from llama.cpp, checked, and refused when corrupt or stale."""

from __future__ import annotations

import shutil
import sys
from importlib.metadata import version
from pathlib import Path

import checked
import pytest
from checked import Checked
from tokconf.builds.build import Build
from tokconf.core.errors import TokconfError
from tokconf.core.files import sha256_file
from tokconf.recording.decoding import load, load_for, path_for, read_provenance
from tokconf.recording.decoding_recorder import record_decoding
from tokconf.recording.format import load as load_recording
from tokconf.recording.format import read_provenance as read_recording_provenance
from tokconf.recording.format import recording_files

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = ROOT / "recordings" / "b11192"


@pytest.fixture(scope="module")
def qwen2(tmp_path_factory: pytest.TempPathFactory, llama_build: Build) -> Path:
    """A copy of the bundled qwen2 recording with a freshly recorded decoding beside it."""
    folder = tmp_path_factory.mktemp("decoding")
    recording = folder / "qwen2.yaml"
    shutil.copy(BUNDLED / "qwen2.yaml", recording)
    record_decoding(recording)
    return recording


def _check(capsys: pytest.CaptureFixture[str], recording: Path, impl: str) -> Checked:
    return checked.check(capsys, "--recordings", str(recording), "--mode", "decode", "--impl", impl)


def test_the_recorded_decoding_is_the_bundled_one(qwen2: Path) -> None:
    """The same content and provenance, but for the version of tokconf that recorded it."""
    fresh, bundled = load(path_for(qwen2)), load(path_for(BUNDLED / "qwen2.yaml"))
    assert fresh.provenance.pop("harness") == version("tokconf")
    bundled.provenance.pop("harness")
    assert fresh == bundled


def test_every_bundled_recording_has_its_decoding() -> None:
    for recording in recording_files([BUNDLED]):
        if recording.parent != BUNDLED:  # synthetic: where the recipe says (tests/test_synth.py)
            continue
        provenance = read_provenance(path_for(recording))
        assert provenance["recording"]["file"] == recording.name
        assert provenance["recording"]["sha256"] == sha256_file(recording)
        assert provenance["vocab"] == read_recording_provenance(recording)["vocab"]


def test_every_decoding_in_the_repository_decodes_its_recording_as_it_is() -> None:
    """A recording recorded again leaves the decoding beside it stale unless that is recorded again too, and a
    stale decoding refuses the check of its whole vocabulary (b11434's variant-glm4-unmerged was, for four stops:
    its recording grew corpora/strength.yaml's cases and its decoding did not)."""
    decodings = sorted((ROOT / "recordings").rglob("*.decoding.yaml"))
    assert len(decodings) > 40
    decoded = {path: path.with_name(path.name.replace(".decoding", "")) for path in decodings}
    sha = {d: read_provenance(d)["recording"]["sha256"] for d in decodings}
    stale = [str(d.relative_to(ROOT)) for d, recording in decoded.items() if sha[d] != sha256_file(recording)]
    assert stale == []


def test_the_provenance_read_alone_is_the_whole_files() -> None:
    assert read_provenance(path_for(BUNDLED / "gpt-2.yaml")) == load(path_for(BUNDLED / "gpt-2.yaml")).provenance
    assert read_recording_provenance(BUNDLED / "gpt-2.yaml") == load_recording(BUNDLED / "gpt-2.yaml").provenance


def _decode_counts(done: Checked) -> list[int]:
    """passed, failed, error, unsupported of a run's decoding checks (its --json verdict)."""
    return done.counts("qwen2", "decode")[0:4]


def test_llama_cpp_and_the_reference_decode_as_recorded(qwen2: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for impl in ("llama.cpp@11192", "reference"):
        done = _check(capsys, qwen2, impl)
        assert _decode_counts(done)[0:2] == [4, 0]
        # the contract: a decoding that agrees is no conformance pass without a mode checked beside it
        assert done.status == 1 and "facts and decoding alone are not conformance" in done.output, done.output


def test_a_wrong_piece_rule_is_reported_with_the_ids(qwen2: Path, capsys: pytest.CaptureFixture[str]) -> None:
    done = _check(capsys, qwen2, "fake_impls:control_text_always")
    assert done.status == 1
    output = done.output
    assert (
        "qwen2 [decode] pieces-plain: failed — 4 of 151936 differ — id 128247: llama.cpp b'', implementation b'</s>'"
        in output
    )
    assert "qwen2 [decode] remove-special: failed" in output
    assert "reproduce:   tokconf check --impl fake_impls:control_text_always" in output
    assert _decode_counts(done)[0:2] == [2, 2]  # pieces-special and unparse-special agree


def test_implementations_without_decoding_are_unsupported_not_passed(
    qwen2: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    adapter = ROOT / "tests" / "support" / "protocol1_adapter.py"  # protocol 1 has no decoding requests
    done = _check(capsys, qwen2, f"cmd:{sys.executable} {adapter} tokconf.implementations.reference:from_gguf")
    assert _decode_counts(done) == [0, 0, 0, 4]
    assert done.status == 1  # nothing passed: unsupported is never counted as a pass


def test_a_stale_decoding_is_refused(qwen2: Path, tmp_path: Path) -> None:
    recording = tmp_path / "qwen2.yaml"
    recording.write_text(qwen2.read_text(encoding="utf-8").replace("why: the canonical example", "why: changed"))
    shutil.copy(path_for(qwen2), path_for(recording))
    with pytest.raises(TokconfError, match=r"decodes another version of qwen2\.yaml"):
        load_for(recording)


def test_a_corrupt_decoding_names_the_file_and_the_remedy(qwen2: Path, tmp_path: Path) -> None:
    broken = tmp_path / "qwen2.decoding.yaml"
    broken.write_text(path_for(qwen2).read_text(encoding="utf-8").replace("pieces:\n- '!'", "pieces:\n- {oops: 1}"))
    with pytest.raises(TokconfError, match="piece 0: expected text or") as error:
        load(broken)
    assert "re-record it" in str(error.value)
