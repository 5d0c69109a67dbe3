"""The ecosystem's conformance matrix (`tokconf peers`): `matrix` runs peers through check and
explain, `speed` measures encoding beside llama.cpp, `render` writes docs/reports/ecosystem.md and its page."""
