"""The kb site: `mkdocs build --strict` with the generated pages, and a real headless Chromium test."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from _site_session import built_site, chromium, page, serve
from conftest import DATA, REPO

from envcheck.kb.entries import load_kb

MINI = DATA / "kb-mini"


@pytest.fixture(scope="module")
def mini_site() -> Path:
    return built_site(str(MINI))


def test_entry_page_shows_chinese_title_summary_and_metadata(mini_site):
    html = page(mini_site, "kb/hccl-init/hccl-socket-timeout-ei0006")
    assert "HCCL 建链失败：获取 socket 超时（EI0006）" in html
    assert "现象：初始化通信域时报 EI0006" in html
    assert 'href="../../../error-codes/#code-ei0006"' in html
    assert "envcheck kb show hccl-socket-timeout-ei0006" in html
    assert 'href="../../../tags/#tag:network"' in html  # material tags from the plain `tags:` key
    for section in ("Symptom", "Cause", "Fix", "Verify"):
        assert f'id="{section.lower()}"' in html
    linked = page(mini_site, "kb/env-not-loaded/libhccl-not-found")
    assert 'href="../../../checks/EC201/"' in linked


def test_entries_stay_plain_markdown():
    """The site adds titles and metadata at build time: no generator syntax in the entry files."""
    import re

    generator_syntax = re.compile(r"^\s*(!!!|\?\?\?\+?) |<!-- material/|^\s*\{%|\{:", re.MULTILINE)
    for e in load_kb(REPO / "kb").entries + load_kb(MINI).entries:
        m = generator_syntax.search(e.body)
        assert m is None, (e.path, m and m.group(0))


def test_category_pages_and_nav(mini_site):
    html = page(mini_site, "kb/version-mismatch")
    assert "torch 与 torch_npu 版本不匹配" in html and "torch_npu 与 CANN 版本不匹配" in html
    assert "No entries yet." in page(mini_site, "kb/migration")
    home = page(mini_site, "kb")
    assert "Rank configuration" in home and "HCCL timeout" in home
    # listings stay out of the search index (a query finds the entry, not the page that lists its title)
    import json

    docs = json.loads((mini_site / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]
    locations = {d["location"].split("#")[0] for d in docs}
    assert "kb/version-mismatch/" not in locations and "kb/migration/" not in locations
    assert any(loc.startswith("kb/version-mismatch/") and loc != "kb/version-mismatch/" for loc in locations)


def test_check_reference_pages(mini_site):
    from envcheck.checks import by_id

    check = by_id()["EC201"]
    html = page(mini_site, "checks/EC201")
    assert "cann-env-not-loaded" in html
    import html as html_mod
    import re

    first_doc_line = (check.fn.__doc__ or "").strip().splitlines()[0]
    plain = html_mod.unescape(re.sub(r"<[^>]+>", "", html))
    assert re.sub(r"`", "", first_doc_line) in re.sub(r"\s+", " ", plain)  # "what it checks"
    assert 'href="../../kb/env-not-loaded/libhccl-not-found/"' in html
    index = page(mini_site, "checks")
    assert all(f'href="{c.code}/"' in index for c in set(by_id().values()))


def test_error_code_index(mini_site):
    html = page(mini_site, "error-codes")
    for code, target in (("EI0006", "hccl-init/hccl-socket-timeout-ei0006"),
                         ("ERR02200", "hccl-timeout/hccl-collective-timeout"),
                         ("EL0004", "out-of-memory/npu-out-of-memory")):
        assert f'id="code-{code.lower()}"' in html
        assert f'href="../kb/{target}/"' in html


def test_matrix_page(mini_site):
    import yaml

    data = yaml.safe_load((REPO / "matrix.yaml").read_text(encoding="utf-8"))
    html = page(mini_site, "matrix")
    rows = [(r["version"], t["torch_npu"]) for r in data["cann"] for t in r.get("torch") or []]
    assert rows
    for cann, npu in rows[:5] + rows[-3:]:
        assert f"<code>{cann}</code>" in html and f"<code>{npu}</code>" in html
    assert "<table>" in html


def test_search_index_is_segmented_for_chinese(mini_site):
    index = json.loads((mini_site / "search" / "search_index.json").read_text(encoding="utf-8"))
    assert "zh" in index["config"]["lang"] and "\\u200b" in index["config"]["separator"]
    text = " ".join(d["text"] + d["title"] for d in index["docs"])
    assert "\u200b" in text  # jieba split the Chinese text with zero-width spaces
    assert "EI0006" in text


@pytest.fixture(scope="module")
def real_site() -> Path:
    return built_site()


@pytest.mark.slow
def test_real_site_builds_strict(real_site):
    out = real_site
    for e in load_kb(REPO / "kb").entries:
        assert (out / "kb" / e.category / e.id / "index.html").exists(), e.id
    assert (out / "matrix" / "index.html").exists() and (out / "error-codes" / "index.html").exists()


# ---------------------------------------------------------------- the browser

@pytest.fixture(scope="module")
def served(mini_site):
    with serve(mini_site) as url:
        yield url


@pytest.fixture(scope="module")
def served_real(real_site):
    with serve(real_site) as url:
        yield url


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with chromium(tmp_path_factory.mktemp("profile")) as driver:
        yield driver


RESULTS_JS = """return Array.from(document.querySelectorAll('li.md-search-result__item')).map(
    li => [li.innerText, (li.querySelector('a.md-search-result__link') || {}).href || ''])"""


def _search(driver, base: str, query: str, expect: str) -> tuple[str, list]:
    """Type the query into material's search box; wait until a result contains `expect`.

    Returns (href of that result, snapshot of all results as [text, href]). The result list is
    re-rendered while results stream in, so it is read atomically in the page (no stale handles).
    """
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(base)
    box = WebDriverWait(driver, 20).until(lambda d: d.find_element(By.CSS_SELECTOR, "input.md-search__input"))
    box.click()
    box.send_keys(query)
    found: dict = {}

    def hit(d):
        results = d.execute_script(RESULTS_JS)
        for text, href in results:
            if expect in text and href:
                found.update(href=href, results=results)
                return True
        return False

    WebDriverWait(driver, 20).until(hit)
    return found["href"], found["results"]


def _open(driver, href: str) -> None:
    """Click the result link with that href (looked up afresh until the list stops changing)."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def click(d):
        for a in d.find_elements(By.CSS_SELECTOR, "a.md-search-result__link"):
            if a.get_attribute("href") == href:
                a.click()
                return True
        return False

    WebDriverWait(driver, 20, ignored_exceptions=(StaleElementReferenceException,)).until(click)


@pytest.mark.slow
def test_browser_search_error_code_then_open_and_screenshot(served, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    title = "HCCL link setup times out (EI0006 Getting socket times out)"
    href, results = _search(browser, served, "EI0006", title)
    assert title in results[0][0]  # the entry that declares the code is the top result
    _open(browser, href)
    WebDriverWait(browser, 20).until(lambda d: "/kb/hccl-init/hccl-socket-timeout-ei0006/" in d.current_url)
    h1 = WebDriverWait(browser, 20).until(lambda d: d.find_element(By.CSS_SELECTOR, "article h1"))
    assert h1.text.startswith("HCCL link setup times out")
    shot = tmp_path / "entry.png"
    assert browser.save_screenshot(str(shot))
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width >= 800 and height >= 600
    assert len(data) > 20_000  # a rendered page, not a blank image


@pytest.mark.slow
def test_browser_search_in_chinese(served, browser):
    _search(browser, served, "版本不匹配", "torch and torch_npu versions do not match")


@pytest.mark.slow
def test_browser_real_site_finds_the_entry_for_an_error_code(served_real, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    declaring = [e for e in load_kb(REPO / "kb").entries if "EI0006" in e.error_codes]
    assert declaring, "the real kb must explain EI0006"
    title = declaring[0].title
    href, _ = _search(browser, served_real, "EI0006", title)
    _open(browser, href)
    e = declaring[0]
    WebDriverWait(browser, 20).until(lambda d: f"/kb/{e.category}/{e.id}/" in d.current_url)
    body = WebDriverWait(browser, 20).until(lambda d: d.find_element(By.CSS_SELECTOR, "article"))
    assert e.title_zh in body.text and "EI0006" in body.text
    shot = tmp_path / "real-entry.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 20_000
