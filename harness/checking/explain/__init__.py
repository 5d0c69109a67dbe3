"""`--explain`: a port's failures as a few named causes (`explainer`), each a mechanism that is
replayed to confirm every case under it (`kinds`, `model`); `causes` writes them as JSON."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...builds.build import require_build
from ...builds.pins import DEFAULT_BUILD
from ...core.errors import TokconfError
from ...core.facts import VocabFacts
from ...core.outcome import MODES, Refusal
from ...implementations.base import Implementation, VocabInfo
from ...implementations.python import PortBroke
from ...oracles.libllama_client import LibllamaOracle
from ..contract import Standing, Verdict
from ..engine import CheckedFile
from .explainer import Cause, Explainer, Explanation, explained_failures
from .kinds import Kind, LoadRefusal, Stage
from .model import Backend, Judge, Model, Mutants, edges_of, reference_backend

__all__ = ["Cause", "Explanation", "Kind", "explain_file", "reference_tokenizer"]

REFERENCE_BUILD = DEFAULT_BUILD  # the build tokconf_reference is token-identical to
FILE_SPECIAL_TYPES = (2, 3, 4)  # GGUF token types unknown, control, user-defined


def special_texts(vocab: Path, facts: VocabFacts, reference: Any) -> dict[int, bytes]:
    """Every token a port may take for a special one: llama.cpp's control and user-defined tokens
    (the facts), the reference's unknown ones (`<unk>`, cut out with parse_special), and what the
    file itself types control, user-defined or unknown (llama.cpp makes a few of those normal, as
    phi-3's `</s>`, which libraries reading the file's types still match)."""
    from tokconf_reference.gguf_reader import read_tokenizer_fields

    texts = dict(facts["special_texts"])
    if reference is not None:
        texts |= {t: text for t, text in reference.special_bytes.items() if text}
    fields = read_tokenizer_fields(vocab)
    for token, kind in enumerate(fields.get("tokenizer.ggml.token_type") or []):
        if kind in FILE_SPECIAL_TYPES and token not in texts:
            text = fields["tokenizer.ggml.tokens"][token].encode("utf-8", "surrogateescape")
            if text:
                texts[token] = text
    return texts


def reference_tokenizer(vocab: Path) -> Any:
    """The reference tokenizer of a vocab, or None where it cannot read it."""
    from tokconf_reference import Tokenizer, UnsupportedVocab
    from tokconf_reference.gguf_reader import GGUFError

    try:
        return Tokenizer.from_gguf(vocab)
    except (UnsupportedVocab, GGUFError):
        return None


@contextmanager
def judge_of(build: int, vocab: Path, reference: Any) -> Iterator[Backend]:
    """llama.cpp's answers for new inputs: the reference only for recordings of its own build, else
    the live llama.cpp of the recording's build (in its own process: it may abort)."""
    if build == REFERENCE_BUILD and reference is not None:
        yield reference_backend(reference)
        return
    with LibllamaOracle(require_build(build), vocab) as oracle:
        yield oracle.tokenize_many


def explain_file(checked: CheckedFile, impl: Implementation) -> Explanation:
    """The causes of one checked recording's failures, asking the implementation again (a new
    session) and llama.cpp's judge for the inputs shrinking makes. Explaining never ends a run: what
    goes wrong (the recording's build is not built, the port cannot be opened twice, …) is the
    explanation's `error`, and every failure is then listed as unexplained."""
    failures = explained_failures(checked.results)
    if not failures:
        return Explanation([], [])
    recording = checked.recording
    if failures[0].standing is Standing.LOAD_REFUSED:  # one reason for every case: nothing to shrink
        first = failures[0]
        refusal = LoadRefusal(Kind.LOAD_REFUSED, Stage.VERDICT, reason=first.reason)
        cause = Cause(recording.vocab_name, refusal, first.data, first.section, first.expected,  # type: ignore[arg-type]
                      Refusal(first.reason), cases=failures)  # fmt: skip
        return Explanation([cause], [])
    try:
        info = VocabInfo.of(checked.vocab, recording.vocab_name, recording.vocab_sha256, recording.facts)
        reference = reference_tokenizer(checked.vocab)
        mutable = reference if recording.build == REFERENCE_BUILD else None  # mechanisms replayed on b11192 only
        session = impl.open(info)
        try:
            with judge_of(recording.build, checked.vocab, reference) as backend:
                model = Model(Judge(backend), Mutants(mutable), edges_of(recording.facts))
                specials = special_texts(checked.vocab, recording.facts, reference)
                passing = [r for r in checked.results if r.verdict is Verdict.PASSED and r.section in MODES]
                explainer = Explainer(recording.vocab_name, recording.facts, session, model, specials, passing)
                return explainer.explain(failures)
        finally:
            session.close()
    except (Exception, PortBroke) as error:  # the failures stay, unexplained, with the reason
        what = f"{error}" if isinstance(error, TokconfError) else f"{type(error).__name__}: {error}"
        return Explanation([], failures, error=f"could not explain {recording.vocab_name}: {what}")
