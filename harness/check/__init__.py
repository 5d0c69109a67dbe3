"""Checking an implementation against recordings: the engine and its verdicts (`engine`), the
expected-failure file (`xfail`), reports and JUnit (`report`), and the pytest items (`pytest_items`)."""
