"""`python -m harness` is the same as the `tokconf` console script."""

from harness.cli import main

raise SystemExit(main())
