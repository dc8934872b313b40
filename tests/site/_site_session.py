"""Shared by the site tests: one real-site build per test session, a local server, one browser per module.

`built_site()` runs `mkdocs build --strict` once per pytest process (cached) into a temporary folder
removed at exit; `serve(site)` serves it on 127.0.0.1; `chromium(tmp)` starts Debian's headless
chromium through chromedriver (skips when they are not installed: `.ci/run` installs them).
"""
from __future__ import annotations

import atexit
import functools
import http.server
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import REPO

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--window-size=1280,1000"]


def build_site(out: Path, kb: Path | None = None, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=str(REPO))
    env.pop("ENVCHECK_SITE_KB", None)
    env.pop("ENVCHECK_SITE_URL", None)
    if kb is not None:
        env["ENVCHECK_SITE_KB"] = str(kb)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(REPO / "mkdocs.yml"),
                           "-d", str(out)], capture_output=True, text=True, env=env, cwd=REPO, timeout=300)


@functools.cache
def built_site(kb: str | None = None) -> Path:
    """The site built from the repository (or from another kb folder), once per test session."""
    tmp = Path(tempfile.mkdtemp(prefix="envcheck-site-"))
    atexit.register(shutil.rmtree, tmp, True)
    out = tmp / "site"
    p = build_site(out, Path(kb) if kb else None)
    if p.returncode != 0:
        raise AssertionError("mkdocs build --strict failed:\n" + p.stdout + p.stderr)
    return out


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep pytest output clean
        pass


@contextmanager
def serve(site: Path) -> Iterator[str]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/"
    finally:
        srv.shutdown()
        srv.server_close()


@contextmanager
def chromium(profile: Path):
    if not (os.path.exists(CHROMIUM) and shutil.which("chromedriver")):
        pytest.skip("needs Debian's chromium and chromium-driver (installed by .ci/run)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={profile}"]:
        opts.add_argument(flag)
    driver = webdriver.Chrome(options=opts, service=Service(shutil.which("chromedriver") or CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def page(site: Path, path: str) -> str:
    return (site / path / "index.html").read_text(encoding="utf-8")
