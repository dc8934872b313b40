"""JSON renderer: the versioned documents described by envcheck/schemas/report.schema.json (reports)
and the diagnose document (`envcheck diagnose --json`)."""
from __future__ import annotations

import json
from typing import Any

from envcheck.kb.diagnose import DiagnoseResult
from envcheck.model import Report


def render(report: Report, **_: Any) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def render_diagnose(result: DiagnoseResult, **_: Any) -> str:
    return json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n"
