"""Differential fuzzing against the live llama.cpp: the input families (`generator`), the example
database (`database`), the campaign (`campaign`), what it found (`findings`), watching it (`report`)
and the pytest items that spread it over cores (`pytest_items`). docs/fuzzing.md.

Nothing heavy is imported here: the option table and the pytest plugin read these at start-up.
"""

# Examples per vocabulary and mode.
PROFILES = {"dev": 200, "ci": 1000, "campaign": 50_000}
DEFAULT_DATABASE = ".tokconf-fuzz-db"  # a folder, in the current folder
INI_DATABASE = "tokconf_fuzz_database"  # the pytest ini key naming the database
