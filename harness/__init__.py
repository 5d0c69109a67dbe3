"""tokconf: record what a pinned llama.cpp answers for a tokenizer, and check other tokenizers against it."""

__version__ = "0.1.0"
