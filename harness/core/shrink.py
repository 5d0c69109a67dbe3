"""Delta debugging over an input's characters: how `--explain` and fuzz campaigns make a failing
input minimal. The unit is a character (an invalid byte is one of its own), so a minimal input is
never half a character, and containment (`holds`) respects the same boundaries: `Ý` (`c3 9d`) does
not hold the invalid byte `c3`."""

from __future__ import annotations

from collections.abc import Callable

MAX_ASKS = 600  # candidate inputs tried per shrink, at most: a cap on the cost of one huge document


def units(data: bytes) -> list[bytes]:
    """The input as characters, an invalid byte being a unit of its own: what ddmin removes."""
    text = data.decode("utf-8", errors="surrogateescape")
    return [c.encode("utf-8", errors="surrogateescape") for c in text]


def holds(data: bytes, part: bytes) -> bool:
    """Whether `part` occurs in `data` as whole characters (never inside a character's bytes)."""
    if not part:
        return True
    if part not in data:  # the common answer, found at C speed
        return False
    text = data.decode("utf-8", errors="surrogateescape")
    return part.decode("utf-8", errors="surrogateescape") in text


def ddmin(parts: list[bytes], fails: Callable[[list[bytes]], list[bool]]) -> tuple[bytes, bool]:
    """A 1-minimal sub-sequence of `parts` (joined) that still fails (Zeller's ddmin); `fails`
    judges a batch of candidates at once. Returns it and whether it is minimal (False when
    MAX_ASKS ran out first)."""
    if fails([b""])[0]:
        return b"", True
    asked = 1
    granularity = 2
    while len(parts) >= 2:
        size = -(-len(parts) // granularity)
        starts = range(0, len(parts), size)
        subsets = [parts[i : i + size] for i in starts]
        complements = [parts[:i] + parts[i + size :] for i in starts] if granularity > 2 else []
        candidates = subsets + complements
        if asked + len(candidates) > MAX_ASKS:
            return b"".join(parts), False
        verdicts = fails([b"".join(c) for c in candidates])
        asked += len(candidates)
        if any(verdicts[: len(subsets)]):
            parts = subsets[verdicts.index(True)]
            granularity = 2
        elif any(verdicts[len(subsets) :]):
            parts = complements[verdicts[len(subsets) :].index(True)]
            granularity = max(granularity - 1, 2)
        elif granularity >= len(parts):
            break
        else:
            granularity = min(2 * granularity, len(parts))
    return b"".join(parts), True
