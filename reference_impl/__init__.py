"""The bundled pure-Python reference tokenizer (work in progress; see README).

So far: `gguf_reader`, the bounds-checked GGUF header reader the tokenizer will load vocabularies
with. The `Tokenizer` API of the reference issue is not here yet, and `tokconf check` says so.
"""
