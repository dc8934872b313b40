"""MkDocs hooks (mkdocs.yml `hooks:`): add the kb and the generated pages to the site.

* kb/**.md is added under the site path kb/ (entries keep plain front matter; their title,
  Chinese title, summary and metadata are rendered here, not written in the files);
* generated pages: kb/<category>/index.md, checks/index.md and checks/<CODE>.md (from the check
  registry), error-codes.md, matrix.md (from matrix.yaml), tags.md (material tags listing);
* the navigation (unless mkdocs.yml sets `nav:`): Home, the user guide (docs/*.md), the kb by
  category, the check reference, error codes, the matrix, tags.

$ENVCHECK_SITE_KB builds the site from another kb folder (the tests use tests/data/kb-mini).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from envcheck.kb import sitegen
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
    return nav + [{"Knowledge base": kb_nav}, {"Check reference": checks}, {"Error codes": "error-codes.md"},
                  {"Compatibility matrix": "matrix.md"}, {"Tags": "tags.md"}]


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for rel, path in _kb_sources(config).items():
        files.append(File.generated(config, f"kb/{rel}", abs_src_path=str(path)))
    pages = {f"kb/{cat}/index.md": sitegen.category_page(cat, ents) for cat, ents in _state["by_cat"].items()}
    pages["checks/index.md"] = sitegen.checks_index(_state["checks"], _state["entries"])
    pages.update({f"checks/{c.code}.md": sitegen.check_page(c, _state["entries"]) for c in _state["checks"]})
    pages["error-codes.md"] = sitegen.error_codes_page(_state["entries"])
    pages["tags.md"] = sitegen.TAGS_PAGE
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
    src = page.file.src_uri
    e = _state["by_src"].get(src)
    if e is not None:
        header = "" if re.match(r"\s*# ", markdown) else sitegen.entry_header(e, src, _state["codes"])
        return header + markdown + sitegen.entry_footer(e)
    if src == "kb/index.md":
        return markdown.rstrip() + "\n\n## Categories\n\n" + sitegen.categories_table(_state["by_cat"], src)
    return markdown


def on_serve(server: Any, config: Any, builder: Any) -> Any:
    """`mkdocs serve` also watches the kb and matrix.yaml."""
    server.watch(str(_state["kb_dir"]))
    matrix = _root(config) / "matrix.yaml"
    if matrix.exists():
        server.watch(str(matrix))
    return server
