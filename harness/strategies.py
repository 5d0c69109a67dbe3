"""Hypothesis strategies for a port's own property tests: public API, as `tokconf` itself is.

    from hypothesis import given
    from tokconf.strategies import Family, inputs

    @given(inputs("qwen2"))                                   # qwen2's words and special texts too
    def test_port_matches_llama_cpp(tokconf_oracle, data): ...

    inputs(families={Family.WHITESPACE, Family.SCRIPTS})      # only some families, no vocabulary

`inputs` draws `bytes` from the families `tokconf fuzz` draws (`Family`), through hypothesis's own
primitives, so failures shrink and are kept in hypothesis's example database like any other; docs/hypothesis.md
has a complete test. hypothesis is an optional dependency: `pip install 'tokconf[fuzz]'`.
"""

try:
    import hypothesis  # noqa: F401
except ImportError:
    raise ImportError("tokconf.strategies needs hypothesis: pip install 'tokconf[fuzz]'") from None

from .fuzz.generator import Family
from .fuzz.strategies import inputs

__all__ = ["Family", "inputs"]
