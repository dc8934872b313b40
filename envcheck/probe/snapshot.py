"""Facts from a saved snapshot (`--facts FILE`, an `envcheck probe --json` document or a report) or
from this machine: the one function every report command calls to get its facts."""
from __future__ import annotations

import os
from typing import Any

from envcheck import safeio
from envcheck.errors import UsageError
from envcheck.model import Facts


def load_facts(path: str) -> Facts:
    """Read a saved `probe --json` document or a whole report; UsageError when it is not one (bounded,
    regular files only, depth-limited JSON, every section of the expected type)."""
    try:
        doc = safeio.load_json_file(path, dict, what="--facts")
    except UsageError as exc:
        raise UsageError(f"cannot read facts from {exc}") from None
    facts = doc.get("facts", doc)
    if not isinstance(facts, dict):
        raise UsageError(f"--facts {path}: \"facts\" is {type(facts).__name__}, expected an object")
    return facts_from_document(facts, f"--facts {path}")


def facts_from_document(doc: dict[str, Any], what: str) -> Facts:
    """Facts from a JSON object, checking the types of its sections (a one-line UsageError otherwise)."""
    for name in Facts.__dataclass_fields__:
        if name not in doc:
            continue
        want = str if name == "root" else dict
        if not isinstance(doc[name], want):
            raise UsageError(f"{what}: section {name!r} is {type(doc[name]).__name__}, expected "
                             f"{'a string' if want is str else 'an object'}")
    env = doc.get("env") or {}
    if any(not isinstance(v, str) for v in env.values()):
        raise UsageError(f"{what}: section 'env' must map names to strings")
    return Facts.from_dict(doc)


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
