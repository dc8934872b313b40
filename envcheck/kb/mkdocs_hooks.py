"""MkDocs hooks (mkdocs.yml `hooks:`): add the kb and the generated pages to the site.

* kb/**.md is added under the site path kb/ (entries keep plain front matter; their title,
  Chinese title, summary and metadata are rendered here, not written in the files);
* generated pages: kb/<category>/index.md, checks/index.md and checks/<CODE>.md (from the check
  registry), error-codes.md, matrix.md (from matrix.yaml, filterable), tags.md (material tags
  listing), search.md (how search works, the synonym list);
* internal tags (``fr-NN``) are dropped from every page's tags before the tags plugin and the
  search index see them;
* search: Material's lunr worker is swapped for docs/assets/javascripts/envcheck-search.js (same
  protocol and result list), and search_index.json gets the synonyms and per-entry codes and
  patterns it needs (envcheck/kb/site_search.py);
* the navigation (unless mkdocs.yml sets `nav:`): Home, the user guide (docs/*.md), the kb by
  category, the check reference, error codes, the matrix, tags.

$ENVCHECK_SITE_KB builds the site from another kb folder (the tests use tests/data/kb-mini).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from envcheck.kb import site_search, sitegen
from envcheck.kb.entries import Entry, load_kb
from envcheck.kb.matrix_page import matrix_page
from envcheck.kb.taxonomy import CATEGORIES

_state: dict[str, Any] = {}
ENTRY_SRC_RE = re.compile(r"^kb/([a-z0-9-]+)/([a-z0-9-]+)\.md$")


def _root(config: Any) -> Path:
    return Path(config.config_file_path).resolve().parent


def _kb_dir(config: Any) -> Path:
    given = os.environ.get("ENVCHECK_SITE_KB")
    return Path(given).resolve() if given else _root(config) / "kb"


def _load(config: Any) -> None:
    kb_dir = _kb_dir(config)
    load_kb.cache_clear()  # `mkdocs serve` rebuilds after edits
    kb = load_kb(kb_dir)
    if kb.errors:
        raise SystemExit("kb entries cannot be read:\n" + "\n".join(map(str, kb.errors)))
    entries = sorted(kb.entries, key=lambda e: (e.category, e.title.lower()))
    by_cat: dict[str, list[Entry]] = {c: [] for c in CATEGORIES}
    for e in entries:
        by_cat.setdefault(e.category, []).append(e)
    checks = sitegen.check_infos()
    _state.update(kb_dir=kb_dir, entries=entries, by_cat=by_cat, checks=checks,
                  by_src={sitegen.entry_src(e): e for e in entries}, codes={c.code for c in checks})


def on_config(config: Any) -> Any:
    _load(config)
    if not config.nav:
        config.nav = _nav(config)
    return config


def _nav(config: Any) -> list:
    docs = Path(config.docs_dir)
    guide = sorted(p.name for p in docs.glob("*.md") if p.name not in ("index.md", "tags.md"))
    sources = _kb_sources(config)
    kb_nav: list = ["kb/index.md"] if "index.md" in sources else []
    for cat, title in CATEGORIES.items():
        kb_nav.append({title: [f"kb/{cat}/index.md"] + [sitegen.entry_src(e) for e in _state["by_cat"][cat]]})
    if "CONTRIBUTING.md" in sources:
        kb_nav.append({"Contributing": "kb/CONTRIBUTING.md"})
    checks = ["checks/index.md"] + [f"checks/{c.code}.md" for c in _state["checks"]]
    nav: list = [{"Home": "index.md"}]
    if guide:
        nav.append({"Guide": guide})
    return nav + [{"Knowledge base 知识库": kb_nav}, {"Check reference 检查项": checks},
                  {"Error codes 错误码": "error-codes.md"}, {"Compatibility matrix 版本配套": "matrix.md"},
                  {"Search help 搜索说明": "search.md"}, {"Tags 标签": "tags.md"}]


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for rel, path in _kb_sources(config).items():
        files.append(File.generated(config, f"kb/{rel}", abs_src_path=str(path)))
    pages = {f"kb/{cat}/index.md": sitegen.category_page(cat, ents) for cat, ents in _state["by_cat"].items()}
    pages["checks/index.md"] = sitegen.checks_index(_state["checks"], _state["entries"])
    pages.update({f"checks/{c.code}.md": sitegen.check_page(c, _state["entries"]) for c in _state["checks"]})
    pages["error-codes.md"] = sitegen.error_codes_page(_state["entries"])
    pages["tags.md"] = sitegen.TAGS_PAGE
    pages["search.md"] = site_search.search_help_page()
    matrix = _root(config) / "matrix.yaml"
    pages["matrix.md"] = matrix_page(matrix) if matrix.exists() else "# Compatibility matrix\n\nNo matrix.yaml.\n"
    for src, content in pages.items():
        if files.get_file_from_path(src) is None:
            files.append(File.generated(config, src, content=content))
    return files


def _kb_sources(config: Any) -> dict[str, Path]:
    """kb-relative path -> file: the kb's pages, plus the repository's kb/index.md and
    kb/CONTRIBUTING.md when another kb ($ENVCHECK_SITE_KB) lacks them."""
    kb_dir = _state["kb_dir"]
    out = {}
    for path in sorted(kb_dir.rglob("*.md")):
        parts = path.relative_to(kb_dir).parts
        if len(parts) <= 2 and not parts[0].startswith((".", "_")):
            out["/".join(parts)] = path
    for name in ("index.md", "CONTRIBUTING.md"):
        fallback = _root(config) / "kb" / name
        if name not in out and fallback.exists():
            out[name] = fallback
    return out


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    tags = page.meta.get("tags")
    if isinstance(tags, list):  # before the tags plugin (priority -50) and the search index read them
        page.meta["tags"] = site_search.public_tags(tags)
    src = page.file.src_uri
    e = _state["by_src"].get(src)
    if e is not None:
        page.meta["title"] = sitegen.plain(e.title)  # front matter title may carry `code`
        if re.match(r"\s*# ", markdown):
            return markdown + sitegen.entry_footer(e)
        header = sitegen.entry_header(e, src, _state["codes"])
        return header + sitegen.entry_body(e, markdown) + sitegen.entry_footer(e)
    if src == "kb/index.md":
        return markdown.rstrip() + "\n\n## Categories 类别\n\n" + sitegen.categories_table(_state["by_cat"], src)
    return markdown


_WORKER_RE = re.compile(r'("search":\s*")([^"]*?)assets/javascripts/workers/search\.[0-9a-f]+\.min\.js"')
ENGINE = "assets/javascripts/envcheck-search.js"


# The theme's search labels, in both languages (the theme itself is configured in English).
BILINGUAL = {
    "search.result.none": "No matching documents · 没有匹配的页面",
    "search.result.one": "1 matching document · 1 个结果",
    "search.result.other": "# matching documents · # 个结果",
    "search.result.placeholder": "Type an error, a code or 中文 · 输入报错、错误码或中文",
    "search.result.term.missing": "Missing 未匹配",
    "search.result.more.one": "1 more on this page · 本页还有 1 处",
    "search.result.more.other": "# more on this page · 本页还有 # 处",
}
_CONFIG_RE = re.compile(r'(<script id="__config" type="application/json">)(.*?)(</script>)', re.DOTALL)


def _chrome(output: str) -> str:
    """Point Material's search at envcheck's engine (the page's own relative base is kept) and
    make the theme's search labels bilingual."""
    import json

    new, n = _WORKER_RE.subn(lambda m: f'{m.group(1)}{m.group(2)}{ENGINE}"', output, count=1)
    if n == 0 and '"search":' in output:
        from mkdocs.exceptions import PluginError

        raise PluginError("envcheck: cannot find Material's search worker URL in the page config; "
                          "the theme changed: update _WORKER_RE in envcheck/kb/mkdocs_hooks.py")

    def labels(m: re.Match) -> str:
        cfg = json.loads(m.group(2))
        cfg.setdefault("translations", {}).update(BILINGUAL)
        return m.group(1) + json.dumps(cfg, ensure_ascii=False) + m.group(3)

    new = _CONFIG_RE.sub(labels, new, count=1)
    return new.replace('placeholder="Search"', 'placeholder="Search 搜索"', 1)


def on_post_page(output: str, page: Any, config: Any) -> str:
    return _chrome(output)


def on_post_template(output_content: str, template_name: str, config: Any) -> str:
    """The same on static templates (404.html)."""
    return _chrome(output_content) if template_name.endswith(".html") else output_content


def on_post_build(config: Any) -> None:
    """Add envcheck's search data to search_index.json and drop internal tags from it."""
    import json

    path = Path(config.site_dir) / "search" / "search_index.json"
    if not path.exists():
        return
    index = json.loads(path.read_text(encoding="utf-8"))
    for doc in index.get("docs", []):
        if isinstance(doc.get("tags"), list):
            doc["tags"] = site_search.public_tags(doc["tags"])
    location = {e.id: f"kb/{e.category}/{e.id}/" for e in _state["entries"]}
    zh_titles = {loc: e.title_zh for e in _state["entries"] if e.title_zh for loc in [location[e.id]]}
    for doc in index.get("docs", []):  # results show both titles; the Chinese one is searchable as a title
        zh = zh_titles.get(doc.get("location"))
        if zh:
            doc["title"] = f"{doc.get('title', '')} · {_segment(zh)}"
    index.setdefault("config", {})["envcheck"] = site_search.engine_config(_state["entries"], location)
    path.write_text(json.dumps(index, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")


def _segment(text: str) -> str:
    """Chinese text cut into words with zero-width spaces, as Material's search plugin does."""
    try:
        import jieba
    except ImportError:
        return text
    return "\u200b".join(jieba.cut(text))


def on_serve(server: Any, config: Any, builder: Any) -> Any:
    """`mkdocs serve` also watches the kb and matrix.yaml."""
    server.watch(str(_state["kb_dir"]))
    matrix = _root(config) / "matrix.yaml"
    if matrix.exists():
        server.watch(str(matrix))
    return server
