"""The site's search: synonym groups, internal tags, and the data the in-browser search engine needs.

The site replaces Material's lunr worker with docs/assets/javascripts/envcheck-search.js (same
worker protocol, same result list). That engine reads Material's ``search/search_index.json``,
whose Chinese text the search plugin has already segmented with jieba (zero-width spaces between
words), and this module's additions, which envcheck/kb/mkdocs_hooks.py writes into the index's
``config.envcheck`` at build time:

* ``synonyms``: SYNONYMS below. A token in a group also indexes (and queries) the group, so
  内存不足 finds "NPU 显存不足", 卡住 finds "hang", 超时 finds "timeout". Exact words still rank
  above their synonyms. The list is printed on the site's search help page (search.md).
* ``entries``: per kb entry page, its declared error codes and its ``patterns`` regexes. A code in
  the query (EI0006, ERR02200, 507048, EC201) ranks the entry that declares it first; an error
  line pasted whole that one of an entry's patterns matches ranks that entry first (the same
  patterns ``envcheck diagnose`` uses; they are the ERE subset, so JavaScript compiles them).

Tags that match INTERNAL_TAG_RE (``fr-45``: feature-request ids the kb keeps for bookkeeping) are
removed from pages, the tags page and the search index.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from envcheck.kb.entries import Entry

# Words people type -> the words pages use. Each group is one meaning, in Chinese and English;
# single words only (the engine matches tokens, not phrases). Keep it small and obvious.
SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("显存", "内存", "memory", "hbm"),
    ("不足", "耗尽", "exhausted", "oom"),
    ("超时", "timeout", "timed", "timeouts"),
    ("报错", "错误", "出错", "error", "errors"),
    ("卡住", "卡死", "挂起", "hang", "hangs", "stuck"),
    ("找不到", "未找到", "缺少", "missing"),
    ("不匹配", "不兼容", "mismatch", "incompatible"),
    ("版本", "version", "versions"),
    ("驱动", "driver"),
    ("固件", "firmware"),
    ("算子", "operator", "op", "ops"),
    ("慢", "变慢", "slow", "slowdown"),
    ("通信", "hccl", "collective"),
    ("精度", "precision", "accuracy"),
)

INTERNAL_TAG_RE = re.compile(r"^fr-[0-9]+$", re.IGNORECASE)


def public_tags(tags: Iterable[Any]) -> list[str]:
    """Tags a reader should see: the internal feature-request ids removed."""
    return [str(t) for t in tags if not INTERNAL_TAG_RE.match(str(t))]


def synonym_groups() -> list[list[str]]:
    return [list(g) for g in SYNONYMS]


def engine_config(entries: Iterable[Entry], location: dict[str, str]) -> dict[str, Any]:
    """``config.envcheck`` of search_index.json: synonyms, and codes/patterns per entry page.

    ``location`` maps an entry id to its page's location in the index (``kb/<cat>/<id>/``).
    """
    pages = {}
    for e in entries:
        loc = location.get(e.id)
        if loc is None:
            continue
        codes = sorted({c.upper().lstrip("-") for c in list(e.error_codes) + list(e.checks)})
        pages[loc] = {"id": e.id, "codes": codes, "patterns": [p.regex for p in e.patterns if p.regex]}
    return {"version": 1, "synonyms": synonym_groups(), "entries": pages}


def search_help_page() -> str:
    """search.md: how the site's search works, with the synonym list (generated from SYNONYMS)."""
    out = ["---", "search:", "  exclude: true", "---", "", "# Search 搜索", "",
           "The search box (and the *paste your error* box on the [home page](index.md)) takes English, "
           "Chinese, error codes, or a whole error line.",
           "搜索框支持英文、中文、错误码，也可以直接粘贴整行报错。", "",
           "- **Error codes 错误码** (`EI0006`, `ERR02200`, `507048`, `EC201`): the entry that declares "
           "the code comes first.",
           "- **A pasted error line 整行报错**: the codes, library names (`libhccl.so`), exception names "
           "and the distinctive words are extracted; an entry whose patterns match the line (the same "
           "patterns `envcheck diagnose` uses) comes first.",
           "- **Chinese 中文**: pages are segmented with jieba when the site is built; the query is "
           "segmented against the same vocabulary in the browser, so 内存不足 matches 显存不足.",
           "- **Synonyms 同义词**: a word also matches the other words of its group below (exact words "
           "rank higher).", "",
           "| group 组 | words 词 |", "| --- | --- |"]
    for i, g in enumerate(SYNONYMS, 1):
        out.append(f"| {i} | {' · '.join(g)} |")
    out += ["", "Offline, `envcheck kb search QUERY` and `envcheck diagnose LOG` do the same from the "
            "command line. 离线时可用 `envcheck kb search` 与 `envcheck diagnose`。", ""]
    return "\n".join(out)
