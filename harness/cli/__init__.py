"""The `tokconf` command line (also `python -m tokconf`): one module per command, each with
`add_parser` and `run`. A command imports what it needs only when it runs, so `tokconf --help` and
every other command work without the optional packages one command needs (hypothesis for `fuzz`)."""
