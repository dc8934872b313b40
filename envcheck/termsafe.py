"""Make untrusted text safe to print on a terminal: control characters become visible escapes.

Log lines and npu-smi output may carry ESC sequences (retitle the window, clear the screen, OSC 8
hyperlinks), NUL and other C0/C1 controls; printed raw they act on the user's terminal. Text
output goes through `escape_controls` once, in the output path; newline and tab are kept.
"""
from __future__ import annotations

import re

# C0 controls except \t and \n, DEL, and the C1 range (U+0080-U+009F: 8-bit CSI/OSC on some terminals)
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_NAMES = {"\x1b": "\\x1b", "\r": "\\r", "\x00": "\\x00"}


def _escape(m: re.Match[str]) -> str:
    c = m.group(0)
    return _NAMES.get(c) or f"\\x{ord(c):02x}"


def escape_controls(text: str) -> str:
    """text with every control character except newline and tab written as a visible \\xNN escape."""
    return _CONTROLS.sub(_escape, text)


def has_controls(text: str) -> bool:
    return _CONTROLS.search(text) is not None
