"""`python -m harness` is the same as the `tokconf` console script."""

from harness.cli.main import main

raise SystemExit(main())
