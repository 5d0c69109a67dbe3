"""The reference's streaming decoder. (Its pieces and detokenization are checked against the recorded
decodings of every vocabulary in test_reference_conformance.py.)"""

from __future__ import annotations

from tokconf.builds.build import Build
from tokconf_reference import Tokenizer
from tokconf_reference.tokenizer import StreamDecoder


def test_stream_decoder_holds_back_characters_split_across_tokens(llama_build: Build) -> None:
    tok = Tokenizer.from_gguf(llama_build.models_dir / "ggml-vocab-qwen2.gguf")
    text = "naïve 🤖 漢字 👨‍👩‍👧 ok"
    ids = tok.encode(text.encode())
    assert any(
        len(tok.token_to_piece(i).decode("utf-8", errors="replace")) != len(tok.token_to_piece(i))
        or "\ufffd" in tok.token_to_piece(i).decode("utf-8", errors="replace")
        for i in ids
    )  # some split
    stream = StreamDecoder(tok)
    parts = [stream.feed(i) for i in ids] + [stream.flush()]
    assert "".join(parts) == text
    assert not any("\ufffd" in part for part in parts)
