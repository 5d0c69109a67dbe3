"""`--explain`: a port's failures as a few named causes (`explainer`), each a mechanism that is
replayed to confirm every case under it (`kinds`, `model`); `causes` writes them as JSON."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.check.engine import CheckedFile
from harness.check.explain.explainer import Cause, Explainer, Explanation, explained_failures
from harness.check.explain.kinds import Kind
from harness.check.explain.model import Backend, Judge, Model, Mutants, reference_backend
from harness.core.facts import VocabFacts
from harness.implementations.base import Implementation, VocabInfo
from harness.llama.build import require_build
from harness.llama.pins import DEFAULT_BUILD
from harness.oracle.client import LibllamaOracle

__all__ = ["Cause", "Explanation", "Kind", "explain_file", "reference_tokenizer"]

REFERENCE_BUILD = DEFAULT_BUILD  # the build reference_impl is token-identical to
FILE_SPECIAL_TYPES = (2, 3, 4)  # GGUF token types unknown, control, user-defined


def special_texts(vocab: Path, facts: VocabFacts, reference: Any) -> dict[int, bytes]:
    """Every token a port may take for a special one: llama.cpp's control and user-defined tokens
    (the facts), the reference's unknown ones (`<unk>`, cut out with parse_special), and what the
    file itself types control, user-defined or unknown (llama.cpp makes a few of those normal, as
    phi-3's `</s>`, which libraries reading the file's types still match)."""
    from reference_impl.gguf_reader import read_tokenizer_fields

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
    from reference_impl import Tokenizer, UnsupportedVocab
    from reference_impl.gguf_reader import GGUFError

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
    session) and llama.cpp's judge for the inputs shrinking makes."""
    failures = explained_failures(checked.results)
    if not failures:
        return Explanation([], [])
    recording = checked.recording
    info = VocabInfo.of(checked.vocab, recording.vocab_name, recording.vocab_sha256, recording.facts)
    reference = reference_tokenizer(checked.vocab)
    session = impl.open(info)
    try:
        with judge_of(recording.build, checked.vocab, reference) as backend:
            model = Model(Judge(backend), Mutants(reference))
            specials = special_texts(checked.vocab, recording.facts, reference)
            return Explainer(recording.vocab_name, recording.facts, session, model, specials).explain(failures)
    finally:
        session.close()
