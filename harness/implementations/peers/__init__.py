"""Peers: tokenizer libraries people use beside llama.cpp, each behind the port contract, one module
per library (docs/reports/ecosystem.md measures them all): `transformers_gguf`, `tiktoken_gguf`,
`sentencepiece_gguf`, `hf_tokenizers`. Each declares what it cannot do (`Unsupported`) and maps
add_special/parse_special to the library's own switches as a user of that library would."""
