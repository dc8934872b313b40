"""Facts from a saved snapshot (`--facts FILE`, an `envcheck probe --json` document or a report) or
from this machine: the one function every report command calls to get its facts."""
from __future__ import annotations

import json
import os

from envcheck.errors import UsageError
from envcheck.model import Facts


def load_facts(path: str) -> Facts:
    """Read a saved `probe --json` document or a whole report; UsageError when it is not one."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read facts from {path}: {exc}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: not an envcheck facts document")
    return Facts.from_dict(doc.get("facts", doc))


def gather(*, facts_file: str | None = None, root: str = "/", python: str | None = None,
           timeout: float | None = None) -> Facts:
    """Facts from `facts_file` when given, else probe the machine under `root` for `python`."""
    if facts_file:
        return load_facts(facts_file)
    if not os.path.isdir(root):
        why = "not a directory" if os.path.exists(root) else "no such directory"
        raise UsageError(f"--root {root}: {why}")
    from envcheck import probe

    return probe.collect(root=root, python=python, timeout=timeout or 10.0)
