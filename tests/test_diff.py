"""`tokconf diff`: changed outcomes, facts and vocab files between two recordings."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokconf.cli.main import main
from tokconf.core.errors import TokconfError
from tokconf.core.outcome import Refusal
from tokconf.recording.diff import diff
from tokconf.recording.format import RecordedCase, Recording, write


def _recording(folder: Path, sha: str, bos: int, cases: list[RecordedCase]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    facts = {"vocab_type": "bpe", "model": "gpt2", "n_tokens": 10, "add_bos": False, "add_eos": False,
             "special_ids": {"bos": bos, "eos": 2}, "eog_ids": [2],
             "token_attributes": {}, "special_texts": {}}  # fmt: skip
    provenance = {"llama_cpp": {"build": 1}, "vocab": {"name": "v", "file": "v.gguf", "sha256": sha}}
    write(folder / "v.yaml", Recording(provenance, facts, cases))  # type: ignore[arg-type]  # partial on purpose


def _case(case_id: str, data: bytes, plain: list[int] | Refusal) -> RecordedCase:
    return RecordedCase(case_id, data, {"plain": plain, "special": [1], "bos": [0, 1]})


def test_diff_reports_changed_ids_refusals_facts_files_and_one_sided_cases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _recording(
        tmp_path / "a", "a" * 64, 0,
        [_case("t/same", b"x", [1]), _case("t/ids", b"a b", [5, 6, 7]), _case("t/crash", b"\xf4\x90\x80\x80",
         Refusal("abort: x")), _case("t/gone", b"g", [1])],
    )  # fmt: skip
    _recording(
        tmp_path / "b", "b" * 64, 9,
        [_case("t/same", b"x", [1]), _case("t/ids", b"a b", [5, 8, 7]), _case("t/crash", b"\xf4\x90\x80\x80", [3]),
         _case("t/new", b"n", [1])],
    )  # fmt: skip
    out = tmp_path / "report.md"
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(out)]) == 0
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(out), "--exit-code"]) == 1
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "a"), "-o", str(tmp_path / "same.md"), "--exit-code"]) == 0
    report = out.read_text()
    assert "| v | **changed** | special_ids | 9 | 2 | 2 | 0 | 0 |" in report
    assert "- fact `special_ids`: `{'bos': 0, 'eos': 2}` → `{'bos': 9, 'eos': 2}`" in report
    assert "- `t/ids` [plain] input `a·b`" in report and "first divergence at 1; before:  5  >6   7" in report
    assert "- `t/crash` [plain]" in report and "before: refused: abort: x; after: 3" in report
    assert "cases only before: 1, only after: 1" in report
    assert "2 changed outcomes in 1 vocabs" in capsys.readouterr().err


def test_diff_refuses_recordings_of_different_inputs(tmp_path: Path) -> None:
    _recording(tmp_path / "a", "a" * 64, 0, [_case("t/x", b"one", [1])])
    _recording(tmp_path / "b", "a" * 64, 0, [_case("t/x", b"two", [1])])
    with pytest.raises(TokconfError, match="different input on each side"):
        list(diff([tmp_path / "a"], [tmp_path / "b"]))


def test_bundled_b11192_and_b11434_recordings_agree_on_a_sample() -> None:
    """The committed upgrade report says nothing changed; hold a sample of the recordings to it."""
    root = Path(__file__).resolve().parent.parent / "recordings"
    names = ("qwen2", "llama-spm", "bert-bge", "nomic-bert-moe", "gemma-4")
    before = [root / "b11192" / f"{name}.yaml" for name in names]
    after = [root / "b11434" / f"{name}.yaml" for name in names]
    diffs = [d for d in diff(before, after) if not isinstance(d, str)]
    assert len(diffs) == len(names)
    for item in diffs:
        assert item.changes == [] and item.facts == {} and item.sha_before == item.sha_after
        assert item.compared > 8000 and not item.only_before and not item.only_after


def test_the_synthetic_recordings_show_b11434s_tokenizer_changes() -> None:
    """docs/reports/upgrade-b11192-b11434.md's table, held to the bundled synthetic recordings."""
    root = Path(__file__).resolve().parent.parent / "recordings"
    names = ("model-plamo2", "pre-glm5", "pre-mmbert", "pre-glm4", "model-rwkv", "variant-glm4-unmerged")
    before = [root / "b11192" / "synthetic" / f"{name}.yaml" for name in names]
    after = [root / "b11434" / "synthetic" / f"{name}.yaml" for name in names]
    diffs = {d.name: d for d in diff(before, after) if not isinstance(d, str)}
    plamo = diffs["model-plamo2"]
    assert plamo.facts["eog_ids"] == ([2, 4, 261], [2, 4])
    assert {c.mode for c in plamo.changes} == {"bos"} and len(plamo.changes) == 914
    assert all(c.after == [1, *c.before] for c in plamo.changes if isinstance(c.before, list))  # BOS first
    for name in ("pre-glm5", "pre-mmbert"):
        assert diffs[name].facts["load_error"] == (f"unknown pre-tokenizer type: '{name[4:]}'", None)
        load = Refusal(f"load: unknown pre-tokenizer type: '{name[4:]}'")
        assert all(c.before == load for c in diffs[name].changes)
        assert sum(isinstance(c.after, list) for c in diffs[name].changes) > 2350  # (the rest: inputs that abort)
        assert len(diffs[name].changes) == diffs[name].compared == 2424
    assert not diffs["pre-glm4"].changes and not diffs["model-rwkv"].changes and not diffs["model-rwkv"].facts
    # glm4's ignore_merges (b11292): tokens no merge reaches, never used by b11192, are used whole
    unmerged = diffs["variant-glm4-unmerged"]
    assert unmerged.facts == {} and len(unmerged.changes) == 588 and unmerged.compared == 2499
    appended = 50257  # gpt-2's size: the first of the tokens no merge reaches
    assert all(max(c.before, default=0) < appended <= max(c.after) for c in unmerged.changes)
