"""The recorded data and what reads it: the recording format (`format`, `yaml_io`), decoding
recordings (`decoding`), JSON-lines export (`export`) and the diff of two recordings (`diff`)."""
