"""Every change over a range of published llama.cpp builds: `walk` finds each build where some outcome
changed (a bisect that does not stop at the first change), `report` writes it as Markdown for
`tokconf upgrade` and the history docs, `data` keeps what each stretch of builds answers for
`tokconf identify`, which `identify` matches an implementation against."""
