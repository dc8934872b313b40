"""Keep secrets out of every report: redact by variable name and by what a value looks like."""
from __future__ import annotations

import re
from typing import Any

MASK = "<redacted>"

_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|PRIVATE|API_?KEY|ACCESS_?KEY|AUTH|COOKIE"
    r"|SESSION|(^|_)KEY($|_)|_PWD$|^PWD_|SIGNATURE|CERT_PASS",
    re.I,
)
# Values that look like credentials whatever the variable is called.
_SECRET_VALUE = [
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),  # AWS access key id
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}"),  # GitHub tokens
    re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"),  # GitLab
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack
    re.compile(r"\bsk-[A-Za-z0-9_\-]{20,}"),  # OpenAI-style keys
    re.compile(r"\bhf_[A-Za-z0-9]{20,}"),  # Hugging Face
    re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),  # JWT
]
_URL_PASSWORD = re.compile(r"(?P<pre>[a-z][a-z0-9+.\-]*://[^:/@\s]+:)(?P<pw>[^@/\s]+)(?P<post>@)", re.I)
_HIGH_ENTROPY = re.compile(r"^[A-Za-z0-9+_=\-]{32,}$")


def secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def _looks_random(value: str) -> bool:
    if not _HIGH_ENTROPY.match(value):
        return False
    kinds = sum(bool(re.search(p, value)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]"))
    return kinds >= 3 or (kinds == 2 and re.fullmatch(r"[0-9a-f]{40,}", value) is not None)


def redact_value(value: str) -> str:
    """Mask credential-looking parts of a free-text value (URLs keep their host)."""
    out = _URL_PASSWORD.sub(lambda m: m.group("pre") + MASK + m.group("post"), value)
    for pat in _SECRET_VALUE:
        out = pat.sub(MASK, out)
    if _looks_random(out):
        return MASK
    return out


def redact_env(env: dict[str, str]) -> dict[str, str]:
    """Environment mapping with secret-named variables masked and secret-looking values masked."""
    return {k: (MASK if secret_name(k) and v else redact_value(v)) for k, v in env.items()}


def scrub(obj: Any) -> Any:
    """Deep copy of a JSON-like object with every string passed through redact_value."""
    if isinstance(obj, str):
        return redact_value(obj)
    if isinstance(obj, dict):
        return {k: (MASK if isinstance(v, str) and v and secret_name(str(k)) and k != "kb" else scrub(v))
                for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [scrub(v) for v in obj]
    return obj
