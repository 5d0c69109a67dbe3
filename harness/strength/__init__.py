"""How strong are the recordings: mutants of llama.cpp's tokenizer sources that the recordings must catch
(`tokconf strength`, docs/reports/strength.md)."""
