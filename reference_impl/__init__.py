"""The bundled pure-Python reference tokenizer: `from reference_impl import Tokenizer`.

Token-identical to llama.cpp b11192 on every bundled recording of the vocabulary types it
supports — so far byte-level BPE (`gpt2`) with the pre-tokenizers of llama.cpp's 13 BPE test
vocabularies. SPM, WPM, UGM and gemma4 vocabularies raise `UnsupportedVocab` (and `tokconf check`
reports them as unsupported). Modules: `gguf_reader` (bounds-checked header reader), `unicode`
(llama.cpp's tables and UTF-8 decoding), `pretokenize` (unicode_regex_split), `bpe` (merges),
`tokenizer` (special tokens, BOS/EOS, the public class).
"""

from reference_impl.tokenizer import StreamDecoder, Tokenizer, UnsupportedVocab

__all__ = ["StreamDecoder", "Tokenizer", "UnsupportedVocab"]
