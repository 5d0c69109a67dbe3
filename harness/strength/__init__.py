"""How strong are the recordings: mutants of llama.cpp's tokenizer sources that the recordings must catch
(`tokconf strength`, docs/strength.md)."""
