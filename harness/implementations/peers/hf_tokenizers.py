"""A peer under test: Hugging Face `tokenizers` over a model's original tokenizer.json, the file a model
converter checks a GGUF against (`--impl hf-tokenizers:PATH/tokenizer.json`, `pip install -e '.[peers]'`).

The tokenizer.json is loaded once (`tokenizers.Tokenizer.from_file`) and served for every GGUF whose
tokens it matches id for id: `tokenizer.ggml.tokens[i]` is the text `get_vocab(with_added_tokens=True)`
maps to `i`, for every id of either side. The converter stores a byte-level BPE's tokens (`Ġthe`) and
a SentencePiece-style vocabulary's (`▁the`, `<0x0A>`) as tokenizer.json spells them, so the texts are
compared as they are. Any other vocabulary is declined (`Unsupported`) with a `vocab-mismatch` reason
that counts the ids that differ and shows the first few, so a wrong pairing is one unsupported
vocabulary, never thousands of failures. (A WordPiece tokenizer.json is declined this way too: the
converter rewrites its tokens to phantom-space form, `▁word` and `ing` for `##ing`.)

Modes, as a `tokenizers` user sets them:
- `add_special` is `encode(text, add_special_tokens=...)`: the tokenizer.json's post-processor decides
  what is added (a `TemplateProcessing` that puts `<|begin_of_text|>` first adds BOS; a `ByteLevel`
  post-processor adds nothing);
- `parse_special=False` is `encode_special_tokens = True` (tokenizers >= 0.19: special tokens' texts
  are then ordinary text), `parse_special=True` is `encode_special_tokens = False`, the default.
An input that is not valid UTF-8 cannot be given to the `str` API, so it is unsupported.

Facts come from the post-processor only, read the way it acts: a one-letter text is encoded with and
without special tokens, and what `add_special_tokens=True` puts around it is what the file adds. One
token before it is BOS (`add_bos`, `bos_id`), one after it EOS (`add_eos`, `eos_id`); nothing before
(after) it is `add_bos` (`add_eos`) false, with the id not exposed, since a tokenizer.json names no BOS
or EOS it does not add (tokenizer_config.json does, and is not read). More than one token on a side
exposes neither fact of that side, and `eog_ids` is never exposed. Decoding is not exposed: `decode`
and the decoder answer `str`, so a token that is part of a UTF-8 sequence has no bytes to give, and
llama.cpp's `remove_special` (only a leading BOS and trailing EOS) has no counterpart.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tokconf_reference.gguf_reader import read_tokenizer_fields

from ...core.errors import TokconfError
from ...core.files import FileKind, regular_file
from ..base import Unsupported

if TYPE_CHECKING:
    from tokenizers import Tokenizer

ARGUMENT = "PATH/tokenizer.json"
SHOWN = 3  # differing ids a vocab-mismatch reason shows
PROBE = "a"  # encoded with and without special tokens to see what the post-processor adds

_LOADED: dict[Path, Tokenizer] = {}


def _tokenizer(path: Path) -> Tokenizer:
    """The tokenizer.json at `path`, loaded once per process: a regular file within its cap
    (`regular_file`), so a FIFO or `/dev/zero` is refused before `tokenizers` reads it."""
    if path not in _LOADED:
        try:
            from tokenizers import Tokenizer
        except ImportError as error:
            raise TokconfError(f"tokenizers is not installed ({error})", "pip install -e '.[peers]'") from None
        if not path.exists():
            raise TokconfError(f"{path}: no such file", f"give the model's tokenizer.json: hf-tokenizers:{ARGUMENT}")
        regular_file(path, FileKind.TOKENIZER_JSON)
        try:
            _LOADED[path] = Tokenizer.from_file(str(path))
        except Exception as error:  # tokenizers raises a bare Exception for a file it cannot parse
            raise TokconfError(f"{path}: tokenizers cannot load it: {error}", "give a tokenizer.json") from None
    return _LOADED[path]


def _shown(text: str | None) -> str:
    return "(none)" if text is None else repr(text)


def vocab_mismatch(tokens: list[str], tokenizer: Tokenizer) -> str | None:
    """Why the GGUF's tokens are not the tokenizer.json's id for id, or None when they are."""
    by_id = {i: text for text, i in tokenizer.get_vocab(with_added_tokens=True).items()}
    size = max(len(by_id), max(by_id, default=-1) + 1)
    differ = [i for i in range(max(size, len(tokens))) if by_id.get(i) != (tokens[i] if i < len(tokens) else None)]
    if not differ:
        return None
    first = ", ".join(
        f"{i} {_shown(by_id.get(i))} vs {_shown(tokens[i] if i < len(tokens) else None)}" for i in differ[:SHOWN]
    )
    return (
        f"vocab-mismatch: tokenizer.json has {len(by_id)} tokens, the GGUF {len(tokens)}; "
        f"{len(differ)} ids differ, first {first}"
    )


class HFTokenizer:
    """One tokenizer.json served for one GGUF vocabulary whose tokens it matches."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        # The facts the check compares (tokconf.core.facts.Fact); None is "not exposed".
        self.add_bos: bool | None = None
        self.add_eos: bool | None = None
        self.bos_id: int | None = None
        self.eos_id: int | None = None
        self._read_post_processor()

    def _read_post_processor(self) -> None:
        """What `add_special_tokens=True` adds around a plain text (see the module docstring)."""
        plain = self._encode(PROBE, add_special=False, parse_special=True)
        full = self._encode(PROBE, add_special=True, parse_special=True)
        starts = [i for i in range(len(full) - len(plain) + 1) if full[i : i + len(plain)] == plain]
        if not plain or len(starts) != 1:
            return  # the post-processor changes the text's own ids: no fact can be read off it
        before, after = full[: starts[0]], full[starts[0] + len(plain) :]
        if len(before) <= 1:
            self.add_bos, self.bos_id = bool(before), (before[0] if before else None)
        if len(after) <= 1:
            self.add_eos, self.eos_id = bool(after), (after[0] if after else None)

    def _encode(self, text: str, add_special: bool, parse_special: bool) -> list[int]:
        self.tokenizer.encode_special_tokens = not parse_special
        return list(self.tokenizer.encode(text, add_special_tokens=add_special).ids)

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise Unsupported("not valid UTF-8: a str API cannot be given these bytes") from None
        return self._encode(text, add_special, parse_special)


class Factory:
    """The `tokconf.implementations` entry point `hf-tokenizers`: called with the tokenizer.json's path
    (`--impl hf-tokenizers:PATH/tokenizer.json`), it gives the factory tokconf calls with each GGUF."""

    argument = ARGUMENT  # it takes one (tokconf.implementations.resolve)

    def __call__(self, tokenizer_json: str) -> Callable[[Path], HFTokenizer]:
        path = Path(tokenizer_json).expanduser().absolute()  # as given: a message names the link, not its target
        _tokenizer(path)  # a wrong path or file is the user's to fix, before any vocabulary is loaded

        def for_gguf(gguf: Path) -> HFTokenizer:
            tokenizer = _tokenizer(path)
            tokens = read_tokenizer_fields(Path(gguf)).get("tokenizer.ggml.tokens")
            if not isinstance(tokens, list):
                raise Unsupported(f"vocab-mismatch: {Path(gguf).name} has no tokenizer.ggml.tokens")
            mismatch = vocab_mismatch([str(t) for t in tokens], tokenizer)
            if mismatch is not None:
                raise Unsupported(mismatch)
            return HFTokenizer(tokenizer)

        return for_gguf


factory = Factory()
