"""The bundled pure-Python reference tokenizer (work in progress; see README).

So far: `gguf_reader` (a bounds-checked GGUF header reader for the tokenizer keys) and `unicode`
(llama.cpp's own Unicode tables and UTF-8 decoding, from `unicode_data_b11192`, which
`tools/convert_unicode_data.py` generates from a build's src/unicode-data.cpp). The `Tokenizer` API
of the reference issue is not here yet, and `tokconf check --impl reference` says so.
"""
