"""Implementations under test, one module per kind behind the protocols of `base`: a Python factory
(`python`), a program in any language over the line protocol (`command`), a live llama.cpp build
(`llama_cpp`), and peers such as transformers (`peers`). `resolve` turns an `--impl` value into one."""
