"""What each synthetic vocabulary is: a recipe names its family, the shipped vocabulary it derives
from and the change, and `fields` turns it into the GGUF keys `gguf_write` writes.

Three families:
- `pre`: the gpt-2 vocabulary (tokens, types, merges) under every `tokenizer.ggml.pre` name that
  b11192 or b11434 knows (`llama_vocab::impl::load`'s chain). A name a build does not know is recorded
  as that build's load refusal, so a new name shows up in `tokconf diff`.
- `model`: one vocabulary per tokenizer model no shipped file uses, in the layout llama.cpp's converter
  writes and its loader reads (`rwkv`, `plamo2`, `t5`, `whitespace`, `hybriddna`, `test`).
- `variant`: the vocab rules ports get wrong, each as one change to a shipped vocabulary (attributes
  set by name in `llama_vocab::impl::load`, user-defined tokens, the add_* flags, missing byte tokens).

Every recipe derives from the shipped files of `BASE_BUILD`, pinned by sha256; changing a recipe's
output changes its file's sha256, which its recordings pin: bump `SYNTH_VERSION` and re-record it.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SYNTH_VERSION = 1
BASE_BUILD = 11192
BASES = {  # shipped vocab -> sha256 of its b11192 file
    "gpt-2": "cedc56ca6e2e89f63e781696d1fd76b4b1d49e6720dee86463e915f6e90016ac",
    "llama-spm": "16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69",
    "bert-bge": "fbcbe22278fb302694d5f4a41bfe48c5f90e8e3554eab1c0435387dff654a854",
}

# `tokenizer.ggml.pre` names of b11192 and b11434 (`tokconf coverage --build N` reads them from the
# source; tests/test_synth.py holds this list to b11192's and to NEW_IN_B11434).
NEW_IN_B11434 = ("glm5", "mmbert")
PRE_NAMES = tuple(sorted((
    "a.x-4.0", "afmoe", "bailingmoe", "bailingmoe2", "bloom", "chameleon", "chatglm-bpe", "codeshell",
    "cohere2moe", "command-r", "dbrx", "deepseek-coder", "deepseek-llm", "deepseek-r1-qwen", "deepseek-v3",
    "default", "exaone", "exaone-moe", "exaone4", "f2llmv2", "falcon", "falcon-h1", "falcon3", "gemma4",
    "gigachat", "glm4", "gpt-2", "gpt-4o", "gpt3-finnish", "granite-docling", "granite-embed-multi-311m",
    "granite-embed-multi-97m", "grok-2", "hunyuan", "hunyuan-dense", "hy_v4", "jais", "jais-2", "jina-de",
    "jina-es", "jina-v1-en", "jina-v2-code", "jina-v2-de", "jina-v2-es", "jina-v5-nano", "joyai-llm",
    "kanana2", "kimi-k2", "kormo", "laguna", "lfm2", "llada-moe", "llama-bpe", "llama-v3", "llama3", "llama4",
    "megrez", "mellum", "mellum2", "midm-2.0", "minerva-7b", "minicpm5", "minimax-m2", "modern-bert", "mpt",
    "olmo", "phi-2", "pixtral", "poro-chat", "qwen2", "qwen35", "refact", "roberta-bpe", "sarvam-moe",
    "seed-coder", "smaug-bpe", "smollm", "solar-open", "spark2_5", "stablelm2", "starcoder", "superbpe",
    "talkie", "tekken", "tiny_aya", "trillion", "ufakzeka", "viking", "whitespace", "youtu", *NEW_IN_B11434,
)))  # fmt: skip

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6  # GGUF token types
Fields = dict[str, Any]


class Family(enum.Enum):
    PRE = "pre"
    MODEL = "model"
    VARIANT = "variant"


@dataclass(frozen=True)
class Recipe:
    """One synthetic vocabulary: `synth-<name>.gguf`, recorded as `synthetic/<name>.yaml`."""

    name: str
    family: Family
    base: str  # the shipped vocab of BASE_BUILD it derives from
    why: str  # what it exercises
    make: Callable[[Fields], Fields]  # the base's tokenizer fields -> the file's fields

    @property
    def file(self) -> str:
        return f"synth-{self.name}.gguf"

    @property
    def decoding(self) -> bool:
        """Whether its pieces and detokenizations are recorded too: not for the `pre` family, whose
        token table is gpt-2's (recorded with it) and whose pre name `llama_token_to_piece` does not
        read; `variant-clean-spaces-off` records the one decoding rule a pre name sets."""
        return self.family is not Family.PRE or self.name in DECODED_PRE


# `pre` names whose only effect on decoding is that `llama_vocab::impl::load` turns clean_spaces off for
# them, and whose mutants (issue 47: `clean_spaces = false` deleted or made true for that name) nothing but a
# decoding can show; the other names that turn it off are not recorded with decodings (each is 0.6 MB).
DECODED_PRE = frozenset({"pre-granite-embed-multi-97m", "pre-joyai-llm", "pre-trillion"})


def _bpe(base: Fields, pre: str, model: str = "gpt2") -> Fields:
    """gpt-2's tokens, types and merges under another model or pre name."""
    keys = ("tokens", "token_type", "merges", "eos_token_id")
    return _copied(base, "gpt2", model, keys, {"tokenizer.ggml.pre": pre})


def _appended(fields: Fields, tokens: list[tuple[str, int]]) -> Fields:
    """Tokens appended after the base's, with their types (a converter's added tokens)."""
    return fields | {
        "tokenizer.ggml.tokens": [*fields["tokenizer.ggml.tokens"], *(t for t, _ in tokens)],
        "tokenizer.ggml.token_type": [*fields["tokenizer.ggml.token_type"], *(k for _, k in tokens)],
    }


def _copied(
    base: Fields, arch: str, model: str, keys: tuple[str, ...], first: Fields | None = None, **flags: Any
) -> Fields:
    """A base's `tokenizer.ggml.*` keys (those of `keys` it has, in that order) under an architecture and
    model; the `first` keys before them, `flags` (as `tokenizer.ggml.<flag>`) after."""
    fields: Fields = {"general.architecture": arch, "tokenizer.ggml.model": model, **(first or {})}
    fields |= {f"tokenizer.ggml.{k}": base[f"tokenizer.ggml.{k}"] for k in keys if f"tokenizer.ggml.{k}" in base}
    return fields | {f"tokenizer.ggml.{k}": v for k, v in flags.items()}


def _spm(base: Fields, **flags: Any) -> Fields:
    """llama-spm as shipped, with flags after its keys."""
    keys = ("tokens", "scores", "token_type", "unknown_token_id", "bos_token_id", "eos_token_id")
    return _copied(base, "llama", "llama", keys, **flags)


def _gpt2_pieces(base: Fields) -> list[bytes]:
    """gpt-2's tokens as bytes (its byte-to-unicode table undone), in id order."""
    from tokconf_reference.bpe import BYTE_TO_UNICODE

    undo = {char: byte for byte, char in enumerate(BYTE_TO_UNICODE)}
    return [bytes(undo[c] for c in text) if all(c in undo for c in text) else b"" for text in
            base["tokenizer.ggml.tokens"]]  # fmt: skip


def rwkv(base: Fields, size: int = 6000) -> Fields:
    """`_set_vocab_rwkv_world`'s layout: `<s>` control, every token `repr(bytes)[2:-1]`, `[PADn]`
    unused up to the size; the multi-byte tokens are gpt-2's pieces (words, UTF-8, partial UTF-8), and
    four escapes no converter writes, read as `llama_unescape_rwkv_token` reads them."""
    words = sorted(set(_gpt2_pieces(base)) - {b""}, key=lambda p: (len(p), p))
    chosen = [bytes([b]) for b in range(256)] + [w for w in words if len(w) > 1][: size - 300]
    odd = ["\\xZZ", "\\q", "\\x\u00e9", "tail\\"]
    tokens = ["<s>"] + [repr(w)[2:-1] for w in chosen] + odd
    types = [CONTROL] + [NORMAL] * (len(chosen) + len(odd))
    tokens += [f"[PAD{i}]" for i in range(len(tokens), size)]
    types += [UNUSED] * (size - len(types))
    return {"general.architecture": "rwkv6", "tokenizer.ggml.model": "rwkv", "tokenizer.ggml.tokens": tokens,
            "tokenizer.ggml.token_type": types}  # fmt: skip


PLAMO_CONTROL = ["<|plamo:unk|>", "<|plamo:bos|>", "<|plamo:eos|>", "<|plamo:pad|>", "<|plamo:op|>"]


def plamo2(base: Fields, size: int = 9000) -> Fields:
    """`_set_vocab_plamo`'s layout from llama-spm's normal pieces (U+2581 as a space): the five PLaMo
    control tokens, the 256 `<0xXX>` byte tokens, few distinct scores (so ties occur and the table
    order decides), a normal `</s>` (which the EOG rule of `llama_vocab::impl::load` concerns), unused
    padding; BOS added as the converter asks (b11192 ignores the flag, b11434 honours it)."""
    tokens, scores, types = list(PLAMO_CONTROL), [0.0] * 5, [UNKNOWN, CONTROL, CONTROL, CONTROL, CONTROL]
    tokens += [f"<0x{byte:02X}>" for byte in range(256)] + ["</s>"]
    scores += [0.0] * 257
    types += [BYTE] * 256 + [NORMAL]
    seen = set(tokens)
    triples = zip(
        base["tokenizer.ggml.tokens"], base["tokenizer.ggml.scores"], base["tokenizer.ggml.token_type"], strict=True
    )
    for text, score, kind in triples:
        piece = text.replace("\u2581", " ")
        if kind == NORMAL and piece not in seen and len(tokens) < size - 100:
            seen.add(piece)
            tokens.append(piece)
            scores.append(float(round(score / 1000)))
            types.append(NORMAL)
    pad = size - len(tokens)
    return {
        "general.architecture": "plamo2", "tokenizer.ggml.model": "plamo2", "tokenizer.ggml.pre": "default",
        "tokenizer.ggml.tokens": tokens + [f"[PAD{i}]" for i in range(1, pad + 1)],
        "tokenizer.ggml.scores": scores + [-1000.0] * pad, "tokenizer.ggml.token_type": types + [UNUSED] * pad,
        "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2, "tokenizer.ggml.padding_token_id": 3,
        "tokenizer.ggml.unknown_token_id": 0, "tokenizer.ggml.eot_token_id": 4,
        "tokenizer.ggml.add_bos_token": True, "tokenizer.ggml.add_eos_token": False,
    }  # fmt: skip


def t5(base: Fields, **flags: Any) -> Fields:
    """A Unigram (`t5`) vocabulary from llama-spm's pieces and scores: `<unk>` unknown, `</s>` EOS, no
    precompiled charsmap (no normalization); flags after."""
    return _copied(base, "t5", "t5", ("tokens", "scores", "token_type"), unknown_token_id=0, eos_token_id=2, **flags)


DNA_MARKER = "\ue000"  # llama-vocab.cpp's dna_kmer_marker


def hybriddna(base: Fields) -> Fields:
    """gpt-2's BPE plus `<dna>`, `</dna>` and `<oov>` control tokens and every 6-mer of ACGT with the
    U+E000 marker, the block right after `<oov>` (`llm_tokenizer_hybriddna_session`)."""
    kmers = ["".join(k) + DNA_MARKER for k in itertools.product("ACGT", repeat=6)]
    added = [("<dna>", CONTROL), ("</dna>", CONTROL), ("<oov>", CONTROL)] + [(k, NORMAL) for k in kmers]
    return _appended(_bpe(base, "gpt-2", model="hybriddna"), added)


def test_model(base: Fields, size: int = 1009) -> Fields:
    """llama.cpp's `test` model: 5-byte chunks hashed to ids (a prime size, so remainders vary)."""
    tokens = ["<s>", "</s>", "<|user|>"] + [f"t{i}" for i in range(3, size)]
    return {"general.architecture": "llama", "tokenizer.ggml.model": "test", "tokenizer.ggml.tokens": tokens,
            "tokenizer.ggml.token_type": [CONTROL, CONTROL, USER_DEFINED] + [NORMAL] * (size - 3),
            "tokenizer.ggml.bos_token_id": 0, "tokenizer.ggml.eos_token_id": 1}  # fmt: skip


def test_without_eos(base: Fields) -> Fields:
    """The `test` model with no `tokenizer.ggml.eos_token_id`: `llama_vocab::impl::load`'s `test` branch
    sets special_eos_id to LLAMA_TOKEN_NULL and nothing sets it again, so EOS is -1 (issue 47: the mutant
    deleting that statement keeps the default EOS 2, seen in the eos fact)."""
    fields = test_model(base)
    del fields["tokenizer.ggml.eos_token_id"]
    return fields


def rwkv_nul_tails(base: Fields) -> Fields:
    """model-rwkv plus, for every one-byte and word token T, a token T + NUL (escaped `\\x00`, as the
    converter writes it). `llm_tokenizer_rwkv_session::tokenize` stops its trie walk at the end of the
    text (`if (position + 1 >= text.size()) break;`): issue 47's mutant deleting that `break` reads the
    std::string's terminating NUL and takes T + NUL for a text ending in T. Inputs holding a NUL byte
    take these tokens in llama.cpp too (greedy longest match)."""
    fields = rwkv(base)
    words = sorted(set(_gpt2_pieces(base)) - {b""}, key=lambda p: (len(p), p))
    tails = [
        repr(w + b"\x00")[2:-1] for w in [bytes([b]) for b in range(1, 256)] + [w for w in words if len(w) > 1][:2000]
    ]
    return fields | {
        "tokenizer.ggml.tokens": [*fields["tokenizer.ggml.tokens"], *tails],
        "tokenizer.ggml.token_type": [*fields["tokenizer.ggml.token_type"], *[NORMAL] * len(tails)],
    }


def plamo2_odd_bytes(base: Fields) -> Fields:
    """model-plamo2 plus 64 BYTE tokens `xyz80>`..`xyzBF>`: text ending in '>' with hex digits at 3-4,
    but not the 6-character `<0x..>` form. `llm_tokenizer_plamo2::build` maps a BYTE token to its byte
    only if `length() == 6 && substr(0, 3) == "<0x" && back() == '>'`; BYTE tokens are left out of the
    suffix table, so llama.cpp never uses these. Issue 47's mutant (`&& back()` made `|| back()`) maps the
    continuation bytes 0x80..0xBF to them, which changes every byte fallback of a multi-byte character."""
    fields = plamo2(base)
    odd = [f"xyz{byte:02X}>" for byte in range(0x80, 0xC0)]
    return fields | {
        "tokenizer.ggml.tokens": [*fields["tokenizer.ggml.tokens"], *odd],
        "tokenizer.ggml.scores": [*fields["tokenizer.ggml.scores"], *[0.0] * len(odd)],
        "tokenizer.ggml.token_type": [*fields["tokenizer.ggml.token_type"], *[BYTE] * len(odd)],
    }


def t5_user_space(base: Fields) -> Fields:
    """A Unigram (`t5`) vocabulary whose NORMAL scores are all above 10 (llama-spm's, floored at -100000
    and raised by 100020: whole numbers a float32 holds exactly) and whose U+2581 token is USER_DEFINED.
    The special-token partition cuts a raw U+2581, but `llm_tokenizer_ugm_session::normalize` escapes
    every space to U+2581 after it, so `tokenize` meets the user-defined one-code-point token (scored 0)
    and, having found it, does not try `<unk>` there (`single_codepoint_token_found`), whose score
    (min_score - 10) is above 0 here. Issue 47's mutant deleting `single_codepoint_token_found = true`
    lets `<unk>` replace it. The user-defined token also fills the trie `normalize_prefix` searches first,
    whose `naive_trie::get_longest_prefix` counts the bytes walked, not a whole token: a fragment starting
    with 0xE2 (U+2581's first byte, e.g. U+2000..U+206F) matches one byte and is passed on unnormalized
    (the mutants `> 0` made `> 1` there, and `offset + 1` made `offset - 1` in the trie, both differ)."""
    fields = t5(base)
    types = [
        USER_DEFINED if text == "\u2581" else kind
        for text, kind in zip(fields["tokenizer.ggml.tokens"], fields["tokenizer.ggml.token_type"], strict=True)
    ]
    scores = [max(s, -100000.0) + 100020.0 if kind == NORMAL else s
              for s, kind in zip(fields["tokenizer.ggml.scores"], types, strict=True)]  # fmt: skip
    return fields | {"tokenizer.ggml.scores": scores, "tokenizer.ggml.token_type": types}


# Issue 47's NFD table mutants: CJK compatibility ideographs that unicode_cpts_normalize_nfd maps to
# one unified ideograph each (unicode_ranges_nfd), so each is known only by its decomposition.
NFD_CJK = {"\uf929": "\u6717", "\ufac9": "\u97db", "\U0002f8a9": "\u614c", "\U0002fa07": "\u99fe"}


def wpm_cjk_nfd(base: Fields) -> Fields:
    """bert-bge plus the NFD forms of NFD_CJK as word tokens (`\u2581` + ideograph, the converter's
    form of a word-initial piece) and the compatibility ideographs themselves as CONTROL tokens. Their
    texts are cases of their own (tokconf.corpus.vocab_cases); in plain mode (no parse_special) a
    control text is not cut out, so llm_tokenizer_wpm_session::preprocess sees it, and with
    strip_accents (bert-bge's default) unicode_cpts_normalize_nfd turns it into the unified ideograph,
    which is a token. A wrong NFD table entry leaves it as it is: [UNK]."""
    fields = _wpm(base)
    return _appended(fields, [("\u2581" + to, NORMAL) for to in NFD_CJK.values()] + [(c, CONTROL) for c in NFD_CJK])


# User-defined tokens: raw spaces and texts no gpt-2 token has (a repeated text fails llama.cpp's load).
OVERLAPPING = ["helloworld", " world!", "ell o", "lo wo", "<tag>", "1 2", "ing ", "\u00e9t\u00e9!", "  "]
PHI3_SPECIALS = ["<|user|>", "<|end|>", "<|assistant|>", "<s>", "</s>", "<unk>"]


def _wpm(base: Fields, **flags: Any) -> Fields:
    keys = ("tokens", "token_type", "unknown_token_id", "seperator_token_id", "padding_token_id",
            "cls_token_id", "mask_token_id", "bos_token_id", "eos_token_id")  # fmt: skip
    pre = {"tokenizer.ggml.pre": base.get("tokenizer.ggml.pre", "bert-bge")}
    return _copied(base, "bert", "bert", keys, pre, **flags)


# Whole pre-tokens of the synthetic corpus sample under glm4's pre-tokenizer that no gpt-2 token spells
# (gpt-2's every token is what its merges make of its text, so `ignore_merges` never shows on it alone):
# ASCII, contractions, CR LF, a space run, U+2581 and U+2019, circled digits, fractions, full-width.
UNMERGED = ["<|", "|>", " <|", "endoftext", "_id", "xyz", "assistant", "'LL", "\r\n", "   ", "\u2581sentence",
            "\u2019s", "\u2462\u2462\u2460", "\u00be\u00bd\u00be", "\uff5c>", "\u2162\u2163\u2160"]  # fmt: skip


def _unmerged() -> list[tuple[str, int]]:
    """UNMERGED as normal tokens of a byte-level BPE vocabulary."""
    from tokconf_reference.bpe import byte_level

    return [(byte_level(text.encode()), NORMAL) for text in UNMERGED]


def _without_bytes(base: Fields, first: int) -> Fields:
    """llama-spm without the byte tokens `<0xXX>` from `first` up: byte fallback finds no token."""
    tokens = base["tokenizer.ggml.tokens"]
    keep = [i for i, t in enumerate(tokens) if not (t.startswith("<0x") and int(t[3:5], 16) >= first)]
    fields = _spm(base)
    for key in ("tokens", "scores", "token_type"):
        fields[f"tokenizer.ggml.{key}"] = [base[f"tokenizer.ggml.{key}"][i] for i in keep]
    return fields


def _recipes() -> tuple[Recipe, ...]:
    pre = [
        Recipe(f"pre-{name}", Family.PRE, "gpt-2", f"the pre-tokenizer llama.cpp selects for {name!r}",
               lambda base, name=name: _bpe(base, name))  # type: ignore[misc]
        for name in PRE_NAMES
    ]  # fmt: skip
    model = [
        Recipe("model-rwkv", Family.MODEL, "gpt-2", "RWKV: greedy longest match over unescaped tokens", rwkv),
        Recipe("model-plamo2", Family.MODEL, "llama-spm", "PLaMo-2: suffix table and dynamic programming", plamo2),
        Recipe("model-t5", Family.MODEL, "llama-spm", "Unigram (t5) without a charsmap", t5),
        Recipe("model-whitespace", Family.MODEL, "gpt-2", "BPE of the runs between whitespace, lowercased",
               lambda base: _bpe(base, "gpt-2", model="whitespace")),
        Recipe("model-hybriddna", Family.MODEL, "gpt-2", "BPE with <dna> spans cut into 6-mers", hybriddna),
        Recipe("model-test", Family.MODEL, "gpt-2", "llama.cpp's test model: 5-byte chunks hashed", test_model),
    ]  # fmt: skip
    variant = [
        Recipe("variant-lstrip-mask", Family.VARIANT, "gpt-2",
               "<mask> gets LSTRIP for jina-v2-code (eats the spaces before it)",
               lambda base: _appended(_bpe(base, "jina-v2-code"), [("<mask>", CONTROL), ("<|sep|>", CONTROL)])),
        Recipe("variant-rstrip-phi3", Family.VARIANT, "gpt-2",
               "a general.name containing phi-3: RSTRIP on every special token except <unk>, <s>, <|endoftext|>",
               lambda base: _appended(_bpe(base, "gpt-2"), [(t, CONTROL) for t in PHI3_SPECIALS])
               | {"general.name": "Phi-3 synthetic"}),
        Recipe("variant-user-defined-overlap", Family.VARIANT, "gpt-2",
               "user-defined tokens that overlap words and each other, cut out in every mode",
               lambda base: _appended(_bpe(base, "gpt-2"), [(t, USER_DEFINED) for t in OVERLAPPING])),
        Recipe("variant-bpe-bos-eos", Family.VARIANT, "gpt-2", "BPE adding BOS and EOS (add_bos, add_eos true)",
               lambda base: _bpe(base, "gpt-2") | {"tokenizer.ggml.bos_token_id": 50256,
                                                   "tokenizer.ggml.add_bos_token": True,
                                                   "tokenizer.ggml.add_eos_token": True}),
        Recipe("variant-spm-eos-only", Family.VARIANT, "llama-spm", "SPM adding EOS and no BOS",
               lambda base: _spm(base, add_bos_token=False, add_eos_token=True)),
        Recipe("variant-spm-no-space-prefix", Family.VARIANT, "llama-spm", "SPM with add_space_prefix false",
               lambda base: _spm(base, add_space_prefix=False)),
        Recipe("variant-spm-no-byte-fallback", Family.VARIANT, "llama-spm",
               "SPM without the byte tokens <0x80>..<0xFF>: byte fallback finds none",
               lambda base: _without_bytes(base, 0x80)),
        Recipe("variant-wpm-no-cls-sep", Family.VARIANT, "bert-bge", "WordPiece with add_bos and add_sep false",
               lambda base: _wpm(base, add_bos_token=False, add_sep_token=False)),
        Recipe("variant-wpm-cased", Family.VARIANT, "bert-bge",
               "WordPiece with normalizer.lowercase false (so strip_accents false: no NFD before "
               "is_chinese_char; issue 47's U+F900 and U+2F800 range-edge mutants)",
               lambda base: _wpm(base, **{"normalizer.lowercase": False})),
        Recipe("variant-wpm-empty-token", Family.VARIANT, "bert-bge",
               "WordPiece with a token of empty text, which llama_vocab::impl::load names [EMPTY_<id>] "
               "(so no token has empty text: the WordPiece prefix loop never finds one)",
               lambda base: _appended(_wpm(base), [("", NORMAL)])),
        Recipe("variant-wpm-cjk-nfd", Family.VARIANT, "bert-bge",
               "WordPiece with CJK compatibility ideographs as control texts and their NFD forms as words",
               wpm_cjk_nfd),
        Recipe("variant-test-no-eos", Family.VARIANT, "gpt-2",
               "llama.cpp's test model without eos_token_id: EOS stays LLAMA_TOKEN_NULL", test_without_eos),
        Recipe("variant-rwkv-nul-tails", Family.VARIANT, "gpt-2",
               "RWKV with tokens ending in NUL: the trie walk must stop at the text's end", rwkv_nul_tails),
        Recipe("variant-plamo2-odd-bytes", Family.VARIANT, "llama-spm",
               "PLaMo-2 with BYTE tokens not of the <0xXX> form: never byte fallback", plamo2_odd_bytes),
        Recipe("variant-t5-user-space", Family.VARIANT, "llama-spm",
               "Unigram with a user-defined U+2581 (what spaces normalize to) and normal scores above 10",
               t5_user_space),
        Recipe("variant-t5-extra-whitespace", Family.VARIANT, "llama-spm",
               "Unigram removing extra whitespace, no space prefix",
               lambda base: t5(base, add_space_prefix=False, remove_extra_whitespaces=True)),
        Recipe("variant-clean-spaces-off", Family.VARIANT, "gpt-2",
               "llama-bpe's pre name on gpt-2: ignore_merges on, clean_spaces off (detokenization)",
               lambda base: _bpe(base, "llama-bpe")),
        Recipe("variant-glm4-unmerged", Family.VARIANT, "gpt-2",
               "glm4's pre name on gpt-2 plus tokens no merge reaches: used whole only with ignore_merges "
               "(b11292 sets it for glm4)",
               lambda base: _appended(_bpe(base, "glm4"), _unmerged())),
    ]  # fmt: skip
    return (*pre, *model, *variant)


RECIPES = _recipes()
BY_NAME = {recipe.name: recipe for recipe in RECIPES}
