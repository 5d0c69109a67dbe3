"""Provisioning llama.cpp: the pinned builds (`pins`), their source in the cache (`fetch`), the cmake
build of libllama and llama-tokenize (`build`), a llama.cpp of the user's own, a source tree or a
libllama.so (`local`), and the vocabulary files a build ships (`vocabs`)."""
