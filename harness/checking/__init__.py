"""Checking an implementation against recordings: the verdict contract (`contract`: each verdict and
what PASS means, for every front end), the engine that asks the implementation (`engine`), the
expected-failure file (`xfail`), a run as data (`run`, counted in `summary`), and its one renderer
(`report`, with `html_report` and `junit`). The pytest items that check live in `tokconf.plugin.check`."""
