"""Keep secrets out of every report: redact by variable name, by known secret value and by shape.

Three layers, all linear in the length of the text:

1. by name: a variable whose name says it holds a secret (``*TOKEN*``, ``*_SK``, ``*_PASS``, ...)
   is masked whole, in env mappings, in JSON objects and in ``NAME=value`` text;
2. by known value: the values of this process's secret-named variables and the passwords inside its
   URL-valued variables are masked wherever they appear, e.g. in text a child process printed;
3. by shape: URL passwords (also with ``/`` or an unencoded ``@``), scheme-less ``user:pw@host``,
   well-known token formats (AWS, GitHub, GitLab, Slack, Hugging Face, JWT, PEM keys) and bare
   high-entropy tokens of 26+ characters.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

MASK = "<redacted>"

_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|PRIVATE|API_?KEY|ACCESS_?KEY|AUTH|COOKIE"
    r"|SESSION|(^|_)KEY($|_)|(^|_)PASS($|_)|(^|_)PWD?($|_)|(^|_)[AS]K($|_)|SIGNATURE|CERT_PASS",
    re.I,
)
# Values that look like credentials whatever the variable is called. Each starts with a literal
# prefix, so a scan is linear.
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
# A scheme may only start where no scheme character precedes it: one start per run of letters,
# so the scan stays linear (the old pattern retried at every letter of a long run: quadratic).
_SCHEME = re.compile(r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,30}://")
# NAME=value / NAME: value in free text; the value runs to the next whitespace, quote or comma.
_ASSIGN = re.compile(r"(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]{0,80})(\s?[=:]\s?)([^\s\"',;]+)")
# Tokens (whitespace / quote / punctuation separated) that may be bare secrets.
_TOKEN = re.compile(r"[A-Za-z0-9+_=\-]{26,}")
_WORDS = re.compile(r"[^\s\"'<>()\[\]{}]+")
_PORT_PATH = re.compile(r"\d{1,5}/")
_USER = re.compile(r"[A-Za-z0-9._~%+\-]+\Z")
_HIGH_ENTROPY = re.compile(r"[A-Za-z0-9+_=\-]{32,}\Z")
MIN_KNOWN = 8
"""Shortest environment value masked wherever it appears (shorter ones are too likely to be words)."""


def _secretish(value: str) -> bool:
    """Long enough and mixed enough to mask wherever it appears (not 'ubuntu', 'wayland', '1')."""
    if len(value) < MIN_KNOWN:
        return False
    kinds = {0 if c.islower() else 1 if c.isupper() else 2 if c.isdigit() else 3 for c in value}
    return len(kinds) >= 2


# Shell bookkeeping that the name pattern would mistake for a password ("PWD" is the working directory).
NOT_SECRET = frozenset({"PWD", "OLDPWD"})


def secret_name(name: str) -> bool:
    return name.upper() not in NOT_SECRET and bool(_SECRET_NAME.search(name))


def _classes(value: str) -> tuple[int, int]:
    """(number of character classes among lower/upper/digit, class changes between neighbours)."""
    def cls(c: str) -> int:
        return 0 if c.islower() else 1 if c.isupper() else 2 if c.isdigit() else 3

    seq = [cls(c) for c in value]
    kinds = len({k for k in seq if k < 3})
    changes = sum(1 for a, b in zip(seq, seq[1:]) if a != b)
    return kinds, changes


def _random_token(tok: str) -> bool:
    """A 26+ character token that mixes lower, upper and digits the way random text does
    (frequent class changes), unlike identifiers such as aclnnFlashAttentionScoreGradV2."""
    if len(tok) < 26:
        return False
    parts = [x for x in re.split(r"[-_=+]", tok) if x]
    if len(parts) >= 3 and max(len(x) for x in parts) <= 12:
        return False  # words joined by separators: a file or package name (Atlas-A3-hdk-npu-driver_25...)
    kinds, changes = _classes(tok)
    return kinds == 3 and changes >= 0.45 * (len(tok) - 1)


def _looks_random(value: str) -> bool:
    """A whole value that is a credential-like random string (32+ chars, or 40+ hex digits)."""
    if not _HIGH_ENTROPY.match(value):
        return False
    kinds, _ = _classes(value)
    return kinds >= 3 or (kinds == 2 and re.fullmatch(r"[0-9a-f]{40,}", value) is not None)


def _userinfo_password(auth: str, scheme: bool) -> tuple[int, int] | None:
    """(start, end) of the password in 'user:pw@host...' (pw may hold '/', '@' and ':'), or None."""
    at = auth.rfind("@")
    if at <= 0:
        return None
    colon = auth.find(":", 0, at)
    if colon <= 0:
        return None
    user = auth[:colon]
    if not scheme:  # the user is the word right before the colon (after NAME= ...)
        user = user[max(user.rfind(c) for c in "=,;") + 1:]
    if not user or not _USER.match(user):
        return None
    pw = auth[colon + 1:at]
    host = auth[at + 1:at + 2]
    if not pw or pw == MASK or not host or not (host.isalnum() or host == "["):
        return None
    if _PORT_PATH.match(pw):
        return None  # host:8080/path@x: a port and a path, not a password
    return colon + 1, at


def _password_spans(word: str) -> list[tuple[int, int]]:
    """Spans of URL / user:pw@host passwords inside one whitespace-free word. Linear in len(word)."""
    if "@" not in word or ":" not in word:
        return []
    starts = list(_SCHEME.finditer(word))
    if not starts:
        span = _userinfo_password(word, scheme=False)
        return [span] if span else []
    spans = []
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(word)
        span = _userinfo_password(word[m.end():end], scheme=True)
        if span:
            spans.append((m.end() + span[0], m.end() + span[1]))
    return spans


def _mask_word(word: str) -> str:
    spans = _password_spans(word)
    if not spans:
        return word
    out, pos = [], 0
    for a, b in spans:
        out += [word[pos:a], MASK]
        pos = b
    out.append(word[pos:])
    return "".join(out)


# ---------------------------------------------------------------------------- known values

_known: tuple[tuple[tuple[str, str], ...], re.Pattern[str] | None] = ((), None)


def known_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """Secret values of an environment: whole values of secret-named variables, and the passwords
    inside URL / user:pw@host values (at least MIN_KNOWN characters each)."""
    env = os.environ if environ is None else environ
    out: set[str] = set()
    for name, value in env.items():
        if not value:
            continue
        if secret_name(name):
            if value.lower().startswith("bearer "):
                value = value[7:]
            if _secretish(value):
                out.add(value)
        if "@" in value and ":" in value:
            for w in _WORDS.findall(value):
                for a, b in _password_spans(w):
                    if _secretish(w[a:b]):
                        out.add(w[a:b])
    return sorted(out, key=len, reverse=True)


def _known_pattern() -> re.Pattern[str] | None:
    global _known
    snap = tuple(os.environ.items())
    if snap != _known[0]:
        vals = known_secrets()
        _known = (snap, re.compile("|".join(map(re.escape, vals))) if vals else None)
    return _known[1]


# ---------------------------------------------------------------------------- public API

def _assign(m: re.Match[str]) -> str:
    """NAME=value (any case) or NAME: value (upper-case names: environment variables) in free text."""
    name, sep, val = m.group(1), m.group(2), m.group(3)
    if val == MASK or not secret_name(name) or (sep.strip() == ":" and not name.isupper()):
        return m.group(0)
    return name + sep + MASK


def redact_value(value: str) -> str:
    """Mask credential-looking parts of a free-text value (URLs keep their scheme, user and host)."""
    if not value:
        return value
    known = _known_pattern()
    out = known.sub(MASK, value) if known is not None else value
    if "=" in out or ":" in out:
        out = _ASSIGN.sub(_assign, out)
    if "@" in out:
        out = _WORDS.sub(lambda m: _mask_word(m.group(0)), out)
    for pat in _SECRET_VALUE:
        out = pat.sub(MASK, out)
    if _looks_random(out):
        return MASK
    return _TOKEN.sub(lambda m: MASK if _random_token(m.group(0)) else m.group(0), out)


def redact_env(env: dict[str, str]) -> dict[str, str]:
    """Environment mapping with secret-named variables masked and secret-looking values masked."""
    return {k: (MASK if secret_name(k) and v else redact_value(v)) for k, v in env.items()}


def scrub(obj: Any) -> Any:
    """Deep copy of a JSON-like object with every string passed through redact_value
    (iterative: a deeply nested document cannot exhaust the recursion limit)."""
    def one(k: Any, v: Any) -> bool:
        return isinstance(v, str) and bool(v) and secret_name(str(k)) and k != "kb"

    if not isinstance(obj, (dict, list, tuple)):
        return redact_value(obj) if isinstance(obj, str) else obj
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(obj, root, 0)]
    while stack:
        src, parent, key = stack.pop()
        if isinstance(src, dict):
            dst: Any = {}
            parent[key] = dst
            for k, v in src.items():
                if one(k, v):
                    dst[k] = MASK
                elif isinstance(v, (dict, list, tuple)):
                    dst[k] = None
                    stack.append((v, dst, k))
                else:
                    dst[k] = redact_value(v) if isinstance(v, str) else v
        else:
            dst = [None] * len(src)
            parent[key] = dst
            for i, v in enumerate(src):
                if isinstance(v, (dict, list, tuple)):
                    stack.append((v, dst, i))
                else:
                    dst[i] = redact_value(v) if isinstance(v, str) else v
    return root[0]
