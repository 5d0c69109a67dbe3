"""The data every stage shares: outcomes and modes, vocab facts and provenance, errors, files, text rendering;
and the one supervisor of child processes (`supervisor`), the sandbox and the isolated start-up they use.

Imports nothing from the other stages (and nothing heavy), so the pytest plugin and the command line
can load it at start-up.
"""
