"""Recordings, from making to reading: the format (`format`, `yaml_io`, with the seal every recorded
file carries), decoding recordings (`decoding`, and `decoding_recorder`, which makes them), the
recorder (`recorder`, resumable through `journal`), the cross-check of the two oracle backends
(`crosscheck`), the coverage of llama.cpp's tokenizer kinds (`coverage`), JSON-lines export (`export`),
the pieces of a vocabulary (`pieces`) and the diff of two recordings (`diff`)."""
