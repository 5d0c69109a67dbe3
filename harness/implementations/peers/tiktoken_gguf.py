"""A peer under test: a `tiktoken.Encoding` built from a byte-level BPE GGUF (`--impl tiktoken-gguf`,
`pip install -e '.[peers]'`).

tiktoken encodes with a split regex, a table `{token bytes: rank}` and a table of special texts. From a
GGUF whose `tokenizer.ggml.model` is `gpt2` it gets:

- `mergeable_ranks`: every normal and byte token (token_type 1 and 6), its text turned back into bytes
  through GPT-2's byte-to-unicode alphabet, ranked by its id. tiktoken merges the adjacent pair whose
  concatenation has the lowest rank, and takes a whole regex piece that is a token as that token: it
  reads no merge list, so where a GGUF's merge order is not its id order the two disagree. That is a
  limitation of building tiktoken from a GGUF, measured by the check, not corrected here (in the four
  bundled vocabularies it loads, each merge's result id grows with the merge's position, so there the
  ranks are the merge order). A vocabulary tiktoken cannot be given is declined: two tokens with the
  same bytes, a normal token outside the alphabet, a single byte with no token (tiktoken's Rust core
  panics on it), a token typed unknown or unused (neither a rank nor a special text: its id would be
  a hole `decode_single_token_bytes` raises on).
- `special_tokens`: every control and user-defined token (token_type 3 and 4), by its text.
- `pat_str`: the split regex published for the model, chosen by `tokenizer.ggml.pre`. Supported:
  - `gpt-2`: tiktoken's own GPT-2 pattern (`tiktoken_ext.openai_public.r50k_pat_str`, which tiktoken
    states is equivalent to the original release's);
  - `llama3`, `llama-v3`, `llama-bpe`: `Tokenizer.pat_str` of Meta's `llama/tokenizer.py`
    (meta-llama/llama3), the pattern Llama 3 is tokenized with through tiktoken;
  - `qwen2`: `PRETOKENIZE_REGEX` of transformers' `models/qwen2/tokenization_qwen2.py`, the same as
    `PAT_STR` of Qwen's tiktoken-based `tokenization_qwen.py`;
  - `qwen35`: `PRETOKENIZE_REGEX` of transformers' `models/qwen3_5/tokenization_qwen3_5.py` (marks,
    `\\p{M}`, join letter runs).
  Any other pre-tokenizer (or none) is declined: llama.cpp's regexes for it are llama.cpp's, not a
  published pattern a tiktoken user would have. Qwen's own wrappers NFC-normalize the text first; a
  tiktoken `Encoding` has no normalizer and none is applied (llama.cpp applies none either).

Modes, as a tiktoken user writes them:

- `parse_special=True` is `encode(text, allowed_special="all")`: every control and user-defined text
  is its token;
- `parse_special=False` is `encode(text, disallowed_special=())`: those texts are ordinary text (so
  user-defined tokens, which llama.cpp matches even then, are not);
- `add_special=True` puts the BOS id in front by hand, as Meta's `Tokenizer.encode(bos=True)` does,
  when the GGUF's `tokenizer.ggml.add_bos_token` says so or, without that key, for the Llama 3
  pre-tokenizers (whose models are used with a BOS; llama.cpp adds it for them too), and the EOS id
  at the end when `tokenizer.ggml.add_eos_token` says so. tiktoken itself adds nothing. Where one
  is to be added and the GGUF has no id for it, `add_special` inputs are unsupported.

`Encoding.encode` takes a `str`, so an input that is not valid UTF-8 is unsupported, never passed or
failed. (tiktoken 0.14 has a private `Encoding._encode_bytes`; a private method is not the API a user
is given, so it is not used.)

Facts: `add_bos` and `add_eos` are the rule above, `bos_id` and `eos_id` the GGUF's
`tokenizer.ggml.bos_token_id`/`eos_token_id` (absent: not exposed). tiktoken has no end-of-generation
set, so `eog_ids` is not exposed.

Decoding: `token_to_piece(id, special)` is `decode_single_token_bytes(id)`, with tiktoken's special
tokens (`is_special_token`) rendered empty when `special` is false; `decode(ids, remove_special,
unparse_special)` is `decode_bytes` of the ids, less the BOS/EOS the encoding added by hand when
`remove_special`, and less every special token unless `unparse_special`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tokconf_reference.bpe import BYTE_TO_UNICODE
from tokconf_reference.gguf_reader import read_tokenizer_fields

from ..base import Unsupported

# The published split patterns (see the module docstring for their sources), by `tokenizer.ggml.pre`.
LLAMA3_PATTERN = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"  # noqa: E501
QWEN2_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""  # noqa: E501
QWEN35_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""  # noqa: E501
LLAMA3_FAMILY = frozenset({"llama3", "llama-v3", "llama-bpe"})

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
_UNICODE_TO_BYTE = {char: byte for byte, char in enumerate(BYTE_TO_UNICODE)}


def _import_tiktoken() -> Any:
    try:
        import tiktoken
        from tiktoken_ext import openai_public  # type: ignore[import-untyped]  # no stubs, no py.typed
    except ImportError as error:
        raise Unsupported(f"tiktoken is not installed ({error}): pip install -e '.[peers]'") from None
    return tiktoken, openai_public


def _pattern(pre: str | None, openai_public: Any) -> str:
    if pre == "gpt-2":
        return str(openai_public.r50k_pat_str)
    if pre in LLAMA3_FAMILY:
        return LLAMA3_PATTERN
    if pre == "qwen2":
        return QWEN2_PATTERN
    if pre == "qwen35":
        return QWEN35_PATTERN
    if pre is None:
        raise Unsupported("the GGUF names no pre-tokenizer (tokenizer.ggml.pre): no published regex to split with")
    raise Unsupported(f"no published regex for pre-tokenizer {pre!r}")


def _ranks(tokens: Sequence[str], types: Sequence[int]) -> dict[bytes, int]:
    """Each normal and byte token's bytes, ranked by its id; a vocabulary tiktoken cannot hold is declined."""
    ranks: dict[bytes, int] = {}
    for token_id, (text, kind) in enumerate(zip(tokens, types, strict=True)):
        if kind not in (NORMAL, BYTE):
            continue
        try:
            data = bytes(_UNICODE_TO_BYTE[char] for char in text)
        except KeyError:
            raise Unsupported(
                f"token {token_id} {text!r} is not written in GPT-2's byte-to-unicode alphabet: "
                "its bytes, tiktoken's key, are unknown"
            ) from None
        if data in ranks:
            raise Unsupported(
                f"tokens {ranks[data]} and {token_id} have the same bytes {data!r}: tiktoken maps bytes to one rank"
            )
        ranks[data] = token_id
    missing = [byte for byte in range(256) if bytes([byte]) not in ranks]
    if missing:
        raise Unsupported(
            f"{len(missing)} single bytes have no token (first 0x{missing[0]:02x}): tiktoken needs all 256 "
            "(its encoder panics on a byte it cannot rank)"
        )
    return ranks


class TiktokenGGUF:
    """A GGUF's byte-level BPE vocabulary as a `tiktoken.Encoding`."""

    def __init__(self, path: Path) -> None:
        tiktoken, openai_public = _import_tiktoken()
        fields = read_tokenizer_fields(path)
        model = fields.get("tokenizer.ggml.model")
        if model != "gpt2":
            raise Unsupported(f"tiktoken does byte-level BPE only: tokenizer.ggml.model is {model!r}, not 'gpt2'")
        pre = fields.get("tokenizer.ggml.pre")
        pattern = _pattern(pre, openai_public)
        tokens: list[str] = fields["tokenizer.ggml.tokens"]
        types: list[int] = fields.get("tokenizer.ggml.token_type") or [NORMAL] * len(tokens)
        ranks = _ranks(tokens, types)
        special: dict[str, int] = {}
        for token_id, (text, kind) in enumerate(zip(tokens, types, strict=True)):
            if kind in (UNKNOWN, UNUSED):
                raise Unsupported(
                    f"token {token_id} {text!r} is typed {'unknown' if kind == UNKNOWN else 'unused'}: a tiktoken "
                    "Encoding has no place for it (its id would be a hole tiktoken cannot decode)"
                )
            if kind in (CONTROL, USER_DEFINED):
                if text in special:
                    raise Unsupported(f"tokens {special[text]} and {token_id} have the same text {text!r}")
                special[text] = token_id
        try:
            self.encoding = tiktoken.Encoding(
                f"gguf:{path.name}", pat_str=pattern, mergeable_ranks=ranks, special_tokens=special
            )
        except ValueError as error:  # tiktoken's Rust core refuses the tables
            raise Unsupported(f"tiktoken refuses the vocabulary of {path.name}: {error}") from None
        self.n_tokens = len(tokens)
        # The facts the check compares (tokconf.core.facts.Fact); None is "not exposed".
        add_bos = fields.get("tokenizer.ggml.add_bos_token")
        self.add_bos: bool = bool(add_bos) if add_bos is not None else pre in LLAMA3_FAMILY
        self.add_eos: bool = bool(fields.get("tokenizer.ggml.add_eos_token", False))
        self.bos_id: int | None = fields.get("tokenizer.ggml.bos_token_id")
        self.eos_id: int | None = fields.get("tokenizer.ggml.eos_token_id")

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise Unsupported("tiktoken encodes str: not valid UTF-8") from None
        if parse_special:
            ids: list[int] = self.encoding.encode(text, allowed_special="all")
        else:
            ids = self.encoding.encode(text, disallowed_special=())
        if add_special and ((self.add_bos and self.bos_id is None) or (self.add_eos and self.eos_id is None)):
            raise Unsupported("a BOS/EOS is to be added, and the GGUF gives no id for it (tokenizer.ggml.*_token_id)")
        if add_special and self.add_bos and self.bos_id is not None:
            ids.insert(0, self.bos_id)
        if add_special and self.add_eos and self.eos_id is not None:
            ids.append(self.eos_id)
        return ids

    def token_to_piece(self, token: int, special: bool) -> bytes:
        if not special and self.encoding.is_special_token(token):
            return b""
        return bytes(self.encoding.decode_single_token_bytes(token))

    def decode(self, ids: list[int], remove_special: bool, unparse_special: bool) -> bytes:
        if remove_special and self.add_bos and ids[:1] == [self.bos_id]:
            ids = ids[1:]
        if remove_special and self.add_eos and ids[-1:] == [self.eos_id]:
            ids = ids[:-1]
        if not unparse_special:
            ids = [token for token in ids if not self.encoding.is_special_token(token)]
        return bytes(self.encoding.decode_bytes(ids))


def from_gguf(path: Path) -> TiktokenGGUF:
    """The `tokconf.implementations` entry point `tiktoken-gguf`."""
    return TiktokenGGUF(path)
