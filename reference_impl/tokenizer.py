"""The reference `Tokenizer`: a GGUF vocabulary, encoded as llama.cpp b11192 encodes it.

Supported: byte-level BPE (`tokenizer.ggml.model = gpt2`) with every pre-tokenizer name in
`PRE_NAMES` (regexes in `bpe.PRE_REGEXES`), gemma4 (the same BPE on raw UTF-8 with escaped spaces),
SentencePiece (`llama`, `spm.py`), WordPiece (`bert`, `wpm.py`), Unigram (`t5`, `ugm.py`), RWKV
(`rwkv`, `rwkv.py`), PLaMo-2 (`plamo2`, `plamo2.py`), `whitespace` (BPE of the runs between
whitespace), `hybriddna` (BPE with `<dna>` spans cut into 6-mers, `hybriddna.py`) and llama.cpp's
`test` model (`chunk_hash.py`).
Other models and pre-tokenizers raise `UnsupportedVocab` — never a silent wrong answer; `tokconf
check` counts those as unsupported.

The steps follow `llama_vocab::impl::tokenize`: special-token texts are cut out first
(`tokenizer_st_partition`: longest text first; CONTROL and UNKNOWN ones only with parse_special;
LSTRIP/RSTRIP attributes eat ASCII whitespace beside them), each remaining fragment is
pre-tokenized and merged, and with add_special BOS and EOS are added as the vocabulary says.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokconf_reference.bpe import BYTE_TO_UNICODE, PRE_REGEXES, RAW_UTF8, BytePairEncoder
from tokconf_reference.chunk_hash import ChunkHashEncoder
from tokconf_reference.errors import LlamaAborts
from tokconf_reference.gguf_reader import GGUFError, read_tokenizer_fields
from tokconf_reference.hybriddna import DnaSpans, unmarked
from tokconf_reference.plamo2 import MissingByteToken, Plamo2Encoder, byte_token
from tokconf_reference.rwkv import RwkvEncoder, unescape
from tokconf_reference.spm import SentencePieceEncoder
from tokconf_reference.ugm import CharsmapError, UnigramEncoder
from tokconf_reference.unicode import WHITESPACE, decode
from tokconf_reference.unicode_data_b11192 import LOWERCASE
from tokconf_reference.wpm import WordPieceEncoder

# enum llama_token_type (GGUF tokenizer.ggml.token_type) -> enum llama_token_attr bits.
ATTR_UNDEFINED, ATTR_UNKNOWN, ATTR_UNUSED, ATTR_NORMAL, ATTR_CONTROL, ATTR_USER_DEFINED, ATTR_BYTE = (
    0, 1, 2, 4, 8, 16, 32,
)  # fmt: skip
ATTR_LSTRIP, ATTR_RSTRIP = 128, 256
TYPE_TO_ATTR = {0: ATTR_UNDEFINED, 1: ATTR_NORMAL, 2: ATTR_UNKNOWN, 3: ATTR_CONTROL, 4: ATTR_USER_DEFINED}
TYPE_TO_ATTR |= {5: ATTR_UNUSED, 6: ATTR_BYTE}


@dataclass(frozen=True)
class Pre:
    """What a `tokenizer.ggml.pre` name selects in llama_vocab::impl::load: the pre-tokenizer type
    (a key of `bpe.PRE_REGEXES`) and the flags its branch sets."""

    type: str
    clean_spaces: bool = True
    ignore_merges: bool = False
    add_bos: bool = False
    bos_id: int | None = 11  # BPE's default BOS; chatglm's branch sets none (the file may still give one)
    escape_whitespaces: bool = False  # spaces become U+2581 before splitting (SPM-style BPE)


_NO_CLEAN = {"clean_spaces": False}
_LLAMA3 = Pre("llama3", ignore_merges=True, add_bos=True)
_QWEN2 = Pre("qwen2", **_NO_CLEAN)
_GPT4O = Pre("gpt4o", **_NO_CLEAN)
_DEEPSEEK3 = Pre("deepseek3-llm", **_NO_CLEAN)
_BAILING = Pre("bailingmoe", **_NO_CLEAN)
# Names whose pre-tokenizer leaves spaces uncleaned (clean_spaces false) and has no other option: name -> regex.
_NOT_CLEANED = {
    "deepseek-llm": "deepseek-llm", "deepseek-coder": "deepseek-coder", "spark2_5": "spark2_5",
    "command-r": "starcoder", "qwen35": "qwen35", "poro-chat": "poro", "viking": "viking", "smollm": "starcoder",
    "trillion": "gpt2", "granite-docling": "gpt2", "seed-coder": "seed-coder", "ufakzeka": "ufakzeka",
    "laguna": "laguna", "afmoe": "afmoe", "superbpe": "superbpe", "kimi-k2": "kimi-k2", "tiny_aya": "tiny_aya",
    "cohere2moe": "tiny_aya",
}  # fmt: skip
# Every name llama.cpp b11192 recognises for `gpt2` vocabularies (all 90; a test reads them from its
# source), and None (no key: "default", with llama.cpp's warning).
PRE_NAMES: dict[str | None, Pre] = {
    None: Pre("default"), "default": Pre("default"),
    "minicpm5": Pre("minicpm5", ignore_merges=True),
    **dict.fromkeys(("llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
                     "jina-v5-nano"), _LLAMA3),
    "deepseek-v3": _DEEPSEEK3,
    "youtu": Pre("youtu", clean_spaces=False, ignore_merges=True),
    "falcon": Pre("falcon"),
    "mpt": Pre("gpt2"),
    "starcoder": Pre("starcoder"),
    **dict.fromkeys(("gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0",
                     "mellum", "modern-bert", "jina-v1-en", "jina-v2-code", "roberta-bpe", "olmo", "jais", "exaone4"),
                    Pre("gpt2")),
    "jais-2": Pre("jais2"),
    "refact": Pre("starcoder"),
    **dict.fromkeys(("qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "solar-open"), _QWEN2),
    "stablelm2": Pre("qwen2"), "megrez": Pre("qwen2"),
    "dbrx": Pre("llama3"), "smaug-bpe": Pre("llama3"),
    "bloom": Pre("poro"), "gpt3-finnish": Pre("poro"),
    **dict.fromkeys(("glm4", "chatglm-bpe"), Pre("llama3", bos_id=None)),
    "tekken": Pre("tekken", clean_spaces=False, ignore_merges=True, add_bos=True),
    **dict.fromkeys(("codeshell", "exaone", "minerva-7b", "mellum2"), Pre("starcoder")),
    "exaone-moe": Pre("exaone-moe"),
    "chameleon": Pre("chameleon", clean_spaces=False, add_bos=True),
    **dict.fromkeys(("gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"), _GPT4O),
    "granite-embed-multi-97m": Pre("granite-emb-multi", clean_spaces=False, ignore_merges=True),
    **dict.fromkeys(("bailingmoe", "bailingmoe2", "llada-moe"), _BAILING),
    **dict.fromkeys(("hunyuan-dense", "hy_v4", "joyai-llm"), _DEEPSEEK3),
    "grok-2": _QWEN2,
    **dict.fromkeys(("gemma4", "granite-embed-multi-311m"), Pre("gemma4", escape_whitespaces=True)),
    "sarvam-moe": Pre("sarvam-moe", clean_spaces=False, escape_whitespaces=True),
    "whitespace": Pre("whitespace"),
    **{name: Pre(regex, **_NO_CLEAN) for name, regex in _NOT_CLEANED.items()},
}  # fmt: skip

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
UNICODE_TO_BYTE = {ch: byte for byte, ch in enumerate(BYTE_TO_UNICODE)}
# _decode_text's table: a byte's character to that byte as a Latin-1 character; every other Latin-1
# character to one beyond it, so that the encoding fails and the character is marked instead.
_TO_BYTE = {ord(ch): byte for ch, byte in UNICODE_TO_BYTE.items()} | {
    code: 0x10000 for code in range(256) if chr(code) not in UNICODE_TO_BYTE
}
ESCAPED_SPACE = "\u2581".encode()  # llama_escape_whitespace: " " -> "▁"
# Tokenizer._fragment_ids keeps the ids of at most this many recent text fragments, of at most this
# many bytes in all (the corpus's longest case is 51 KB; a long document's ids are not held on to)
RECENT_FRAGMENTS = 16
RECENT_BYTES = 1 << 20


class UnsupportedVocab(NotImplementedError):
    """The reference does not implement this model or pre-tokenizer."""


class MissingSpecialToken(LlamaAborts, ValueError):
    """The vocabulary adds BOS or EOS but has no such token: llama.cpp's GGML_ASSERT aborts here."""


# The value type llama.cpp's typed `llama_model_loader::get_key`/`get_arr` demands of each key it
# reads (a key of another type fails the load): flags are bools, ids integers, lists of their kind.
_FLAGS = ("add_bos_token", "add_eos_token", "add_sep_token", "add_space_prefix", "remove_extra_whitespaces",
          "normalizer.lowercase", "escape_whitespaces", "treat_whitespace_as_suffix")  # fmt: skip
_IDS = ("bos", "eos", "eot", "eom", "unknown", "seperator", "padding", "mask", "cls",
        "fim_pre", "fim_suf", "fim_mid", "fim_pad", "fim_rep", "fim_sep")  # fmt: skip


def _check_types(path: Path, fields: dict[str, Any]) -> None:
    def refuse(key: str, wanted: str) -> GGUFError:
        return GGUFError(f"{path}: {key} is {type(fields[key]).__name__}, not {wanted} (llama.cpp refuses it)")

    for name in _FLAGS:
        key = f"tokenizer.ggml.{name}"
        if key in fields and not isinstance(fields[key], bool):
            raise refuse(key, "a bool")
    for name in _IDS:
        key = f"tokenizer.ggml.{name}_token_id"
        if key in fields and (not isinstance(fields[key], int) or isinstance(fields[key], bool)):
            raise refuse(key, "an integer")
    for key in ("tokenizer.ggml.model", "tokenizer.ggml.pre"):
        if key in fields and not isinstance(fields[key], str):
            raise refuse(key, "a string")
    tokens = fields.get("tokenizer.ggml.tokens")
    if not isinstance(tokens, list) or not tokens or not all(isinstance(t, str) for t in tokens):
        raise GGUFError(f"{path}: tokenizer.ggml.tokens is missing or not a list of strings")
    lists: tuple[tuple[str, type], ...] = (("token_type", int), ("scores", float))
    for key, kind in lists:
        values = fields.get(f"tokenizer.ggml.{key}")
        if values is not None and (not isinstance(values, list) or len(values) != len(tokens)):
            raise GGUFError(f"{path}: tokenizer.ggml.{key} has {len(values) if isinstance(values, list) else 'no'}"
                            f" entries for {len(tokens)} tokens")  # fmt: skip
        if values is not None and not all(isinstance(v, kind) for v in values):
            raise GGUFError(f"{path}: tokenizer.ggml.{key} is not a list of {kind.__name__}s")


class Tokenizer:
    """One vocabulary; `encode` answers as `llama_tokenize` does."""

    def __init__(self, fields: dict[str, Any]) -> None:
        model = fields.get("tokenizer.ggml.model")
        # llama_vocab::impl::load names a token of empty text "[EMPTY_<id>]" (warning "empty token at
        # index"), for every model: its piece, and the text token_to_id finds, is that name.
        self.tokens: list[str] = [text or f"[EMPTY_{i}]" for i, text in enumerate(fields["tokenizer.ggml.tokens"])]
        self.token_to_id = {text: token for token, text in enumerate(self.tokens)}  # a repeated text: the last id
        types = fields.get("tokenizer.ggml.token_type") or [1] * len(self.tokens)
        self.attrs = [TYPE_TO_ATTR.get(t, ATTR_UNDEFINED) for t in types]
        # token_to_piece's answers as they are first asked for, by `special` (llama.cpp keeps them too,
        # `cache_token_to_piece`): detokenizing asks for the same pieces again and again
        self._pieces: tuple[dict[int, bytes], dict[int, bytes]] = ({}, {})
        self._recent: dict[tuple[bytes, bool], tuple[int, ...]] = {}  # _fragment_ids
        self.encoder: (
            BytePairEncoder
            | SentencePieceEncoder
            | WordPieceEncoder
            | UnigramEncoder
            | RwkvEncoder
            | Plamo2Encoder
            | ChunkHashEncoder
        )
        self.kind, self.clean_spaces, self.add_space_prefix = "", False, False
        self.bos_id, self.eos_id, self.sep_id, self.add_bos, self.add_eos = -1, -1, -1, False, False
        self.escape_whitespaces = self.force_bos = False
        self.whitespace_lowercase: bool | None = None  # the `whitespace` model: split at whitespace, maybe lowercase
        self.dna: DnaSpans | None = None  # the `hybriddna` model: <dna> spans cut into k-mers
        if model in ("gpt2", "whitespace", "hybriddna"):
            self._init_bpe(fields, fields.get("tokenizer.ggml.pre"))
            if model == "hybriddna" and "<oov>" in self.token_to_id:
                self.tokens = unmarked(self.tokens, self.token_to_id["<oov>"])
                if {"<dna>", "</dna>"} <= self.token_to_id.keys():
                    self.dna = DnaSpans(self.token_to_id)
            if model == "whitespace":  # normalizer_opts.lowercase: true, false for pre "whitespace", then the key
                default = fields.get("tokenizer.ggml.pre") != "whitespace"
                self.whitespace_lowercase = bool(fields.get("tokenizer.ggml.normalizer.lowercase", default))
        elif model == "gemma4":
            self._init_bpe(fields, "gemma4", default_id=None)
        elif model == "llama":
            self._init_spm(fields)
        elif model == "bert":
            self._init_wpm(fields)
        elif model == "t5":
            self._init_ugm_ids(fields)
        elif model == "rwkv":
            self._init_rwkv(fields)
        elif model == "plamo2":
            self._init_plamo2(fields)
        elif model == "test":
            self.kind = "test"  # no special ids unless the file names them; nothing added by tokenize
            self.bos_id = int(fields.get("tokenizer.ggml.bos_token_id", -1))
            self.eos_id = int(fields.get("tokenizer.ggml.eos_token_id", -1))
            self.encoder = ChunkHashEncoder(len(self.tokens))
        elif model == "none":  # LLAMA_VOCAB_TYPE_NONE: llama_tokenize asserts an initialized tokenizer
            raise UnsupportedVocab("tokenizer model 'none': llama.cpp cannot tokenize with it (it aborts)")
        else:
            raise UnsupportedVocab(f"tokenizer model {model!r} is not one llama.cpp b11192 knows")
        self.add_bos = bool(fields.get("tokenizer.ggml.add_bos_token", self.add_bos)) or self.force_bos
        self.add_eos = bool(fields.get("tokenizer.ggml.add_eos_token", self.add_eos))
        # llama_vocab::impl::load: true for WPM and the BPE pre names jina-v1-en, jina-v2-code and
        # roberta-bpe, then the GGUF key; reported by llama_vocab_get_add_sep, not used by tokenize.
        sep_pres = ("jina-v1-en", "jina-v2-code", "roberta-bpe")
        sep = self.kind == "wpm" or (model == "gpt2" and fields.get("tokenizer.ggml.pre") in sep_pres)
        self.add_sep = bool(fields.get("tokenizer.ggml.add_sep_token", sep))
        self.eog_ids = self._end_of_generation(fields)
        special = [i for i, a in enumerate(self.attrs) if a & (ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN)]
        # cache_special_tokens: longest text first (std::sort; ties here by id).
        self.specials = sorted(special, key=lambda i: -len(self.tokens[i].encode("utf-8", "surrogateescape")))
        self.special_bytes = {i: self.tokens[i].encode("utf-8", "surrogateescape") for i in self.specials}
        self._attributes_by_model_name(fields)
        if self.kind == "ugm":  # llm_tokenizer_ugm is built from the final attributes
            self._init_ugm_encoder(fields)
        # The special tokens each parse_special mode cuts out, one regex that finds whether any of
        # them occurs at all (most texts have none, and 256 separate searches cost more), and their
        # texts by their first two bytes: the tokens present are found by looking, at each place a
        # head occurs, for the texts of that head, instead of searching the input for every text
        # (deepseek-llm has 2,385 `[PAD…]` tokens: searching for each took half its check time).
        self.cut: dict[bool, list[int]] = {}
        self.cut_rank: dict[bool, dict[int, int]] = {}  # a token's place in `cut`: the order tokens are cut in
        self.any_special: dict[bool, re.Pattern[bytes] | None] = {}
        self.by_head: dict[bool, dict[bytes, tuple[tuple[int, ...], dict[bytes, list[int]]]]] = {}
        for parse in (False, True):
            hidden = 0 if parse else ATTR_CONTROL | ATTR_UNKNOWN
            self.index_cut(parse, [t for t in self.specials if self.special_bytes[t] and not self.attrs[t] & hidden])

    def index_cut(self, parse_special: bool, tokens: list[int]) -> None:
        """The special tokens cut out in one parse_special mode, longest text first, and the indexes
        that find them. Also how tokconf's `--explain` reproduces a port that cuts other tokens."""
        self.cut[parse_special] = tokens
        self.cut_rank[parse_special] = {token: rank for rank, token in enumerate(tokens)}
        heads: dict[bytes, dict[bytes, list[int]]] = {}
        for token in tokens:
            text = self.special_bytes[token]
            heads.setdefault(text[:2], {}).setdefault(text, []).append(token)
        # Whether any may occur: a search for their heads (a few, where the texts number hundreds,
        # and a regex of all the texts takes 15 ms to compile)
        self.any_special[parse_special] = re.compile(b"|".join(map(re.escape, sorted(heads)))) if heads else None
        self.by_head[parse_special] = {head: (tuple({len(t) for t in texts}), texts) for head, texts in heads.items()}

    def _init_bpe(self, fields: dict[str, Any], name: str | None, default_id: int | None = 11) -> None:
        """llama_vocab::impl::load for BPE: `gpt2` (ids 11/11 unless given, the file's pre-tokenizer)
        or `gemma4` (no default ids, pre-tokenizer "gemma4": raw UTF-8, escaped spaces, BOS forced)."""
        pre = PRE_NAMES.get(name)
        if pre is None:
            raise UnsupportedVocab(f"pre-tokenizer {name!r} is not supported by the reference")
        if "tokenizer.ggml.merges" not in fields and name != "kimi-k2":
            raise GGUFError("cannot find tokenizer merges in the file (llama.cpp refuses to load it)")
        self.kind = "bpe"
        self.clean_spaces = pre.clean_spaces
        self.add_space_prefix = bool(fields.get("tokenizer.ggml.add_space_prefix", False))  # decode only
        bos = None if default_id is None else pre.bos_id
        self.bos_id = int(fields.get("tokenizer.ggml.bos_token_id", -1 if bos is None else bos))
        self.eos_id = int(fields.get("tokenizer.ggml.eos_token_id", -1 if default_id is None else default_id))
        self.add_bos, self.add_eos = pre.add_bos, False
        self.escape_whitespaces = pre.escape_whitespaces
        self.force_bos = pre.type == "gemma4"  # "override add_bos_token to true for Gemma4" (by pre type)
        self.encoder = BytePairEncoder(
            self.token_to_id, fields.get("tokenizer.ggml.merges", []), PRE_REGEXES[pre.type], pre.ignore_merges,
            byte_encode=pre.type not in RAW_UTF8, newline_runs=pre.type == "gemma4",
        )  # fmt: skip

    def _init_spm(self, fields: dict[str, Any]) -> None:
        """llama_vocab::impl::load for `llama` (SPM): ids 1/2, BOS added, a space prefix, no clean-up."""
        self.kind = "spm"
        self.clean_spaces = False
        self.add_space_prefix = bool(fields.get("tokenizer.ggml.add_space_prefix", True))
        self.bos_id = int(fields.get("tokenizer.ggml.bos_token_id", 1))
        self.eos_id = int(fields.get("tokenizer.ggml.eos_token_id", 2))
        self.add_bos, self.add_eos = True, False
        scores = fields.get("tokenizer.ggml.scores") or [0.0] * len(self.tokens)
        raw = [t.encode("utf-8", "surrogateescape") for t in self.tokens]
        self.encoder = SentencePieceEncoder(raw, scores)

    def _init_rwkv(self, fields: dict[str, Any]) -> None:
        """llama_vocab::impl::load for `rwkv`: no special ids unless the file names them, nothing
        added, no space prefix or clean-up; the trie holds every token's unescaped bytes."""
        self.kind = "rwkv"
        self.bos_id = int(fields.get("tokenizer.ggml.bos_token_id", -1))
        self.eos_id = int(fields.get("tokenizer.ggml.eos_token_id", -1))
        self.encoder = RwkvEncoder(self.tokens, int(fields.get("tokenizer.ggml.unknown_token_id", -1)))
        if not self.encoder.encode(b"\n"):  # load: GGML_ASSERT(... "model vocab missing newline token")
            raise UnsupportedVocab("an RWKV vocabulary without a newline token: llama.cpp aborts loading it")

    def _init_plamo2(self, fields: dict[str, Any]) -> None:
        """llama_vocab::impl::load for `plamo2`: ids 1/2 unless given, no space prefix or clean-up; the
        tokenize step adds no BOS or EOS whatever the file says (b11192's PLAMO2 case has none)."""
        self.kind = "plamo2"
        self.bos_id = int(fields.get("tokenizer.ggml.bos_token_id", 1))
        self.eos_id = int(fields.get("tokenizer.ggml.eos_token_id", 2))
        scores = fields.get("tokenizer.ggml.scores") or [0.0] * len(self.tokens)
        byte_tokens = {token for token, attr in enumerate(self.attrs) if attr & ATTR_BYTE}
        try:
            self.encoder = Plamo2Encoder(self.tokens, scores, byte_tokens)
        except MissingByteToken as error:
            raise GGUFError(f"{error} (llama.cpp refuses to load the vocabulary)") from None

    def _init_wpm(self, fields: dict[str, Any]) -> None:
        """llama_vocab::impl::load for `bert` (WPM): [CLS] 101 as BOS, [SEP] 102 at the end, [UNK] 100."""
        self.kind = "wpm"
        self.clean_spaces = True
        self.bos_id = int(fields.get("tokenizer.ggml.bos_token_id", 101))
        self.eos_id = int(fields.get("tokenizer.ggml.eos_token_id", -1))
        self.sep_id = int(fields.get("tokenizer.ggml.seperator_token_id", 102))
        self.add_bos, self.add_eos = True, False
        unk = int(fields.get("tokenizer.ggml.unknown_token_id", 100))
        lowercase = bool(fields.get("tokenizer.ggml.normalizer.lowercase", True))
        raw = [t.encode("utf-8", "surrogateescape") for t in self.tokens]
        self.encoder = WordPieceEncoder(raw, unk, lowercase)

    def _init_ugm_ids(self, fields: dict[str, Any]) -> None:
        """llama_vocab::impl::load for `t5` (UGM): EOS 1 and UNK 2 unless given, EOS added, no BOS."""
        self.kind = "ugm"
        self.add_space_prefix = bool(fields.get("tokenizer.ggml.add_space_prefix", False))
        self.bos_id = int(fields.get("tokenizer.ggml.bos_token_id", -1))
        self.eos_id = int(fields.get("tokenizer.ggml.eos_token_id", 1))
        self.add_bos, self.add_eos = False, True

    def _init_ugm_encoder(self, fields: dict[str, Any]) -> None:
        kinds = []
        for attr in self.attrs:
            if attr & ATTR_USER_DEFINED:
                kinds.append("user")
            elif attr & ATTR_NORMAL:
                kinds.append("normal")
            elif attr & ATTR_UNUSED:
                kinds.append("unused")
            else:
                kinds.append("")
        charsmap = bytes(b & 0xFF for b in fields.get("tokenizer.ggml.precompiled_charsmap") or [])
        self.encoder = UnigramEncoder(
            [t.encode("utf-8", "surrogateescape") for t in self.tokens],
            fields.get("tokenizer.ggml.scores") or [0.0] * len(self.tokens),
            kinds,
            int(fields.get("tokenizer.ggml.unknown_token_id", 2)),
            charsmap,
            self.add_space_prefix,
            bool(fields.get("tokenizer.ggml.remove_extra_whitespaces", False)),
        )

    def _attributes_by_model_name(self, fields: dict[str, Any]) -> None:
        """The end of llama_vocab::impl::load: per-model token attributes the GGUF does not carry.

        jina-v2 pre-tokenizers and nomic-bert-moe/jina-bert-v3 architectures strip whitespace left
        of `<mask>`; phi-3 strips it right of its special tokens; modern-bert left of `[MASK]`.
        """
        name = str(fields.get("general.name", "")).lower()
        pre = str(fields.get("tokenizer.ggml.pre", ""))
        arch = str(fields.get("general.architecture", ""))
        by_text = self.token_to_id
        if any(p in pre for p in ("jina-v2-de", "jina-v2-es", "jina-v2-code")) or any(
            a in arch for a in ("nomic-bert-moe", "jina-bert-v3")
        ):
            if "<mask>" in by_text:
                self.attrs[by_text["<mask>"]] |= ATTR_LSTRIP
        elif "phi-3" in name or "phi3" in name:
            for token in self.specials:
                self.attrs[token] |= ATTR_RSTRIP
            for text, value in (("</s>", True), ("<unk>", False), ("<s>", False), ("<|endoftext|>", False)):
                if text not in by_text:  # _set_token_attr: token_to_id.at() throws and the load fails
                    raise UnsupportedVocab(f"a phi-3 vocabulary without {text!r}: llama.cpp fails to load it")
                token = by_text[text]
                self.attrs[token] = self.attrs[token] | ATTR_RSTRIP if value else self.attrs[token] & ~ATTR_RSTRIP
        elif "modern-bert" in name and "[MASK]" in by_text:
            self.attrs[by_text["[MASK]"]] |= ATTR_LSTRIP

    @classmethod
    def from_gguf(cls, path: Path | str) -> Tokenizer:
        """Load a vocabulary: only the tokenizer keys of the GGUF header are read.

        Every malformed file is a typed error: `GGUFError` (the file or a key's value; llama.cpp's
        typed `get_key` and its loader refuse the same), `CharsmapError`, `UnsupportedVocab`, or
        `MissingSpecialToken`.
        """
        fields = read_tokenizer_fields(Path(path))
        _check_types(Path(path), fields)
        try:
            return cls(fields)
        except (UnsupportedVocab, MissingSpecialToken, GGUFError, CharsmapError):
            raise
        except (KeyError, IndexError, TypeError, ValueError, AttributeError, OverflowError) as error:
            raise GGUFError(f"{path}: malformed tokenizer data ({type(error).__name__}: {error})") from None

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    def token_type(self, token: int) -> int:
        """The llama_token_attr bits of a token (after llama.cpp's by-text overrides)."""
        return self.attrs[token]

    def _end_of_generation(self, fields: dict[str, Any]) -> list[int]:
        """special_eog_ids: FIM pad/repo/separator, the end-of-generation texts, EOS, EOT and EOM."""
        eog = {self.eos_id} if 0 <= self.eos_id < len(self.tokens) else set()
        by_text = self.token_to_id
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
        for text in EOG_TEXTS & by_text.keys():  # llama.cpp walks token_to_id: one id per text
            eog.add(by_text[text])
            self.attrs[by_text[text]] |= ATTR_CONTROL  # "control-looking token ... will be overridden"
        for role in ("eot", "eom"):  # "special_eot_id is not in special_eog_ids": added, as EOS is
            token = fields.get(f"tokenizer.ggml.{role}_token_id")
            if token is not None and 0 <= int(token) < len(self.tokens):
                eog.add(int(token))
        # "workaround for gemma4 and paddleocr": with <|tool_response> among them, </s> ends nothing
        # and is a NORMAL token again.
        eog_texts = {self.tokens[t]: t for t in eog}
        if "<|tool_response>" in eog_texts and "</s>" in eog_texts:
            eog.discard(eog_texts["</s>"])
            self.attrs[eog_texts["</s>"]] = ATTR_NORMAL
        return sorted(eog)

    def encode(self, data: str | bytes, add_special: bool = False, parse_special: bool = False) -> list[int]:
        """Token ids; raises `tokconf_reference.unicode.InvalidCodepoint` where llama.cpp aborts."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        out: list[int] = []
        adds = self.kind not in ("plamo2", "test")  # their cases in llama_tokenize_impl add nothing
        if add_special and adds and (self.add_bos or self.kind == "wpm"):  # WPM always starts with [CLS]
            if self.bos_id < 0:
                raise MissingSpecialToken("the vocabulary adds BOS but has none (llama.cpp aborts)")
            out.append(self.bos_id)
        prev_special = True  # SPM: a space prefix for the first fragment and after each special token
        for fragment in self._partition(raw, parse_special):
            if isinstance(fragment, int):
                out.append(fragment)
                prev_special = True
            elif isinstance(self.encoder, SentencePieceEncoder):
                out.extend(self._fragment_ids(fragment, self.add_space_prefix and prev_special))
                prev_special = False
            else:
                out.extend(self._fragment_ids(fragment, False))
        if add_special and self.kind == "wpm":  # and ends with [SEP]
            out.append(self.sep_id)
        elif add_special and self.add_eos and adds:
            if self.eos_id < 0:
                raise MissingSpecialToken("the vocabulary adds EOS but has none (llama.cpp aborts)")
            out.append(self.eos_id)
        return out

    def _fragment_ids(self, fragment: bytes, space_prefix: bool) -> tuple[int, ...]:
        """A text fragment's ids, kept for the last few fragments: a fragment's ids depend on it and
        the SPM space prefix alone, and a check asks for each text in three modes in a row (two of
        them partition it alike), so the pre-tokenizer's regexes run once instead of three times."""
        key = (fragment, space_prefix)
        ids = self._recent.get(key)
        if ids is None:
            ids = tuple(self._encode_fragment(fragment, space_prefix))
            if len(fragment) <= RECENT_BYTES:
                while self._recent and (
                    len(self._recent) >= RECENT_FRAGMENTS
                    or len(fragment) + sum(len(kept) for kept, _ in self._recent) > RECENT_BYTES
                ):
                    del self._recent[next(iter(self._recent))]  # the oldest
                self._recent[key] = ids
        return ids

    def _encode_fragment(self, fragment: bytes, space_prefix: bool) -> list[int]:
        """The ids of one text fragment between special tokens (llama_tokenize_impl's per-model cases)."""
        if isinstance(self.encoder, WordPieceEncoder):
            return self.encoder.encode(decode(fragment))
        if isinstance(self.encoder, (UnigramEncoder, RwkvEncoder, Plamo2Encoder, ChunkHashEncoder)):
            return self.encoder.encode(fragment)
        if isinstance(self.encoder, SentencePieceEncoder):
            text = (b" " if space_prefix else b"") + fragment
            return self.encoder.encode(text.replace(b" ", ESCAPED_SPACE))
        if self.escape_whitespaces:
            fragment = fragment.replace(b" ", ESCAPED_SPACE)
        if self.dna is not None:
            out: list[int] = []
            for part in self.dna.split(fragment):
                out.extend(part if isinstance(part, list) else self.encoder.encode(decode(part)))
            return out
        if self.whitespace_lowercase is None:
            return self.encoder.encode(decode(fragment))
        segments = _whitespace_segments(decode(fragment), self.whitespace_lowercase)
        return [token for segment in segments for token in self.encoder.encode(segment)]

    def _partition(self, raw: bytes, parse_special: bool) -> list[bytes | int]:
        """tokenizer_st_partition: cut special-token texts out of the raw text fragments."""
        fragments: list[bytes | int] = [raw] if raw else []
        finder = self.any_special[parse_special]
        if finder is None or finder.search(raw) is None:
            return fragments
        present = self._present(raw, parse_special)
        for token in sorted(present, key=self.cut_rank[parse_special].__getitem__):
            text = self.special_bytes[token]
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

    def _present(self, raw: bytes, parse_special: bool) -> set[int]:
        """The cut tokens whose text occurs in `raw` (overlapping occurrences included)."""
        present: set[int] = set()
        for head, (lengths, texts) in self.by_head[parse_special].items():
            at = raw.find(head)
            while at >= 0:
                for length in lengths:
                    present.update(texts.get(raw[at : at + length], ()))
                at = raw.find(head, at + 1)
        return present

    def token_to_piece(self, token: int, special: bool = True) -> bytes:
        """llama_token_to_piece (lstrip 0): the bytes a token stands for.

        Control and unknown tokens give their text only with `special`; user-defined ones always;
        normal tokens are byte-decoded (`llama_decode_text`), byte tokens give their byte.
        """
        known = self._pieces[bool(special)]
        piece = known.get(token)
        if piece is None:
            piece = known[token] = self._piece(token, special)
        return piece

    def _piece(self, token: int, special: bool) -> bytes:
        attr = self.attrs[token]
        if attr & (ATTR_UNKNOWN | ATTR_CONTROL):
            if not special:
                return b""
        elif (other := self._pieces[not special].get(token)) is not None:  # `special` changes nothing else
            return other
        text = self.tokens[token]
        if self.kind == "test":  # the id in lowercase hex
            return f"{token:x}".encode()
        if self.kind == "rwkv":  # every attribute: the unescaped bytes
            return unescape(text)
        if self.kind == "plamo2":  # a byte token spelled <0xXX> gives its byte; any other token its text
            byte = byte_token(text) if attr & ATTR_BYTE else None
            return text.encode("utf-8", "surrogateescape") if byte is None else bytes([byte])
        if attr & (ATTR_UNKNOWN | ATTR_CONTROL | ATTR_USER_DEFINED):
            return text.encode("utf-8", "surrogateescape")
        if attr & ATTR_NORMAL:
            if self.kind in ("spm", "wpm", "ugm") or self.escape_whitespaces:  # llama_unescape_whitespace
                return text.encode("utf-8", "surrogateescape").replace(ESCAPED_SPACE, b" ")
            return _decode_text(text)
        if attr & ATTR_BYTE:  # <0xXX>
            return bytes([int(text[3:5], 16)])
        return b""

    def decode(self, ids: list[int], remove_special: bool = False, unparse_special: bool = False) -> bytes:
        """llama_detokenize: the pieces joined, BOS/EOS dropped on request, spaces cleaned as the vocab says."""
        remove_space = self.add_space_prefix
        if remove_special and self.add_bos and ids and ids[0] == self.bos_id:
            ids = ids[1:]
            remove_space = False
        if remove_special and self.add_eos and ids and ids[-1] == self.eos_id:
            ids = ids[:-1]
        known = self._pieces[bool(unparse_special)]
        if not known.keys() >= set(ids):  # a check decodes every recorded text: most pieces are known
            for i in ids:
                self.token_to_piece(i, unparse_special)
        pieces = list(map(known.__getitem__, ids))
        if remove_space and pieces and pieces[0].startswith(b" "):  # token_to_piece's lstrip = 1
            pieces[0] = pieces[0][1:]
        text = b"".join(pieces)
        return _clean_spaces(text) if self.clean_spaces else text


class StreamDecoder:
    """Text for streaming output: token pieces in, complete UTF-8 characters out.

    A character split across tokens is held back until its last byte arrives; invalid bytes become
    U+FFFD (the standard library's incremental UTF-8 decoder does the work).
    """

    def __init__(self, tokenizer: Tokenizer, special: bool = True) -> None:
        self.tokenizer = tokenizer
        self.special = special
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, token: int) -> str:
        return self.decoder.decode(self.tokenizer.token_to_piece(token, self.special))

    def flush(self) -> str:
        return self.decoder.decode(b"", final=True)


def _whitespace_segments(text: str, lowercase: bool) -> list[str]:
    """llm_tokenizer_whitespace_session: the runs between whitespace code points (llama.cpp's
    whitespace flag), each lowercased by `unicode_tolower` when the vocab says so."""
    segments: list[str] = []
    segment: list[str] = []
    for char in text:
        if ord(char) in WHITESPACE:
            segments.append("".join(segment))
            segment = []
        else:
            segment.append(chr(LOWERCASE.get(ord(char), ord(char))) if lowercase else char)
    segments.append("".join(segment))
    return [s for s in segments if s]


def _decode_text(text: str) -> bytes:
    """llama_decode_text: each character back to its byte; others as llama.cpp marks them.

    Almost every token's characters all stand for bytes: translated and encoded at C speed (a check
    decodes every token of the vocab twice; command-r has 256,000)."""
    try:
        return text.translate(_TO_BYTE).encode("latin-1")
    except UnicodeEncodeError:
        return _decode_text_marked(text)


def _decode_text_marked(text: str) -> bytes:
    out = bytearray()
    for ch in text:
        byte = UNICODE_TO_BYTE.get(ch)
        if byte is not None:
            out.append(byte)
        else:
            utf8 = ch.encode("utf-8", "surrogatepass")
            out += b"[UNK_BYTE_0x" + utf8.hex().encode() + text.encode("utf-8", "surrogateescape") + b"]"
    return bytes(out)


# llama_vocab::impl::detokenize's clean-up passes (clean_spaces), each a loop that rewrites the buffer
# it reads. As regexes, applied in the same order:
# 1. " ?", " !", " .", " ,": the space goes. The loop compares the byte before, which it has not
#    rewritten yet, so every such space goes, the first byte's too.
# 2. " ' ": both spaces go. The loop writes a NUL over the space after the quote, so that space
#    cannot be the space before a next quote: matches do not overlap, as re.sub's do not.
# 3. " 's", " 'm", " 're", " 've": the space goes.
# (Checked against the literal loops on every string of up to 6 of the bytes " 'smrev?a", and on
# 400,000 random ones; tests/test_decoding.py compares llama.cpp's recorded detokenizations.)
_SPACE_BEFORE_PUNCT = re.compile(rb" (?=[?!.,])")
_SPACES_AROUND_QUOTE = re.compile(rb" ' ")
_SPACE_BEFORE_CONTRACTION = re.compile(rb" (?='(?:[sm]|re|ve))")


def _clean_spaces(data: bytes) -> bytes:
    """The three clean-up passes of llama_vocab::impl::detokenize, in its order."""
    data = _SPACE_BEFORE_PUNCT.sub(b"", data)
    data = _SPACES_AROUND_QUOTE.sub(b"'", data)
    return _SPACE_BEFORE_CONTRACTION.sub(b"", data)
