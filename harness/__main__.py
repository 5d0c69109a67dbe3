"""`python -m tokconf` is the `tokconf` command: the judge, started again isolated
(`tokconf.core.isolated`)."""

from .core.isolated import launch

launch()
