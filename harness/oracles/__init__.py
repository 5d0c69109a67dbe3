"""The live llama.cpp, crash-isolated: libllama in a fork-server worker (`client`, `worker`, `libllama`),
asked first whether it can serve at all when it is the user's own (`probe`), and `llama-tokenize` once
per input (`llama_tokenize`) as the independent path it is cross-checked against.
"""
