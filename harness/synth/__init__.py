"""Synthetic vocabularies: GGUF files derived deterministically from the shipped test vocabularies, so
that every pre-tokenizer name, every tokenizer model and the vocab rules ports get wrong have a
recording, though llama.cpp ships no test vocabulary for them.

`recipes` says what each file is; `gguf_write` writes it byte for byte the same on every install;
`files` makes a recipe's file in the cache and finds the file a recording was made from again.
"""
