"""What a vocabulary is besides its ids, as llama.cpp reports it, and where a recording came from.

`VocabFacts` is what the oracle reads through llama.h (`tokconf.oracles.libllama.Vocab.facts`) and
every recording stores under `facts:`. `Fact` is the part of it an implementation is checked on:
one table of names, used by the check engine, every implementation adapter and the line protocol.
`Provenance` is a recording's `provenance:` block.
"""

from __future__ import annotations

import base64
import enum
import json
from typing import Any, NotRequired, TypedDict


class VocabFacts(TypedDict):
    """The vocab facts of one GGUF file as llama.cpp loads it (vocab_only)."""

    vocab_type: str  # llama_vocab_type: none, spm, bpe, wpm, ugm, rwkv, plamo2, test
    model: str | None  # tokenizer.ggml.model
    pre: str | None  # tokenizer.ggml.pre
    n_tokens: int
    add_bos: bool
    add_eos: bool
    add_sep: bool
    special_ids: dict[str, int]  # bos, eos, eot, sep, nl, pad, mask, fim_*: -1 when absent
    eog_ids: list[int]  # llama_vocab_is_eog
    token_attributes: dict[int, str]  # `control|lstrip`, only tokens that are not just `normal`
    special_texts: dict[int, bytes]  # the text of every control and user-defined token
    load_error: NotRequired[str]  # llama.cpp refused to load the vocab (`refused_facts`)


def refused_facts(reason: str) -> VocabFacts:
    """The facts of a vocabulary llama.cpp refuses to load: none but the reason, which every case's
    outcome repeats (a pre name the build does not know shows up in `tokconf diff` this way)."""
    return {
        "vocab_type": "none", "model": None, "pre": None, "n_tokens": 0, "add_bos": False, "add_eos": False,
        "add_sep": False, "special_ids": {"bos": -1, "eos": -1}, "eog_ids": [], "token_attributes": {},
        "special_texts": {}, "load_error": reason,
    }  # fmt: skip


def facts_to_json(facts: VocabFacts) -> bytes:
    """The worker's wire form: JSON, with int keys as strings and texts in base64."""
    wire: dict[str, Any] = dict(facts)
    wire["token_attributes"] = {str(k): v for k, v in facts["token_attributes"].items()}
    wire["special_texts"] = {str(k): base64.b64encode(v).decode() for k, v in facts["special_texts"].items()}
    return json.dumps(wire).encode()


def facts_from_json(raw: bytes) -> VocabFacts:
    """The inverse of `facts_to_json`."""
    wire = json.loads(raw)
    wire["token_attributes"] = {int(k): v for k, v in wire["token_attributes"].items()}
    wire["special_texts"] = {int(k): base64.b64decode(v) for k, v in wire["special_texts"].items()}
    facts: VocabFacts = wire
    return facts


class Fact(enum.Enum):
    """A fact an implementation may expose and is then checked on; the value is its name in reports,
    the line protocol and the recordings' `special_ids` where it is one of them."""

    ADD_BOS = "add_bos"
    ADD_EOS = "add_eos"
    ADD_SEP = "add_sep"  # llama_vocab_get_add_sep: WordPiece (and a few BPE pre names) add [SEP]
    BOS = "bos"
    EOS = "eos"
    EOG_IDS = "eog_ids"

    @property
    def attribute(self) -> str:
        """The attribute a Python implementation exposes it as (the reference's names)."""
        return {Fact.BOS: "bos_id", Fact.EOS: "eos_id"}.get(self, self.value)

    def recorded(self, facts: VocabFacts) -> bool | int | list[int]:
        """Its value in llama.cpp's facts."""
        if self is Fact.ADD_BOS:
            return facts["add_bos"]
        if self is Fact.ADD_EOS:
            return facts["add_eos"]
        if self is Fact.ADD_SEP:
            return facts["add_sep"]
        if self is Fact.EOG_IDS:
            return sorted(facts["eog_ids"])
        return facts["special_ids"][self.value]

    def exposed(self, value: object) -> bool | int | list[int]:
        """An implementation's value of this fact, typed as llama.cpp's (`llama_vocab_get_add_bos` is a
        bool, `llama_vocab_bos` a token id); a ValueError for anything else. One rule for every front
        end: in Python `True == 1` and `1.0 == 1`, so an untyped comparison would pass `1` for a flag."""
        if self in (Fact.ADD_BOS, Fact.ADD_EOS, Fact.ADD_SEP):
            if isinstance(value, bool):
                return value
            raise ValueError(f"fact {self.value} must be true or false, not {value!r}")
        if self in (Fact.BOS, Fact.EOS):
            if is_token_id(value, allow_none=True):
                return value  # type: ignore[return-value]
            raise ValueError(f"fact {self.value} must be a token id (-1 for none), not {value!r}")
        if isinstance(value, list | tuple | set | frozenset) and all(is_token_id(i) for i in value):
            return sorted(value)
        raise ValueError(f"fact eog_ids must be a list of token ids, not {str(value)[:200]}")


def is_token_id(value: object, allow_none: bool = False) -> bool:
    """An int that is not a bool, non-negative (`allow_none`: or -1, llama.cpp's LLAMA_TOKEN_NULL)."""
    return type(value) is int and (value >= 0 or (allow_none and value == -1))


def are_token_ids(values: list[object]) -> bool:
    """`is_token_id` of every value, at C speed (a worker's answers hold millions of ids): only ints
    that are not bools (`type`, not `isinstance`), none negative."""
    return set(map(type, values)) <= {int} and (not values or min(values) >= 0)  # type: ignore[type-var,operator]


ExposedFacts = dict[Fact, bool | int | list[int]]


RECORDING_SCHEMA = "tokconf-recording/1"  # docs/recording-format.md


class LlamaCppProvenance(TypedDict):
    build: int
    source: str  # pypi-sdist, git, folder
    origin: str
    sha256: str | None
    commit: str | None


class BaseVocab(TypedDict):
    build: int
    file: str
    sha256: str


class SynthProvenance(TypedDict):
    """How a synthetic vocab file was made (`tokconf.synth.recipes`)."""

    recipe: str
    family: str  # pre, model, variant
    version: int  # SYNTH_VERSION
    why: str
    base: BaseVocab  # the shipped file it derives from


class VocabProvenance(TypedDict):
    name: str
    file: str  # a bare file name (`is_bare_file_name`), looked for in --vocab-dir or the cache only
    sha256: str
    model: str | None
    pre: str | None
    synthetic: NotRequired[SynthProvenance]


MAX_FILE_NAME = 255  # bytes, as most file systems allow


def is_bare_file_name(name: object) -> bool:
    """A file name with no folder in it: no `/` or `\\`, no `..`, no drive (`C:`), no control character
    (NUL included), at most MAX_FILE_NAME bytes. A recording names its vocab file this way, so a
    recording from elsewhere cannot make tokconf open, hash or hand an implementation any other file
    (`/etc/shadow`, `../../x`): the name is looked for only in the vocab folder or tokconf's cache."""
    return (
        isinstance(name, str)
        and 0 < len(name) <= MAX_FILE_NAME
        and len(name.encode("utf-8", "surrogatepass")) <= MAX_FILE_NAME
        and ".." not in name
        and name != "."
        and not any(c in "/\\:" or ord(c) < 0x20 or ord(c) == 0x7F for c in name)
    )


class FuzzProvenance(TypedDict):
    seed: int
    generator: int
    count: int


class CampaignProvenance(TypedDict):
    """A fuzz campaign that added cases to a found recording (`tokconf.fuzz.findings`)."""

    date: str
    implementation: str
    seed: int


class CorpusSample(TypedDict):
    """Which corpus cases a recording holds: of those up to `max_bytes` long, every `every`th."""

    every: int
    max_bytes: int


class Provenance(TypedDict):
    """Everything that decided a recording's content (docs/recording-format.md). The file's digest
    (`provenance.digest`) is a property of its bytes, checked on load and not kept in memory."""

    llama_cpp: LlamaCppProvenance
    backend: str
    vocab: VocabProvenance
    corpus: dict[str, str]  # corpus file name -> sha256
    corpus_sample: NotRequired[CorpusSample]  # only a sample of the corpus was recorded (synthetic vocabs)
    upstream_tests: dict[str, str]  # .inp file name -> sha256
    fuzz: FuzzProvenance
    harness: str
    modes: dict[str, dict[str, bool]]
    campaigns: NotRequired[list[CampaignProvenance]]  # found recordings only
