"""The live llama.cpp, crash-isolated: libllama in a fork-server worker (`client`, `worker`, `libllama`),
and `llama-tokenize` once per input (`llama_tokenize`) as the independent path it is cross-checked against.
"""
