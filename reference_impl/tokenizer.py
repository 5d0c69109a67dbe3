"""The reference `Tokenizer`: a GGUF vocabulary, encoded as llama.cpp b11192 encodes it.

Supported so far: byte-level BPE (`tokenizer.ggml.model = gpt2`) with the pre-tokenizers of the
BPE test vocabularies llama.cpp ships (`bpe.PRE_REGEXES`). Other models and pre-tokenizers raise
`UnsupportedVocab` — never a silent wrong answer. `tokconf check` counts those as unsupported.

The steps follow `llama_vocab::impl::tokenize`: special-token texts are cut out first
(`tokenizer_st_partition`: longest text first; CONTROL and UNKNOWN ones only with parse_special;
LSTRIP/RSTRIP attributes eat ASCII whitespace beside them), each remaining fragment is
pre-tokenized and merged, and with add_special BOS and EOS are added as the vocabulary says.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reference_impl.bpe import PRE_REGEXES, BytePairEncoder
from reference_impl.gguf_reader import read_tokenizer_fields
from reference_impl.unicode import decode

# enum llama_token_type (GGUF tokenizer.ggml.token_type) -> enum llama_token_attr bits.
ATTR_UNDEFINED, ATTR_UNKNOWN, ATTR_UNUSED, ATTR_NORMAL, ATTR_CONTROL, ATTR_USER_DEFINED, ATTR_BYTE = (
    0, 1, 2, 4, 8, 16, 32,
)  # fmt: skip
ATTR_LSTRIP, ATTR_RSTRIP = 128, 256
TYPE_TO_ATTR = {0: ATTR_UNDEFINED, 1: ATTR_NORMAL, 2: ATTR_UNKNOWN, 3: ATTR_CONTROL, 4: ATTR_USER_DEFINED}
TYPE_TO_ATTR |= {5: ATTR_UNUSED, 6: ATTR_BYTE}

# tokenizer.ggml.pre -> the pre-tokenizer type it selects in llama_vocab::impl::load (shipped ones).
PRE_TYPES: dict[str | None, str] = {
    None: "default", "default": "default",
    "llama3": "llama3", "llama-v3": "llama3", "llama-bpe": "llama3", "falcon3": "llama3",
    "gpt-2": "gpt2", "mpt": "gpt2", "phi-2": "gpt2",
    "starcoder": "starcoder", "refact": "starcoder", "command-r": "starcoder", "smollm": "starcoder",
    "qwen2": "qwen2", "deepseek-r1-qwen": "qwen2", "stablelm2": "qwen2",
    "qwen35": "qwen35",
    "falcon": "falcon",
    "deepseek-llm": "deepseek-llm",
    "deepseek-coder": "deepseek-coder",
}  # fmt: skip
ADD_BOS_BY_DEFAULT = {"llama3"}
IGNORE_MERGES = {"llama3"}

# Texts llama.cpp marks end-of-generation, and so CONTROL (llama_vocab::impl::load, b11192).
EOG_TEXTS = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
    "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
    "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~[",
}  # fmt: skip
# Fill-in-the-middle roles found by text when the GGUF names no id; pad, repo and separator end
# generation. Each role takes one token; all of them are made CONTROL.
FIM_TEXTS = {
    "pre": ("<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>",
            "<|prefix|>"),
    "suf": ("<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>",
            "<|suffix|>"),
    "mid": ("<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>",
            "<|middle|>"),
    "pad": ("<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"),
    "rep": ("<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"),
    "sep": ("<|file_sep|>",),
}  # fmt: skip
ASCII_SPACE = b" \t\n\x0b\x0c\r"  # C isspace() in the "C" locale


class UnsupportedVocab(NotImplementedError):
    """The reference does not implement this model or pre-tokenizer (yet)."""


class Tokenizer:
    """One vocabulary; `encode` answers as `llama_tokenize` does."""

    def __init__(self, fields: dict[str, Any]) -> None:
        model = fields.get("tokenizer.ggml.model")
        pre = fields.get("tokenizer.ggml.pre")
        if model != "gpt2":
            raise UnsupportedVocab(f"tokenizer model {model!r} is not supported by the reference yet")
        if pre not in PRE_TYPES:
            raise UnsupportedVocab(f"pre-tokenizer {pre!r} is not supported by the reference yet")
        self.pre_type = PRE_TYPES[pre]
        self.tokens: list[str] = fields["tokenizer.ggml.tokens"]
        types = fields.get("tokenizer.ggml.token_type") or [1] * len(self.tokens)
        self.attrs = [TYPE_TO_ATTR.get(t, ATTR_UNDEFINED) for t in types]
        self.bos_id = int(fields.get("tokenizer.ggml.bos_token_id", 11))
        self.eos_id = int(fields.get("tokenizer.ggml.eos_token_id", 11))
        self.add_bos = bool(fields.get("tokenizer.ggml.add_bos_token", self.pre_type in ADD_BOS_BY_DEFAULT))
        self.add_eos = bool(fields.get("tokenizer.ggml.add_eos_token", False))
        self.eog_ids = self._end_of_generation(fields)
        self.encoder = BytePairEncoder(
            self.tokens, fields.get("tokenizer.ggml.merges", []), PRE_REGEXES[self.pre_type],
            self.pre_type in IGNORE_MERGES,
        )  # fmt: skip
        special = [i for i, a in enumerate(self.attrs) if a & (ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN)]
        # cache_special_tokens: longest text first (std::sort; ties here by id).
        self.specials = sorted(special, key=lambda i: -len(self.tokens[i].encode("utf-8", "surrogateescape")))
        self.special_bytes = {i: self.tokens[i].encode("utf-8", "surrogateescape") for i in self.specials}

    @classmethod
    def from_gguf(cls, path: Path | str) -> Tokenizer:
        """Load a vocabulary: only the tokenizer keys of the GGUF header are read."""
        return cls(read_tokenizer_fields(Path(path)))

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    def token_type(self, token: int) -> int:
        """The llama_token_attr bits of a token (after llama.cpp's by-text overrides)."""
        return self.attrs[token]

    def _end_of_generation(self, fields: dict[str, Any]) -> list[int]:
        """special_eog_ids: FIM pad/repo/separator, the end-of-generation texts, and EOS."""
        eog = {self.eos_id} if 0 <= self.eos_id < len(self.tokens) else set()
        by_text = {text: token for token, text in enumerate(self.tokens)}
        for role, texts in FIM_TEXTS.items():
            token = fields.get(f"tokenizer.ggml.fim_{role}_token_id")
            if token is None:
                found = [by_text[text] for text in texts if text in by_text]
                if len(found) > 1:  # llama.cpp takes the first in hash-map order: not reproducible
                    raise UnsupportedVocab(f"several FIM {role} candidates {found}: llama.cpp's pick is hash order")
                token = found[0] if found else None
                if token is not None:
                    self.attrs[token] |= ATTR_CONTROL
            if token is not None and role in ("pad", "rep", "sep"):
                eog.add(int(token))
        for token, text in enumerate(self.tokens):
            if text in EOG_TEXTS:
                eog.add(token)
                self.attrs[token] |= ATTR_CONTROL  # "control-looking token ... will be overridden"
        return sorted(eog)

    def encode(self, data: str | bytes, add_special: bool = False, parse_special: bool = False) -> list[int]:
        """Token ids; raises `reference_impl.unicode.InvalidCodepoint` where llama.cpp aborts."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        out: list[int] = []
        if add_special and self.add_bos:
            out.append(self.bos_id)
        for fragment in self._partition(raw, parse_special):
            if isinstance(fragment, int):
                out.append(fragment)
            else:
                out.extend(self.encoder.encode(decode(fragment)))
        if add_special and self.add_eos:
            out.append(self.eos_id)
        return out

    def _partition(self, raw: bytes, parse_special: bool) -> list[bytes | int]:
        """tokenizer_st_partition: cut special-token texts out of the raw text fragments."""
        fragments: list[bytes | int] = [raw] if raw else []
        for token in self.specials:
            if not parse_special and self.attrs[token] & (ATTR_CONTROL | ATTR_UNKNOWN):
                continue
            text = self.special_bytes[token]
            if not text:
                continue
            attr = self.attrs[token]
            result: list[bytes | int] = []
            for fragment in fragments:
                if isinstance(fragment, int) or text not in fragment:
                    result.append(fragment)
                    continue
                rest = fragment
                while True:
                    at = rest.find(text)
                    if at < 0:
                        if rest:
                            result.append(rest)
                        break
                    left = rest[:at]
                    if attr & ATTR_LSTRIP:
                        left = left.rstrip(ASCII_SPACE)
                    if left:
                        result.append(left)
                    result.append(token)
                    rest = rest[at + len(text) :]
                    if attr & ATTR_RSTRIP:
                        rest = rest.lstrip(ASCII_SPACE)
            fragments = result
        return fragments


def from_gguf(path: Path) -> Tokenizer:
    """The `module:factory` entry point for `tokconf check` and the `reference` implementation."""
    return Tokenizer.from_gguf(path)
