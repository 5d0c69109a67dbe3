"""Differential fuzzing against the live llama.cpp: the input families and the generator that draws
them (`generator`), the same families as hypothesis strategies (`strategies`, public as
`tokconf.strategies`), the example database (`database`), the campaign and its two engines
(`campaign`), what it found (`findings`), watching it (`report`), and one run as both front ends make
it (`runner`): `tokconf fuzz`, and the pytest items that spread it over cores (`tokconf.plugin.fuzz`).
docs/fuzzing.md, docs/hypothesis.md.

Nothing heavy is imported here: the option table and the pytest plugin read these at start-up.
"""

import enum


class Engine(enum.StrEnum):
    """How a campaign draws inputs and shrinks a divergence (docs/fuzzing.md)."""

    TOKCONF = "tokconf"  # `generator.InputGenerator` in batches of 512, a divergence shrunk by ddmin
    HYPOTHESIS = "hypothesis"  # the strategies of `strategies`, drawn and shrunk by hypothesis itself


# Examples per vocabulary and mode.
PROFILES = {"dev": 200, "ci": 1000, "campaign": 50_000}
DEFAULT_DATABASE = ".tokconf-fuzz-db"  # a folder, in the current folder
INI_DATABASE = "tokconf_fuzz_database"  # the pytest ini key naming the database
