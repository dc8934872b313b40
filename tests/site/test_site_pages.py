"""The built site's pages (no browser): rendering of kb entries, the home page, the matrix page,
bilingual labels, version gates, the search data, and page_url()."""
from __future__ import annotations

import html as html_mod
import json
import re
from pathlib import Path

import pytest
from _site_session import built_site, page
from conftest import REPO

from envcheck.kb.entries import load_kb
from envcheck.kb.site_search import INTERNAL_TAG_RE

ENTRIES = load_kb(REPO / "kb").entries


@pytest.fixture(scope="module")
def site() -> Path:
    return built_site()


def article_text(doc: str) -> str:
    """The visible text of a page's <article> (tags stripped, entities decoded)."""
    art = doc[doc.index("<article"):doc.index("</article>")]
    art = re.sub(r"<(script|style)\b.*?</\1>", " ", art, flags=re.DOTALL)
    return html_mod.unescape(re.sub(r"<[^>]+>", " ", art))


# ------------------------------------------------------------------ 1. rendering

def test_symptoms_are_markdown_without_literal_backticks(site):
    with_ticks = [e for e in ENTRIES if any("`" in s for s in e.symptoms)]
    assert with_ticks, "the kb has backticked symptoms (the case this test is about)"
    for e in ENTRIES:
        doc = page(site, f"kb/{e.category}/{e.id}")
        text = article_text(doc)
        art = doc[doc.index("<article"):doc.index("</article>")]
        # a backtick in prose is a code span that was not rendered (code may quote a message with `x` in it)
        prose = re.sub(r"<pre\b.*?</pre>|<code\b.*?</code>", " ", art, flags=re.DOTALL)
        assert "`" not in html_mod.unescape(re.sub(r"<[^>]+>", " ", prose)), e.id
        assert not re.search(r"<code>`|`</code>", art), e.id  # a symptom set as code, fences and all
        assert "&amp;lt;" not in doc and "&amp;gt;" not in doc, e.id
        for s in e.symptoms:  # each symptom's words are on the page
            words = re.sub(r"`+", "", s).split()
            assert " ".join(words[:3]) in re.sub(r"\s+", " ", text), (e.id, s)
        title = re.search(r"<title>(.*?)</title>", doc).group(1)
        assert "`" not in title, e.id
    e = with_ticks[0]
    code_part = re.search(r"`([^`]+)`", next(s for s in e.symptoms if "`" in s)).group(1)
    doc = page(site, f"kb/{e.category}/{e.id}")
    assert f"<code>{html_mod.escape(code_part, quote=False)}</code>" in doc  # inline code, not a code block


def test_check_pages_escape_once(site):
    doc = page(site, "checks/EC301")
    assert "&amp;lt;" not in doc
    assert "cann-&lt;v&gt;" in doc  # shown as cann-<v>


def test_internal_tags_are_hidden_everywhere(site):
    tagged = [e for e in ENTRIES if any(INTERNAL_TAG_RE.match(t) for t in e.tags)]
    assert tagged, "the kb carries internal fr-NN tags (the case this test is about)"
    for e in tagged:
        doc = page(site, f"kb/{e.category}/{e.id}")
        assert not re.search(r">\s*fr-[0-9]+\s*<", doc), e.id
        public = [t for t in e.tags if not INTERNAL_TAG_RE.match(t)]
        for t in public:
            assert f"#tag:{t}" in doc, (e.id, t)
    tags_page = page(site, "tags")
    assert not re.search(r"fr-[0-9]+", tags_page)
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    for d in index["docs"]:
        assert not any(INTERNAL_TAG_RE.match(t) for t in d.get("tags", [])), d["location"]
    assert not re.search(r"\bfr-[0-9]+\b", (site / "tags.json").read_text(encoding="utf-8"))


def test_one_symptom_heading_with_stable_ids(site):
    for e in ENTRIES:
        doc = page(site, f"kb/{e.category}/{e.id}")
        heads = re.findall(r"<h2[^>]*>(.*?)<a", doc)
        assert sum(1 for h in heads if h.startswith("Symptom")) == 1, (e.id, heads)
        assert "<strong>Symptoms</strong>" not in doc
        for key, label in (("symptom", "Symptom 现象"), ("fix", "Fix 解决")):
            assert f'<h2 id="{key}">{label}' in doc, (e.id, key)


# ------------------------------------------------------------------ 3. home page

def test_home_page_has_quick_start_and_paste_box(site):
    doc = page(site, "")
    text = html_mod.unescape(re.sub(r"<[^>]+>", "", doc))
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"^python3 -m venv .*$", readme, re.MULTILINE)
    assert len(commands) == 2, "README's first screen has the two set-up commands"
    for c in commands:
        assert c in text, c
    assert 'id="envcheck-paste-input"' in doc and "<textarea" in doc
    assert "I have an error" in doc and "粘贴" in doc
    assert "A doctor for Huawei Ascend NPU training machines" in doc


# ------------------------------------------------------------------ 4. matrix

def test_matrix_page_is_filterable_and_explains_conflicts(site):
    import yaml

    data = yaml.safe_load((REPO / "matrix.yaml").read_text(encoding="utf-8"))
    doc = page(site, "matrix")
    for key in ("cann", "torch", "torch_npu", "python", "chip"):
        assert f'<select data-key="{key}">' in doc, key
    rows = re.findall(r'<tr data-cann="([^"]*)" data-torch="([^"]*)" data-torch_npu="([^"]*)"', doc)
    pairs = {(r["version"], t["torch"], t["torch_npu"]) for r in data["cann"] for t in r.get("torch") or []}
    assert pairs <= set(rows)
    # conflicts in words: no bare ids such as "d4" in the table, each conflict's title and both sides shown
    table = doc[doc.index('id="envcheck-matrix"'):doc.index("</table>", doc.index('id="envcheck-matrix"'))]
    assert not re.search(r">\s*d[0-9]+\s*<|\bd[0-9]+/d[0-9]+\b", table)
    visible = html_mod.unescape(re.sub(r"<[^>]+>", " ", doc))
    for c in data["conflicts"]:
        assert html_mod.unescape(c["title"]) in visible, c["id"]
        for side in c["sides"]:
            assert side["says"] in visible, (c["id"], side["says"])
    assert not re.search(r"\bconflicts? d[0-9]", visible)
    # releases with a known defect: each advisory with its fixed build and sources' links
    for a in data["advisories"]:
        assert html_mod.unescape(a["title"]) in visible and f"envcheck kb show {a['kb']}" in visible, a["id"]
        row = visible[visible.index(a["title"]):][:400]
        assert a["fixed_in"] in row
        for key in a["sources"]:
            assert f'href="{data["sources"][key]["url"]}"' in doc, key


# ------------------------------------------------------------------ 5. bilingual labels, 6. version gates

def test_interface_labels_in_both_languages(site):
    home, matrix = page(site, ""), page(site, "matrix")
    assert "Find the fix 查找解决方法" in home and "Set up 安装与运行" in home
    assert "any 全部" in matrix and "Reset 重置" in matrix
    entry = page(site, "kb/hccl-timeout/hccl-timeout")
    for label in ("Symptom 现象", "Cause 原因", "Fix 解决", "Verify 验证"):
        assert label in entry
    config = re.search(r'<script id="__config" type="application/json">(.*?)</script>', home, re.DOTALL)
    cfg = json.loads(config.group(1))
    assert "没有匹配" in cfg["translations"]["search.result.none"]
    assert 'placeholder="Search 搜索"' in home


def test_version_gate_shown_at_the_fix(site):
    gated = [e for e in ENTRIES if e.applies_to]
    assert gated, "some entries carry applies_to"
    for e in gated:
        doc = page(site, f"kb/{e.category}/{e.id}")
        fix = doc.index('<h2 id="fix">')
        gate = doc.find("envcheck-gate", fix)
        nxt = doc.find("<h2", fix + 5)
        assert 0 < gate < (nxt if nxt > 0 else len(doc)), e.id  # inside the Fix section, before any other
        assert doc.find("<p", fix) > doc.rfind('<div class="admonition', 0, gate)  # first thing under Fix
        text = html_mod.unescape(re.sub(r"<[^>]+>", " ", doc[gate:nxt if nxt > 0 else len(doc)]))
        for key, spec in e.applies_to.items():
            version = re.sub(r"^[<>=!~]+", "", str(spec).split(",")[0]).strip()
            assert "Needs" in text and version in text, (e.id, key, spec)
    npu = [e for e in gated if e.applies_to.get("torch_npu") == ">=2.1"]
    for e in npu:
        assert "Needs torch_npu ≥ 2.1" in page(site, f"kb/{e.category}/{e.id}")


def test_version_gate_words():
    from envcheck.kb.entries import Entry
    from envcheck.kb.sitegen import version_gates

    e = Entry(id="x", title="x", category="numerics", path=Path("x.md"), body="",
              applies_to={"torch_npu": ">=2.1", "cann": ">=8.0.RC1,<9.0.0", "chip": "Ascend910B"})
    assert version_gates(e) == ["torch_npu ≥ 2.1", "CANN ≥ 8.0.RC1 and < 9.0.0", "chip Ascend910B"]


# ------------------------------------------------------------------ 2. search data

def test_search_index_carries_synonyms_codes_and_patterns(site):
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    ext = index["config"]["envcheck"]
    assert ["显存", "内存"] == ext["synonyms"][0][:2]
    oom = next(e for e in ENTRIES if e.id == "npu-out-of-memory")
    meta = ext["entries"][f"kb/{oom.category}/{oom.id}/"]
    assert set(c.upper() for c in oom.error_codes) <= set(meta["codes"])
    assert meta["patterns"] == [p.regex for p in oom.patterns]
    doc = next(d for d in index["docs"] if d["location"] == f"kb/{oom.category}/{oom.id}/")
    assert "显存" in doc["title"]  # the Chinese title is searchable as a title
    assert not any(d["location"] == "search/" for d in index["docs"])  # the help page lists every synonym
    html = page(site, "")
    assert '"search": "assets/javascripts/envcheck-search.js"' in html
    assert "显存 · 内存" in page(site, "search")


# ------------------------------------------------------------------ 7. page_url and site_url

def test_page_url(monkeypatch):
    from envcheck.kb import site

    e = next(e for e in ENTRIES if e.id == "npu-out-of-memory")
    monkeypatch.delenv("ENVCHECK_SITE_URL", raising=False)
    assert site.page_url(e, base="https://kb.example.org") == "https://kb.example.org/kb/out-of-memory/npu-out-of-memory/"
    assert site.page_url("npu-out-of-memory", base="https://kb.example.org/") == \
        "https://kb.example.org/kb/out-of-memory/npu-out-of-memory/"
    assert site.page_url("npu-out-of-memory", base="") == "kb/out-of-memory/npu-out-of-memory/"
    monkeypatch.setenv("ENVCHECK_SITE_URL", "https://docs.example.com/envcheck/")
    assert site.page_url("npu-out-of-memory") == "https://docs.example.com/envcheck/kb/out-of-memory/npu-out-of-memory/"
    with pytest.raises(KeyError):
        site.page_url("no-such-entry", base="")


def test_site_url_from_mkdocs_yml():
    from envcheck.kb.site import parse_site_url

    assert parse_site_url("site_name: x\nsite_url: https://a.example/\n") == "https://a.example/"
    assert parse_site_url('site_url: !ENV [ENVCHECK_SITE_URL, "https://b.example/"]  # c\n') == "https://b.example/"
    assert parse_site_url('site_url: !ENV [ENVCHECK_SITE_URL, ""]\n') == ""
    assert parse_site_url("site_url: !ENV ENVCHECK_SITE_URL\n") == ""
    assert parse_site_url("site_name: x\n") == ""
    assert parse_site_url((REPO / "mkdocs.yml").read_text(encoding="utf-8")) == ""  # no public host configured


def test_site_url_env_reaches_the_build(tmp_path):
    from _site_session import build_site
    from conftest import DATA

    out = tmp_path / "site"
    p = build_site(out, DATA / "kb-mini", {"ENVCHECK_SITE_URL": "https://kb.example.org/envcheck/"})
    assert p.returncode == 0, p.stdout + p.stderr
    assert "https://kb.example.org/envcheck/kb/" in (out / "sitemap.xml").read_text(encoding="utf-8")
    assert 'rel="canonical" href="https://kb.example.org/envcheck/' in (out / "index.html").read_text(encoding="utf-8")


def test_gated_fix_steps_show_their_versions(site):
    """A single gated variable (front matter `gates`) is shown with the versions it needs."""
    html = page(site, "kb/cpu-fallback/cpu-fallback-silent")
    assert "TORCH_NPU_FALLBACK_CPU_DISABLE=1" in html and "2.13.0" in html and "envcheck-gate" in html
