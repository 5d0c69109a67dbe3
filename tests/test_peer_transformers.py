"""The transformers GGUF peer plug-in runs transformers' real loading path without torch, and its
verdicts are the honest ones: agreement where it agrees, the documented divergences where it does
not, unsupported where it cannot load a vocabulary or be given an input (docs/peers.md)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tokconf.builds.build import Build
from tokconf.checking.contract import Verdict
from tokconf.checking.engine import CaseResult, Selection, check_recording
from tokconf.core.outcome import is_utf8
from tokconf.implementations.resolve import resolve
from tokconf.recording.format import load

BUNDLED = Path(__file__).resolve().parent.parent / "recordings" / "b11192"


def _results(build: Build, name: str, selection: Selection | None = None) -> list[CaseResult]:
    recording = load(BUNDLED / f"{name}.yaml")
    vocab = build.models_dir / f"ggml-vocab-{name}.gguf"
    return list(check_recording(recording, resolve("transformers-gguf", None), vocab, selection or Selection()))


def test_gpt2_agrees_everywhere_it_can_be_asked(llama_build: Build) -> None:
    results = _results(llama_build, "gpt-2")
    verdicts = Counter(r.verdict for r in results)
    invalid = sum(1 for c in load(BUNDLED / "gpt-2.yaml").cases if not is_utf8(c.data))
    assert verdicts == {Verdict.PASSED: verdicts[Verdict.PASSED], Verdict.UNSUPPORTED: 3 * invalid + 2}, verdicts
    unsupported = [r for r in results if r.verdict is Verdict.UNSUPPORTED]
    assert sum("not valid UTF-8" in r.reason for r in unsupported) == 3 * invalid
    assert [r.case for r in unsupported if r.section == "facts"] == ["add_sep", "eog_ids"]  # not exposed: unsupported


def test_qwen2_end_of_generation_text_is_a_documented_divergence(llama_build: Build) -> None:
    (result,) = _results(
        llama_build, "qwen2", Selection(sections=frozenset({"special"}), cases=frozenset({"vocab/128247-alone"}))
    )
    assert (result.verdict, result.expected, result.actual) == (Verdict.FAILED, [128247], [522, 82, 29])  # `</` `s` `>`


def test_an_architecture_transformers_does_not_map_is_unsupported(llama_build: Build) -> None:
    results = _results(llama_build, "baichuan", Selection(sections=frozenset({"plain"})))
    assert {r.verdict for r in results} == {Verdict.UNSUPPORTED}
    assert "architecture baichuan is not supported" in results[0].reason
