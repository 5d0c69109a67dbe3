"""`import tokconf`, the public API: what it exports, and that each name does what its docstring says,
against the pinned llama.cpp and the bundled recordings."""

from __future__ import annotations

import ast
import os
import pickle
import re
from pathlib import Path

import pytest
import tokconf
import tokconf_reference
from tokconf.builds.build import Build
from tokconf_reference import Tokenizer as Reference
from tokconf_reference.errors import LlamaAborts

ROOT = Path(__file__).resolve().parent.parent
PUBLIC_MODULES = {"tokconf", "tokconf.strategies"}


class Port:
    """A port built on the reference tokenizer, as a port author would wrap one: where llama.cpp
    aborts, it refuses (`tokconf.Refused`); `bug` reads U+3000 as a space (one whitespace class wrong)."""

    def __init__(self, path: Path, bug: bool = False) -> None:
        self.tokenizer = Reference.from_gguf(path)
        self.bug = bug

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        if self.bug:
            data = data.replace("\u3000".encode(), b" ")
        try:
            return self.tokenizer.encode(data, add_special, parse_special)
        except LlamaAborts as why:
            raise tokconf.Refused(str(why)) from None


def _ideographic_space_as_space(path: Path) -> Port:
    return Port(path, bug=True)


def test_every_public_name_is_exported_typed_and_documented() -> None:
    for name in tokconf.__all__:
        value = getattr(tokconf, name)
        assert name in ("__version__", "Factory") or value.__doc__, name  # Factory: a type alias
    assert set(dir(tokconf)) == set(tokconf.__all__)
    with pytest.raises(AttributeError, match="no attribute 'harness'"):
        tokconf.harness  # noqa: B018  # the implementation's folder name is no public name


def _python_blocks(markdown: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown, flags=re.S)


def test_the_docs_examples_need_nothing_but_the_public_api() -> None:
    """Every `tokconf` name the README's and docs' Python examples use is public: imported from
    `tokconf` or `tokconf.strategies` and listed in its `__all__`."""
    used: list[tuple[str, str]] = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for block in _python_blocks(doc.read_text(encoding="utf-8")):
            tree = ast.parse(block)
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tokconf"):
                    used += [(node.module or "", alias.name) for alias in node.names]
                elif isinstance(node, ast.Import):
                    used += [(alias.name, "") for alias in node.names if alias.name.startswith("tokconf")]
                elif (
                    isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "tokconf"
                ):
                    used.append(("tokconf", node.attr))
    assert used, "the docs show the API"
    private = []
    for module, name in used:
        if module not in PUBLIC_MODULES or (name and name not in __import__(module, fromlist=["__all__"]).__all__):
            private.append(f"{module}.{name}")
    assert private == []


def test_check_takes_a_factory_and_returns_the_run_as_data(llama_build: Build) -> None:
    good = tokconf.check(Port, vocabs=["qwen2"], modes=["plain"])
    assert isinstance(good, tokconf.CheckRun) and good.decision.passed
    counts = good.summary.counts[("qwen2", "plain")]
    assert counts[tokconf.Verdict.PASSED] == len([r for r in good.results if r.section == "plain"]) > 2000

    bad = tokconf.check(_ideographic_space_as_space, vocabs=["qwen2"], modes=["plain"], explain=True)
    assert not bad.decision.passed and bad.decision.exit_status == 1
    failed = [r for r in bad.results if r.verdict is tokconf.Verdict.FAILED]
    assert failed and all("\u3000".encode() in r.data for r in failed)
    (cause,) = bad.causes
    assert "U+3000" in cause.label and len(cause.cases) == len(failed)


def test_check_takes_an_impl_value_and_the_bundled_name(llama_build: Build) -> None:
    run = tokconf.check("reference", "bundled/gpt-2.yaml", modes=["bos"])
    assert run.impl_name == "reference" and set(run.vocabs) == {"gpt-2"} and run.passed
    with pytest.raises(tokconf.TokconfError, match="unknown implementation 'no-such-port'"):
        tokconf.check("no-such-port")
    with pytest.raises(tokconf.TokconfError, match="neither an --impl value nor a factory"):
        tokconf.check(42)  # type: ignore[arg-type]
    with pytest.raises(tokconf.TokconfError, match="gtp-2: no recording of it in"):
        tokconf.check("reference", vocabs=["gpt-2", "gtp-2"])  # not gpt-2 alone, passing


def test_a_crashing_factory_is_a_failed_run_not_an_exception(llama_build: Build) -> None:
    def crashes(path: Path) -> object:
        raise SystemExit(0)

    run = tokconf.check(crashes, vocabs=["gpt-2"])
    assert not run.decision.passed
    assert {r.verdict for r in run.results} == {tokconf.Verdict.ERROR}


def test_vocab_path_and_bundled_recordings(llama_build: Build) -> None:
    qwen2 = tokconf.vocab_path("qwen2")
    assert qwen2.name == "ggml-vocab-qwen2.gguf" and qwen2.is_file()
    assert Reference.from_gguf(qwen2).n_tokens == 151936
    synthetic = tokconf.vocab_path("pre-glm5")
    assert synthetic.name == "synth-pre-glm5.gguf" and synthetic.is_file()
    with pytest.raises(tokconf.TokconfError, match=r"ships no vocabulary 'qwen3'.*qwen2"):
        tokconf.vocab_path("qwen3")
    bundled = tokconf.bundled_recordings()
    assert (bundled / "qwen2.yaml").is_file() and len(list(bundled.glob("*.yaml"))) >= 19 * 2
    with pytest.raises(tokconf.TokconfError, match="bundles the recordings of b11192 only"):
        tokconf.bundled_recordings(11434)


def test_the_oracle_is_the_live_llama_cpp_and_survives_its_aborts(llama_build: Build) -> None:
    reference = Reference.from_gguf(tokconf.vocab_path("qwen2"))
    with tokconf.oracle("qwen2") as llama:
        for text in ("Hello world", "<|im_start|>user\n\u3000x", " \t\n  12345"):
            data = text.encode()
            for add_special, parse_special in ((False, False), (True, True)):
                expected = reference.encode(data, add_special, parse_special)
                assert llama.encode(data, add_special, parse_special) == expected
        with pytest.raises(tokconf.Refused):
            llama.encode(b"\xf4\x90\x80\x80", False, False)  # llama.cpp b11192 aborts: the worker, not us
        assert llama.encode(b"after", False, False) == reference.encode(b"after", False, False)
        assert llama.facts["n_tokens"] == 151936 and llama.token_to_piece(9707) == b"Hello"
        assert llama.detokenize(llama.encode(b"round trip", False, False)) == b"round trip"
    with pytest.raises(tokconf.TokconfError, match="does not exist"), tokconf.oracle(Path("missing.gguf")):
        pass


def test_the_oracle_fixture_in_a_ports_own_tests(sandbox: pytest.Pytester, llama_build: Build) -> None:
    sandbox.makepyfile(
        test_port="""
        import pytest
        import tokconf

        def test_same_oracle_per_vocab(tokconf_oracle):
            assert tokconf_oracle("gpt-2") is tokconf_oracle("gpt-2")
            assert tokconf_oracle("gpt-2").encode(b"Hello world", False, False) == [15496, 995]

        def test_refusal(tokconf_oracle):
            with pytest.raises(tokconf.Refused):
                tokconf_oracle("gpt-2").encode(b"\\xf4\\x90\\x80\\x80", False, False)
        """
    )
    result = sandbox.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_the_reference_is_no_part_of_the_public_api() -> None:
    """`tokconf_reference` is tokconf's own oracle stand-in, shipped beside it; the API never hands it out."""
    assert not any(getattr(tokconf, name) is tokconf_reference for name in tokconf.__all__)


@pytest.mark.conformance
def test_jobs_check_recordings_in_parallel_with_the_same_verdicts(llama_build: Build, tmp_path: Path) -> None:
    """`jobs=2` (`tokconf check --jobs 2`): every result, cause and expected-failure match as one process
    finds them, in the same order."""
    xfail = tmp_path / "xfail.yaml"
    entries = ["{case: gpt-2/plain/whitespace/*, reason: known}", "{case: qwen2/bos/none, reason: stale}"]
    xfail.write_text("expected_failures:\n" + "".join(f"  - {entry}\n" for entry in entries))
    runs = [
        tokconf.check(
            "fake_impls:two_bugs", ["bundled/gpt-2.yaml", "bundled/qwen2.yaml"], xfail=xfail, explain=True, jobs=jobs
        )
        for jobs in (1, 2)
    ]
    one, two = ([(r.vocab, r.section, r.case, r.verdict, r.actual) for r in run.results] for run in runs)
    assert one == two and any(v is tokconf.Verdict.XFAILED for *_, v, _ in one)
    assert [(c.kind, c.label, len(c.cases)) for c in runs[0].causes] == [
        (c.kind, c.label, len(c.cases)) for c in runs[1].causes
    ]
    assert runs[0].decision == runs[1].decision
    assert runs[1].decision.warnings == ("expected-failure entry 'qwen2/bos/none' matched no checked case",)


def exits_hard(path: Path) -> object:
    """A port whose loading ends its process outright, as a crash in C would."""
    os._exit(0)


def test_a_port_that_ends_its_process_costs_its_own_worker_only(llama_build: Build) -> None:
    """By default the port's loading ends its worker, and every case of it is an error, the run going
    on; run in the checking processes (`in_process`), it takes one down and the run has no verdict."""
    recordings = ["bundled/gpt-2.yaml", "bundled/qwen2.yaml"]
    for jobs in (1, 2):
        run = tokconf.check("test_api:exits_hard", recordings, modes=["plain"], jobs=jobs)
        assert not run.passed and {r.verdict for r in run.results} == {tokconf.Verdict.ERROR}
        assert "the program exited with status 0" in run.results[0].reason
    with pytest.raises(tokconf.TokconfError, match="died: no verdict") as error:
        tokconf.check("test_api:exits_hard", recordings, jobs=2, in_process=True)
    assert "run it without --in-process" in str(error.value)


def test_a_live_llama_cpp_agrees_with_a_recorded_load_refusal(llama_build: Build) -> None:
    """llama.cpp@11192 as the implementation, over a synthetic vocabulary b11192 refuses to load (an
    unknown pre name) and one it loads: the refusal agrees with the recording's, in one process or two."""
    recordings = ["bundled/synthetic/pre-glm5.yaml", "bundled/gpt-2.yaml"]
    for jobs in (1, 2):
        run = tokconf.check("llama.cpp@11192", recordings, modes=["plain"], jobs=jobs)
        assert run.passed, run.decision.reasons
        refused = [r for r in run.results if r.vocab == "pre-glm5"]
        assert refused and {r.verdict for r in refused} == {tokconf.Verdict.PASSED}
        assert "llama.cpp refuses to load it too (unknown pre-tokenizer type: 'glm5')" in refused[0].reason


def test_an_error_crosses_a_process_boundary_with_its_words() -> None:
    from tokconf.oracles.libllama_client import VocabRefused

    error = VocabRefused(11192, Path("x.gguf"), "unknown pre-tokenizer type: 'glm5'")
    again = pickle.loads(pickle.dumps(error))
    assert isinstance(again, tokconf.TokconfError) and str(again) == str(error)


def test_an_oracle_is_asked_inside_its_block(llama_build: Build) -> None:
    with tokconf.oracle("gpt-2") as llama:
        answers = llama.encode_many([(b"Hello", False, False), (b"\xf4\x90\x80\x80", False, False)])
        assert answers[0] == [15496] and isinstance(answers[1], tokconf.Refusal) and answers[1].reason
    with pytest.raises(tokconf.TokconfError, match="this oracle is closed"):
        llama.encode(b"Hello", False, False)
