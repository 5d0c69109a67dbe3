"""Making recordings: the recorder (`recorder`, `journal`), decoding recordings (`decoding`), and the
cross-check of the two oracle backends (`crosscheck`)."""
