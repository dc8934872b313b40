"""Text rendering of Facts for `envcheck probe`."""
from __future__ import annotations

import json

from envcheck.model import Facts
from envcheck.redact import scrub


def render_facts(facts: Facts, verbose: bool = False) -> str:
    return json.dumps(scrub(facts.to_dict()), indent=2, ensure_ascii=False) + "\n"
