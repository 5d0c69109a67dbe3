"""Checking an implementation against recordings: the verdict contract (`contract`: each verdict and
what PASS means, for every front end), the engine that asks the implementation (`engine`), the
expected-failure file (`xfail`), the one session every front end runs a check through (`session`:
pins, counts, the interleaving check, the decision), a run as data (`run`, counted in `summary`), and
the causes of its failures (`explain`). `tokconf.reporting` draws a run; the pytest items that check
live in `tokconf.plugin.check`."""
