"""`python -m tokconf` is the same as the `tokconf` console script."""

from .cli.main import main

raise SystemExit(main())
