"""The one exception the reference raises for an input llama.cpp refuses.

llama.cpp b11192 aborts on some inputs (an invalid code point in `unicode_cpt_from_utf8`, a missing
byte token in `llama_vocab::impl::byte_to_token`, GGML_ASSERTs) and loops for ever on others (RWKV);
the reference raises a subclass of `LlamaAborts` there, so an adapter can tell "llama.cpp refuses this
input" from a bug with one `except` (tokconf's `reference` implementation turns it into `Refused`).
"""


class LlamaAborts(Exception):
    """llama.cpp aborts, or never returns, on this input: a port must refuse it."""
