"""Checking an implementation against recordings: the verdict contract (`contract`: each verdict and
what PASS means, for every front end), the engine that asks the implementation (`engine`), the
expected-failure file (`xfail`), reports and JUnit (`report`), and the pytest items (`pytest_items`)."""
