"""Where kb entries live on the site: `page_url(entry)` for reports, `envcheck kb show` and search.

For envcheck/kb/link.py and the text report: call ``page_url(entry)`` (or
``page_path(category, id)``) to print where an entry can be read. It returns
``<site_url>/kb/<category>/<id>/`` when a site address is known (``$ENVCHECK_SITE_URL``, else
``site_url:`` in the repository's mkdocs.yml), otherwise the site-relative path
``kb/<category>/<id>/``. It never imports mkdocs and reads at most one small file.
"""
from __future__ import annotations

import functools
import os
import re
from typing import Any

from envcheck import resources

_SITE_URL_RE = re.compile(r"^site_url:\s*['\"]?([^'\"\s#]+)", re.M)


def page_path(category: str, entry_id: str) -> str:
    """Site-relative path of an entry page: kb/<category>/<id>/ (mkdocs directory URLs)."""
    base = site_url()
    rel = f"kb/{category}/{entry_id}/"
    return f"{base.rstrip('/')}/{rel}" if base else rel


def page_url(entry: Any) -> str:
    """Address of an entry's page: anything with .category and .id (an Entry, a search Hit)."""
    return page_path(entry.category, entry.id)


def check_page(code: str) -> str:
    """Address of a generated check reference page: checks/<code>/."""
    base = site_url()
    return f"{base.rstrip('/')}/checks/{code}/" if base else f"checks/{code}/"


def site_url() -> str:
    """$ENVCHECK_SITE_URL, else site_url from mkdocs.yml next to the package (source checkouts)."""
    env = os.environ.get("ENVCHECK_SITE_URL")
    return env if env is not None else _mkdocs_site_url()


@functools.lru_cache(maxsize=1)
def _mkdocs_site_url() -> str:
    cfg = resources.PKG.parent / "mkdocs.yml"
    try:
        m = _SITE_URL_RE.search(cfg.read_text(encoding="utf-8"))
    except OSError:
        return ""
    return m.group(1) if m else ""
