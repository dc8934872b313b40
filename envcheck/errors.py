"""Errors that the CLI turns into a one-line message and exit status 2."""
from __future__ import annotations


class UsageError(Exception):
    """Bad input from the user (flags, paths, files): one line, exit 2, never a traceback."""
