"""Classes 2-3 (issue 14): redaction is linear and catches every secret shape the audit leaked —
URL passwords with '/' or an unencoded '@', scheme-less user:pw@host, *_SK / *_PASS / *TOKEN*
names, bare 26+ character tokens — in env mappings, JSON, free text and text a child printed."""
from __future__ import annotations

import os
import sys
import time

import pytest
from conftest import REPO

from envcheck.redact import MASK, known_secrets, redact_env, redact_value, scrub

# (environment variable, value, the part that must never appear) — grows with every leak found
CORPUS = [
    ("MASTER_ADDR", "user:LEAKmasterPW2@10.0.0.1", "LEAKmasterPW2"),
    ("ASCEND_SK", "LEAKascendSKvalue9", "LEAKascendSKvalue9"),
    ("ASCEND_DB_PASS", "LEAKdbPass77", "LEAKdbPass77"),
    ("ASCEND_REPO_URL", "https://svc:abc/LEAKslashPW@repo.corp/x", "LEAKslashPW"),
    ("ASCEND_CACHE_URL", "https://svc:LEAKatpart1@LEAKatpart2@cache.corp/x", "LEAKatpart"),
    ("ATB_LICENSE", "Zm9vYmFyYmF6cXV4LEAKb64tok", "LEAKb64tok"),
    ("ASCEND_HUB_TOKEN", "LEAKascendHubTok", "LEAKascendHubTok"),
    ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYLEAKAWS01", "LEAKAWS01"),
    ("http_proxy", "http://proxyuser:LEAKproxyPW@proxy.corp:3128", "LEAKproxyPW"),
    ("https_proxy", "proxyuser:LEAKschemelessPW@proxy.corp:3128", "LEAKschemelessPW"),
    ("OBS_AK", "LEAKobsAccessKey1", "LEAKobsAccessKey1"),
    ("HCCL_AUTH_INFO", "LEAKhcclAuth42", "LEAKhcclAuth42"),
    ("ASCEND_CLIENT_INFO", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJMRUFLIn0.LEAKjwtSignature1", "LEAKjwtSignature1"),
]
LEAK = "LEAK"


@pytest.fixture
def secret_env(monkeypatch):
    for k, v, _ in CORPUS:
        monkeypatch.setenv(k, v)


@pytest.mark.parametrize("name,value,secret", CORPUS)
def test_env_mapping_masks_every_class(name, value, secret):
    out = redact_env({name: value})[name]
    assert secret not in out and LEAK not in out, out


@pytest.mark.parametrize("name,value,secret", CORPUS)
def test_free_text_by_shape_without_the_environment(name, value, secret, monkeypatch):
    for k in [k for k in os.environ if k in {c[0] for c in CORPUS}]:
        monkeypatch.delenv(k)
    line = f"env {name}={value} and again {name}: {value}"
    assert secret not in redact_value(line), redact_value(line)


def test_child_output_quoting_secret_values_is_masked(secret_env):
    # what an import error from a child printed (audit D3: py_leak_torch)
    env = os.environ
    text = (f"RuntimeError: cannot reach hub, AWS_SECRET_ACCESS_KEY={env['AWS_SECRET_ACCESS_KEY']}, "
            f"token {env['ASCEND_HUB_TOKEN']} via {env['http_proxy']}")
    out = redact_value(text)
    assert LEAK not in out and MASK in out and "proxy.corp" in out


def test_known_secrets_come_from_secret_names_and_url_passwords(secret_env):
    got = set(known_secrets())
    assert {"LEAKdbPass77", "LEAKascendHubTok", "LEAKmasterPW2", "LEAKproxyPW"} <= got
    assert "ubuntu" not in known_secrets({"XDG_SESSION_DESKTOP": "ubuntu"})  # too plain to mask everywhere


def test_scrub_json_and_deep_nesting(secret_env):
    doc = {"facts": {"env": {k: v for k, v, _ in CORPUS}},
           "findings": [{"evidence": [f"{k}={v}" for k, v, _ in CORPUS]}]}
    assert LEAK not in repr(scrub(doc))
    deep: list = []
    cur = deep
    for _ in range(20_000):  # deeper than the recursion limit (repr would recurse: walk instead)
        nxt: list = []
        cur.append(nxt)
        cur = nxt
    cur.append("user:LEAKdeep99@h")
    out = scrub(deep)
    for _ in range(20_000):
        out = out[0]
    assert out == [f"user:{MASK}@h"]


def test_no_false_positives_on_ordinary_report_text():
    for text in ("aclnnFlashAttentionScoreGradV2 fell back to the CPU", "git@github.com:org/repo.git",
                 "https://host:8080/path@v2", "user@host", "12:30:45 rank 0", "torch_npu 2.1.0.post6",
                 "/usr/local/Ascend/ascend-toolkit/latest", "Author: someone", "EI0006 Getting socket times out",
                 "ENVCHECK_SMOKE_TEST_HANG_RANK",
                 # package file names that fix lines print (the bare-token rule masked the first one)
                 "Atlas-A3-hdk-npu-driver_25.2.0_linux-x86-64.run", "Ascend-cann-A3-ops_8.5.0_linux-aarch64.run",
                 "Ascend-hdk-910b-npu-firmware_7.7.0.1.231.run", "Ascend-cann-kernels-910b_8.0.RC1_linux-x86_64.run"):
        assert redact_value(text) == text


def _time(n: int) -> float:
    total = 0.0
    for text in ("x" * n, ("aB3:" * n)[:n], ("a@b:c/ " * n)[:n], ("https://" * n)[:n]):
        t0 = time.perf_counter()
        redact_value(text)
        total += time.perf_counter() - t0
    return total


def test_redaction_is_linear():
    small = _time(100_000)
    big = _time(1_000_000)
    # quadratic would be ~100x; allow 30x (+ slack for a loaded machine), generous on purpose
    assert big < 30 * small + 2.0, (small, big)


def test_probe_json_does_not_leak(secret_env):
    import subprocess

    p = subprocess.run([sys.executable, "-m", "envcheck", "probe", "--json"], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=str(REPO), timeout=120, check=False)
    assert p.returncode == 0, p.stderr
    assert LEAK not in p.stdout and LEAK not in p.stderr


def test_shell_working_directory_is_not_a_secret(monkeypatch, tmp_path):
    """PWD / OLDPWD match the password-name pattern but hold paths: masking them would mangle every path
    under the working directory in a report (a RANK_TABLE_FILE path became '<redacted>/...')."""
    from envcheck.redact import redact_env, secret_name

    assert not secret_name("PWD") and not secret_name("OLDPWD")
    assert secret_name("DB_PWD") and secret_name("MY_PASS")
    monkeypatch.setenv("PWD", str(tmp_path))
    assert redact_value(f"{tmp_path}/rank_table.json") == f"{tmp_path}/rank_table.json"
    assert redact_env({"PWD": str(tmp_path)}) == {"PWD": str(tmp_path)}
