"""The word cache the BPE, SPM and WPM encoders share: a word's ids depend on the word alone, so
each distinct word of a text is encoded once and the ids are chained in C."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from itertools import chain
from typing import TypeVar

CACHE_LIMIT = 1 << 17  # cached words per vocabulary before the cache starts over
Word = TypeVar("Word", bound=Hashable)


def encode_words(
    cache: dict[Word, tuple[int, ...]], words: Sequence[Word], encode: Callable[[Word], tuple[int, ...]]
) -> list[int]:
    """The ids of `words` in order, encoding (and caching) only the ones not seen before."""
    missing = set(words).difference(cache)
    if len(cache) + len(missing) > CACHE_LIMIT:
        cache.clear()
        missing = set(words)
    for word in missing:
        cache[word] = encode(word)
    return list(chain.from_iterable(map(cache.__getitem__, words)))
