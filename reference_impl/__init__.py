"""The bundled pure-Python reference tokenizer: `from tokconf_reference import Tokenizer`.

Token-identical to llama.cpp b11192 on every bundled recording: byte-level BPE (`gpt2`, all 90
`tokenizer.ggml.pre` names), gemma4 (BPE on raw UTF-8), SentencePiece (`llama`), WordPiece (`bert`)
and Unigram (`t5`, the precompiled charsmap and the Viterbi); RWKV (`rwkv`), PLaMo-2 (`plamo2`),
`whitespace`, `hybriddna` and `test`, matched against llama.cpp on the synthetic vocabularies
(`harness.synth`), since none ships. `none` (llama.cpp aborts on every input) and a model or pre
name llama.cpp b11192 does not know raise `UnsupportedVocab`. Modules: `gguf_reader`
(bounds-checked header reader), `unicode` (llama.cpp's tables and UTF-8 decoding), `pretokenize`
(unicode_regex_split), `bpe`, `spm`, `wpm`, `ugm`, `rwkv`, `plamo2`, `hybriddna` and `chunk_hash`
(the algorithms), `word_cache`, `tokenizer` (special tokens, BOS/EOS, decoding, the public class).
"""

from tokconf_reference.tokenizer import StreamDecoder, Tokenizer, UnsupportedVocab

__all__ = ["StreamDecoder", "Tokenizer", "UnsupportedVocab"]
