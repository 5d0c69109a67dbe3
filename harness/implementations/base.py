"""The interface every implementation under test has, and what it is told about a vocabulary.

An `Implementation` opens a `Session` per vocabulary; `Session.encode_many` answers many inputs at
once, so a check spends its time in the implementation, not in the harness. An answer is ids or a
`Refusal` whose kind says whether the implementation declined the input (judged against llama.cpp),
cannot be given it at all (unsupported), or broke (an error).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..core.facts import ExposedFacts, VocabFacts
from ..core.outcome import InputClass, Outcome, Request
from ..core.sandbox import Confiner


class Unsupported(Exception):
    """The implementation declares that it does not handle this vocabulary, or this input: counted as
    unsupported, never judged and never passed (docs/checking.md, "The verdict contract").

    Raised by a factory for a whole vocabulary, or by `encode` for one input it cannot be given, with
    the class of that input (`input_class`: an `InputClass` or its name, e.g. `"invalid-utf8"` for a
    `str` API handed invalid UTF-8). tokconf checks the class on the input: one that does not fit is
    an error, and only `other` (the default for an input that is valid UTF-8 without NUL) counts
    against coverage. The message is shown as the port's words beside the class. Nothing else is a
    declaration: any other exception a factory or `encode` raises is an error."""

    def __init__(self, *args: object, input_class: InputClass | str | None = None) -> None:
        super().__init__(*args)
        named = InputClass.named(input_class) if isinstance(input_class, str) else input_class
        if isinstance(input_class, str) and named is None:
            known = ", ".join(c.value for c in InputClass)
            raise ValueError(f"Unsupported(input_class={input_class!r}): not an input class ({known})")
        self.input_class = named


class LoadRefused(Unsupported):
    """A llama.cpp (a build, a library, or a program that says it wraps one) refused to load the
    vocabulary. Where the recorded build loaded it, that is the most important difference there is
    between the two llama.cpps: a failure, never "not claimed"."""


class Refused(Exception):
    """The implementation refuses this input, as llama.cpp does where it aborts (b11192: a code point
    above U+10FFFF in the BPE and WordPiece tokenizers, `unicode_cpt_from_utf8`'s invalid_argument).

    Judged: it passes where the recording holds llama.cpp's refusal, and fails where llama.cpp gave
    ids. Any other exception from `encode` is an error, never a refusal: a bug must not pass where
    llama.cpp happens to refuse."""


class Tokenizer(Protocol):
    """A port as tokconf checks it: what a factory (`load(gguf_path) -> Tokenizer`) returns.

    `encode` is all that is required: the ids llama.cpp's `llama_tokenize` gives for the bytes, with
    `add_special` (BOS/EOS as the vocabulary says) and `parse_special` (special-token texts in the
    input become their ids). It raises `Unsupported` for an input it cannot be given and `Refused`
    where it refuses as llama.cpp does; anything else it raises is an error.

    Optional, and checked when present: the facts `add_bos`, `add_eos` (bool), `bos_id`, `eos_id`
    (int, -1 for none) and `eog_ids` (a set of ints), as llama.h reports them; and decoding, the
    `Decoding` protocol's three members."""

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]: ...


class Decoding(Tokenizer, Protocol):
    """A port that also decodes: its pieces and detokenization are checked against the recording's
    decoding (`llama_token_to_piece` and `llama_detokenize`)."""

    n_tokens: int

    def token_to_piece(self, token: int, special: bool) -> bytes: ...

    def decode(self, ids: list[int], remove_special: bool, unparse_special: bool) -> bytes: ...


class Broken(Exception):
    """The implementation broke while loading a vocabulary (it exited, crashed, raised anything but
    `Unsupported`): every case of that vocabulary is an error, never unsupported and never passed."""


class Decoder(Protocol):
    """Decoding as llama.cpp does it: `llama_token_to_piece` of every id, and `llama_detokenize`."""

    def pieces(self, special: bool) -> list[bytes]: ...

    def detokenize(self, ids: list[int], remove_special: bool, unparse_special: bool) -> bytes: ...

    def detokenize_many(self, requests: list[Detokenize]) -> list[bytes]:
        """Many `detokenize` calls at once (a worker answers them in one request line)."""
        ...


Detokenize = tuple[list[int], bool, bool]  # ids, remove_special, unparse_special: one llama_detokenize call


class Session(Protocol):
    """One vocabulary loaded into an implementation. `max_input_bytes`: the input length limit it
    declared (inputs longer than that it may decline as `too-long`), or None."""

    @property
    def max_input_bytes(self) -> int | None: ...

    def encode_many(self, requests: list[Request], llama_aborts: frozenset[int] = frozenset()) -> list[Outcome]:
        """The answers to `requests`. `llama_aborts`: the indices of the requests on which llama.cpp
        aborts (the recording says so), where an implementation whose process dies agrees with it: a
        process-backed session restarts it without counting that toward giving the vocabulary up."""
        ...

    def decoder(self) -> Decoder | None:
        """Its decoding, if it exposes one (checked against decoding recordings)."""
        ...

    def facts(self) -> ExposedFacts:
        """The facts it exposes; the others are not checked (and the report says so)."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class VocabInfo:
    """What an implementation is told about the vocabulary it loads: enough for an adapter that bundles
    its own vocabularies to tell which one is meant (llama-spm and phi-3 are both spm/llama/default)."""

    path: Path
    vocab_type: str
    model: str | None
    pre: str | None
    name: str = ""  # the recording's vocab name
    sha256: str | None = None  # of the GGUF file
    n_tokens: int | None = None
    special_ids: dict[str, int] = field(default_factory=dict)  # bos, eos, …: -1 when absent

    @classmethod
    def of(cls, path: Path, name: str, sha256: str | None, facts: VocabFacts) -> VocabInfo:
        """From llama.cpp's facts of the vocab (a recording's, or the live oracle's)."""
        return cls(
            path, facts["vocab_type"], facts.get("model"), facts.get("pre"),
            name, sha256, facts["n_tokens"], dict(facts["special_ids"]),
        )  # fmt: skip


class Implementation(Protocol):
    """`contained`: its code cannot reach the process that judges it (a worker, a `cmd:` program, a
    llama.cpp worker), so nothing it does changes a verdict; False only for a Python implementation
    run in tokconf's process (`--in-process`), which the verdict line says. `confiner`: how its
    processes are held (`tokconf.core.sandbox`: sandboxed, kept, or in process)."""

    @property
    def name(self) -> str: ...

    contained: bool

    @property
    def confiner(self) -> Confiner: ...

    def open(self, vocab: VocabInfo) -> Session: ...

    def close(self) -> None: ...
