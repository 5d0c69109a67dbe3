"""Differential fuzzing against the live llama.cpp: hypothesis strategies (`strategies`), the campaign
(`campaign`), what it found (`findings`) and the pytest items that spread it over cores (`pytest_items`).

Nothing heavy is imported here: the option table reads `PROFILES` at start-up.
"""

# Examples per vocabulary and mode.
PROFILES = {"dev": 200, "ci": 1000, "campaign": 50_000}
