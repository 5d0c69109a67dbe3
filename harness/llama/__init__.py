"""Provisioning llama.cpp: the pinned builds (`pins`), their source in the cache (`fetch`), the cmake
build of libllama and llama-tokenize (`build`), and the vocabulary files a build ships (`vocabs`)."""
