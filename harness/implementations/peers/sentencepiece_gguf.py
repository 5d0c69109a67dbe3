"""A peer under test: a `sentencepiece.SentencePieceProcessor` built from an SPM or Unigram GGUF's
pieces (`--impl sentencepiece-gguf`, `pip install -e '.[peers]'`).

A GGUF made from a SentencePiece model carries that model's pieces, scores and piece types; this
plug-in writes them back into a sentencepiece `ModelProto` and loads it with
`SentencePieceProcessor(model_proto=...)`:

- model type: `tokenizer.ggml.model` `llama` is sentencepiece's BPE model (llama.cpp's SPM tokenizer
  merges the adjacent pair whose merged piece scores highest, which is that model's algorithm), `t5`
  its Unigram model. Any other tokenizer model is declined.
- pieces: every token, in id order, with its score (`tokenizer.ggml.scores`, 0 without them) and its
  type: token_type 1 normal, 3 control, 4 user-defined, 5 unused, 6 byte are sentencepiece's types of
  the same numbers. sentencepiece allows exactly one UNKNOWN piece: the GGUF's
  `tokenizer.ggml.unknown_token_id` (or, without it, the one piece typed unknown) is it, whatever its
  token_type, and any other piece typed unknown (phi-3's 53 `[PAD…]` fillers) is UNUSED, which
  sentencepiece, like an unknown piece, never produces from text.
- trainer_spec: `byte_fallback` when the vocabulary has byte pieces; the BOS/EOS/unknown/padding
  pieces named by the GGUF's ids (sentencepiece knows them by their text).
- normalizer_spec: `add_dummy_prefix` is `tokenizer.ggml.add_space_prefix` (absent: true for `llama`,
  false for `t5`, as llama.cpp reads it), `remove_extra_whitespaces` is
  `tokenizer.ggml.remove_extra_whitespaces` (absent: false), `escape_whitespaces` is on (spaces are
  `▁`); no normalization rule (`identity`) unless the GGUF has `tokenizer.ggml.precompiled_charsmap`,
  which is then the normalizer's `precompiled_charsmap`.

The `ModelProto` is written in protobuf's wire format here (field numbers from sentencepiece's
`sentencepiece_model.proto`): `sentencepiece_model_pb2` needs the `protobuf` package, which neither
sentencepiece nor tokconf depends on. sentencepiece parses and validates it; a model it refuses is
declined with its message.

Modes, as a sentencepiece user writes them:

- `add_special` is `encode(data, add_bos=..., add_eos=...)`, each on when the GGUF's
  `tokenizer.ggml.add_bos_token`/`add_eos_token` says so (absent: BOS for `llama`, EOS for `t5`,
  llama.cpp's defaults). sentencepiece adds only a BOS/EOS piece that is a control piece: where the
  GGUF's is not, `add_special` inputs are unsupported.
- `parse_special` has no counterpart: sentencepiece never tokenizes a control piece's text (it is
  ordinary text) and always matches user-defined pieces, so both values give the same ids. Where
  llama.cpp parses control texts (`parse_special=true`), the two differ: a finding, not patched here.

Input: sentencepiece 0.2.3's `encode` takes `str` or `bytes` (its type stub says so), so the bytes are
passed as they are, and inputs that are not valid UTF-8 are judged like any other: sentencepiece
reads malformed UTF-8 as U+FFFD, where llama.cpp falls back to each byte's own token.

Facts: `add_bos`/`add_eos` as above; `bos_id`/`eos_id` are what the processor reports
(`bos_id()`/`eos_id()`: the piece must be a control piece, else -1). sentencepiece has no
end-of-generation set, so `eog_ids` is not exposed.

Decoding is not exposed: sentencepiece has no per-token bytes call like `llama_token_to_piece`
(`id_to_piece` spells `▁` and `<0x0A>` out, `decode([id])` drops a leading space as the dummy prefix),
and tokconf checks decoding only with `token_to_piece`, `decode` and `n_tokens` together.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tokconf_reference.gguf_reader import read_tokenizer_fields

from ..base import Unsupported

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
MODEL_TYPES = {"llama": 2, "t5": 1}  # TrainerSpec.ModelType: BPE = 2, UNIGRAM = 1


# protobuf's wire format: what sentencepiece_model_pb2 would serialize for the fields set below.
def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # an int32 below zero is ten bytes of two's complement
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, value: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(value)) + value


def _float(field: int, value: float) -> bytes:
    return _varint(field << 3 | 5) + struct.pack("<f", value)


def _piece(text: str, score: float, kind: int) -> bytes:
    """ModelProto.SentencePiece: piece = 1, score = 2, type = 3."""
    return _bytes(1, text.encode("utf-8")) + _float(2, score) + _int(3, kind)


def _unknown_id(fields: dict[str, Any], types: Sequence[int]) -> int:
    named = fields.get("tokenizer.ggml.unknown_token_id")
    if isinstance(named, int) and 0 <= named < len(types):
        return named
    typed = [i for i, kind in enumerate(types) if kind == UNKNOWN]
    if len(typed) == 1:
        return typed[0]
    raise Unsupported(
        "sentencepiece needs exactly one unknown piece: the GGUF has no tokenizer.ggml.unknown_token_id "
        f"and {len(typed)} pieces typed unknown"
    )


def _model_proto(fields: dict[str, Any], model: str) -> bytes:
    tokens: list[str] = fields["tokenizer.ggml.tokens"]
    scores: list[float] = fields.get("tokenizer.ggml.scores") or [0.0] * len(tokens)
    types: list[int] = fields.get("tokenizer.ggml.token_type") or [NORMAL] * len(tokens)
    if not len(tokens) == len(scores) == len(types):
        raise Unsupported("the GGUF's tokens, scores and token types differ in length")
    unknown = _unknown_id(fields, types)
    pieces = []
    for token_id, (text, score, kind) in enumerate(zip(tokens, scores, types, strict=True)):
        if token_id == unknown:
            kind = UNKNOWN
        elif kind == UNKNOWN:
            kind = UNUSED
        elif kind not in (NORMAL, CONTROL, USER_DEFINED, UNUSED, BYTE):
            raise Unsupported(f"token {token_id} {text!r} has token_type {kind}, which sentencepiece has no type for")
        pieces.append(_bytes(1, _piece(text, score, kind)))

    def named(key: str) -> int:
        value = fields.get(key)
        return value if isinstance(value, int) and 0 <= value < len(tokens) else -1

    # TrainerSpec: model_type 3, vocab_size 4, byte_fallback 35, unk/bos/eos/pad ids 40-43, pieces 45-48.
    trainer = _int(3, MODEL_TYPES[model]) + _int(4, len(tokens)) + _int(35, BYTE in types)
    for id_field, piece_field, token_id in (
        (40, 45, unknown),
        (41, 46, named("tokenizer.ggml.bos_token_id")),
        (42, 47, named("tokenizer.ggml.eos_token_id")),
        (43, 48, named("tokenizer.ggml.padding_token_id")),
    ):
        if token_id >= 0:  # else sentencepiece's defaults (`<s>`, `</s>`, …)
            trainer += _int(id_field, token_id) + _bytes(piece_field, tokens[token_id].encode("utf-8"))
    # NormalizerSpec: name 1, precompiled_charsmap 2, add_dummy_prefix 3, remove_extra_whitespaces 4,
    # escape_whitespaces 5.
    charsmap = bytes(fields.get("tokenizer.ggml.precompiled_charsmap") or b"")
    add_prefix = fields.get("tokenizer.ggml.add_space_prefix", model == "llama")
    remove_extra = fields.get("tokenizer.ggml.remove_extra_whitespaces", False)
    normalizer = _bytes(2, charsmap) if charsmap else _bytes(1, b"identity")
    normalizer += _int(3, bool(add_prefix)) + _int(4, bool(remove_extra)) + _int(5, True)
    return b"".join(pieces) + _bytes(2, trainer) + _bytes(3, normalizer)


class SentencePieceGGUF:
    """A GGUF's SentencePiece vocabulary as a `SentencePieceProcessor`."""

    def __init__(self, path: Path) -> None:
        try:
            import sentencepiece
        except ImportError as error:
            raise Unsupported(f"sentencepiece is not installed ({error}): pip install -e '.[peers]'") from None
        fields = read_tokenizer_fields(path)
        model = fields.get("tokenizer.ggml.model")
        if model not in MODEL_TYPES:
            raise Unsupported(
                f"sentencepiece has BPE ('llama') and Unigram ('t5') models: tokenizer.ggml.model is {model!r}"
            )
        proto = _model_proto(fields, model)
        try:
            self.processor = sentencepiece.SentencePieceProcessor(model_proto=proto)
        except (RuntimeError, OSError, ValueError) as error:  # the model's own validation
            raise Unsupported(f"sentencepiece does not load the pieces of {path.name}: {error}") from None
        # The facts the check compares (tokconf.core.facts.Fact).
        add_bos = fields.get("tokenizer.ggml.add_bos_token")
        add_eos = fields.get("tokenizer.ggml.add_eos_token")
        self.add_bos: bool = bool(add_bos) if add_bos is not None else model == "llama"
        self.add_eos: bool = bool(add_eos) if add_eos is not None else model == "t5"
        self.bos_id: int = self.processor.bos_id()
        self.eos_id: int = self.processor.eos_id()

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        add_bos, add_eos = add_special and self.add_bos, add_special and self.add_eos
        if (add_bos and self.bos_id < 0) or (add_eos and self.eos_id < 0):
            raise Unsupported("sentencepiece adds BOS/EOS only as a control piece, and the GGUF's is not one")
        return list(self.processor.encode(data, add_bos=add_bos, add_eos=add_eos))


def from_gguf(path: Path) -> SentencePieceGGUF:
    """The `tokconf.implementations` entry point `sentencepiece-gguf`."""
    return SentencePieceGGUF(path)
