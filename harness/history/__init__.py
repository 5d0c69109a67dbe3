"""The build history, every question about which published llama.cpp build answered what: `bisect`
(`tokconf bisect`: the one build that changed an outcome), `walk` (each build where some outcome
changed, a bisect that does not stop at the first change), `upgrade` (`tokconf upgrade`: the walk from
the recordings' build to a new one, each change bisected), `report` (the Markdown of `tokconf upgrade`
and the history docs), `data` (what each stretch of builds answers) and `identify` (which stretch an
implementation matches)."""
