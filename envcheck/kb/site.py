"""Where kb entries live on the site: `page_url(entry)` for reports, `envcheck kb show` and search.

For envcheck/kb/link.py and the text report: call ``page_url(entry_or_id)`` (or
``page_path(category, id)``) to print where an entry can be read. The base address is, in order:
the ``base`` argument, ``$ENVCHECK_SITE_URL``, the default of ``site_url:`` in the repository's
mkdocs.yml (``site_url: !ENV [ENVCHECK_SITE_URL, "<default>"]``, empty in this repository). With a
base the result is ``<base>/kb/<category>/<id>/``; without one, the site-relative path
``kb/<category>/<id>/`` (callers then print ``envcheck kb show ID`` instead). It never imports
mkdocs and reads at most one small file.
"""
from __future__ import annotations

import functools
import os
import re
from typing import Any

from envcheck import resources

SITE_URL_ENV = "ENVCHECK_SITE_URL"
# site_url: https://x/   |   site_url: !ENV [ENVCHECK_SITE_URL, "https://x/"]   |   site_url: !ENV NAME
_SITE_URL_RE = re.compile(r"^site_url:[ \t]*(.*?)[ \t]*(?:#.*)?$", re.MULTILINE)
_ENV_RE = re.compile(r"^!ENV\s*(?:\[\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:,\s*(.*?)\s*)?\]|([A-Za-z_][A-Za-z0-9_]*))$")


def page_path(category: str, entry_id: str, base: str | None = None) -> str:
    """<base>/kb/<category>/<id>/, or kb/<category>/<id>/ without a base (mkdocs directory URLs)."""
    root = site_url() if base is None else base
    rel = f"kb/{category}/{entry_id}/"
    return f"{root.rstrip('/')}/{rel}" if root else rel


def page_url(entry: Any, base: str | None = None) -> str:
    """Address of an entry's page. entry: an Entry or search Hit (anything with .category and .id),
    or an entry id (its category is looked up in the bundled kb; an unknown id raises KeyError).
    Pure when given an Entry and a base."""
    if isinstance(entry, str):
        category = _categories().get(entry)
        if category is None:
            raise KeyError(f"no kb entry with id {entry!r}")
        return page_path(category, entry, base)
    return page_path(entry.category, entry.id, base)


@functools.lru_cache(maxsize=1)
def _categories() -> dict[str, str]:
    from envcheck.kb.entries import load_kb

    return {e.id: e.category for e in load_kb().entries}


def check_page(code: str, base: str | None = None) -> str:
    """Address of a generated check reference page: checks/<code>/."""
    root = site_url() if base is None else base
    return f"{root.rstrip('/')}/checks/{code}/" if root else f"checks/{code}/"


def site_url() -> str:
    """$ENVCHECK_SITE_URL when set (even empty: no site), else site_url from mkdocs.yml next to the
    package (source checkouts; a wheel has no mkdocs.yml, so '')."""
    env = os.environ.get(SITE_URL_ENV)
    return env if env is not None else _mkdocs_site_url()


def parse_site_url(text: str) -> str:
    """The site_url an mkdocs.yml sets when $ENVCHECK_SITE_URL is unset ('' when none)."""
    m = _SITE_URL_RE.search(text)
    if not m:
        return ""
    value = m.group(1).strip()
    env = _ENV_RE.match(value)
    if env:
        value = (env.group(2) or "").strip()
    return value.strip("'\"")


@functools.lru_cache(maxsize=1)
def _mkdocs_site_url() -> str:
    cfg = resources.PKG.parent / "mkdocs.yml"
    try:
        return parse_site_url(cfg.read_text(encoding="utf-8"))
    except OSError:
        return ""
