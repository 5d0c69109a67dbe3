"""RWKV (`tokenizer.ggml.model = rwkv`): greedy longest match over every token's bytes.

llama.cpp b11192's `llm_tokenizer_rwkv` puts the unescaped bytes of every token (control and unused
ones included, a repeated text keeping the last id) into a trie; `llm_tokenizer_rwkv_session` then,
at each position, walks the trie as far as the input allows and emits the longest token met on the
way, or the unknown id (-1 unless the file names one) when no token starts with that byte.
"""

from __future__ import annotations

from tokconf_reference.errors import LlamaAborts


class RwkvLoop(LlamaAborts, ValueError):
    """An input on which llama.cpp never returns: a token starts with a byte that is not itself a
    token, and the input continues otherwise (the session's position goes back to 0 for ever)."""


def unescape(text: str) -> bytes:
    """`llama_unescape_rwkv_token`: the converter writes `repr(bytes)[2:-1]`; `\\t \\n \\r \\xNN`
        are read back, any other escaped character stands for itself, and hex digits are read as llama.cpp
        reads them (lowercase `a`-`f`; anything at or above `a` counts from it, anything else, bytes above
    0x7F too, from `0`, in 8-bit arithmetic)."""
    out = bytearray()
    escaping = False
    hex_remaining = hex_acc = 0
    for byte in text.encode("utf-8", "surrogateescape"):
        if hex_remaining:
            char = byte - 256 if byte >= 0x80 else byte  # `const char & c`: signed on llama.cpp's platforms
            value = char - ord("a") + 10 if char >= ord("a") else char - ord("0")
            hex_acc = ((hex_acc << 4) + value) & 0xFF
            hex_remaining -= 1
            if not hex_remaining:
                out.append(hex_acc)
                hex_acc = 0
        elif escaping:
            if byte == ord("x"):
                hex_remaining = 2
            else:
                out.append({ord("t"): 9, ord("n"): 10, ord("r"): 13}.get(byte, byte))
            escaping = False
        elif byte == ord("\\"):
            escaping = True
        else:
            out.append(byte)
    return bytes(out)


class RwkvEncoder:
    def __init__(self, texts: list[str], unknown_id: int) -> None:
        self.ids: dict[bytes, int] = {}
        self.prefixes: set[bytes] = set()  # the trie's nodes
        for token, text in enumerate(texts):
            data = unescape(text)
            self.ids[data] = token
            self.prefixes.update(data[:n] for n in range(1, len(data) + 1))
        self.unknown_id = unknown_id

    def encode(self, text: bytes) -> list[int]:
        out: list[int] = []
        position = 0
        while position < len(text):
            if text[position : position + 1] not in self.prefixes:
                out.append(self.unknown_id)
                position += 1
                continue
            end = position + 1
            longest = 0
            while end <= len(text) and text[position:end] in self.prefixes:
                if text[position:end] in self.ids:
                    longest = end
                end += 1
            if not longest:
                raise RwkvLoop(f"no token is a prefix of {text[position:end]!r}: llama.cpp loops for ever")
            out.append(self.ids[text[position:longest]])
            position = longest
        return out
