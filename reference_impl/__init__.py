"""The bundled pure-Python reference tokenizer: `from reference_impl import Tokenizer`.

Token-identical to llama.cpp b11192 on every bundled recording of the vocabulary types it
supports — so far byte-level BPE (`gpt2`, the 13 BPE test vocabularies' pre-tokenizers), gemma4
(BPE on raw UTF-8), SentencePiece (`llama`: baichuan, llama-spm, phi-3) and WordPiece (`bert`:
bert-bge). UGM (`t5`) vocabularies raise `UnsupportedVocab` (and `tokconf check` reports them as
unsupported). Modules: `gguf_reader`
(bounds-checked header reader), `unicode` (llama.cpp's tables and UTF-8 decoding), `pretokenize`
(unicode_regex_split), `bpe`, `spm` and `wpm` (the algorithms), `tokenizer` (special tokens,
BOS/EOS, decoding, the public class).
"""

from reference_impl.tokenizer import StreamDecoder, Tokenizer, UnsupportedVocab

__all__ = ["StreamDecoder", "Tokenizer", "UnsupportedVocab"]
