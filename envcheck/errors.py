"""Errors that the CLI turns into a one-line message and exit status 2."""
from __future__ import annotations


class EnvcheckError(Exception):
    """A library error with a one-line message (a malformed matrix, an unreadable input file).

    Library code raises it without knowing about exit codes; the CLI maps it to exit status 2.
    """


class UsageError(EnvcheckError):
    """Bad input from the user (flags, paths, files): one line, exit 2, never a traceback."""
