"""Class 11 (issue 14): terminal control characters from logs or npu-smi are escaped in text output."""
from __future__ import annotations

from envcheck.termsafe import escape_controls, has_controls

EVIL = "x\n\x1b]0;PWNED-TITLE\x07\x1b[2J RuntimeError: EI0006 \x1b]8;;http://evil.example/\x1b\\click\x00\x9b2J\tend\r"


def test_controls_are_escaped_newline_and_tab_kept():
    out = escape_controls(EVIL)
    assert not has_controls(out)
    assert "\x1b" not in out and "\x00" not in out and "\x07" not in out and "\x9b" not in out
    assert "\\x1b]0;PWNED-TITLE\\x07" in out and "\\x00" in out and "\\x9b" in out and "\\r" in out
    assert out.count("\n") == 1 and "\tend" in out


def test_plain_and_unicode_text_unchanged():
    text = "HCCL 建链超时 EI0006\n\t✓ ok — fine"
    assert escape_controls(text) == text and not has_controls(text)
