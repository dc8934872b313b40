"""JSON renderer: the versioned document described by envcheck/schemas/report.schema.json."""
from __future__ import annotations

import json
from typing import Any

from envcheck.model import Report
from envcheck.redact import scrub


def render(report: Report, **_: Any) -> str:
    return json.dumps(scrub(report.to_dict()), indent=2, ensure_ascii=False, sort_keys=False) + "\n"
