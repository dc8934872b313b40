"""The compatibility matrix (matrix.yaml) as readable Markdown tables for the site."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from envcheck.kb.sitegen import code, esc


def _join(v: Any) -> str:
    if v is None or v == []:
        return ""
    if isinstance(v, (list, tuple)):
        return ", ".join(esc(x) for x in v)
    return esc(v)


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    return out + ["| " + " | ".join(r) + " |" for r in rows] + [""]


def _validate(path: Path) -> None:
    """Run the matrix's own loader when it exists, so the site never shows a matrix envcheck rejects."""
    try:
        from envcheck import matrix
    except ImportError:
        return
    load = getattr(matrix, "load", None)
    if load is not None:
        load(path)


def matrix_page(path: Path) -> str:
    _validate(path)
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    out = ["# Compatibility matrix", "",
           f"Generated from {code('matrix.yaml')} (dated {esc(data.get('dated', '?'))}). "
           f"{code('envcheck matrix check')} judges a machine against it; rows cite the sources listed at the end.", ""]
    cann = [r for r in data.get("cann") or [] if isinstance(r, dict)]
    out += ["## CANN, PyTorch and torch_npu", ""]
    rows = [[code(r.get("version")), code(t.get("torch")), code(t.get("torch_npu")), _join(t.get("python")),
             _join(t.get("branch")), _join(t.get("conflict"))]
            for r in cann for t in r.get("torch") or [] if isinstance(t, dict)]
    out += _table(["CANN", "PyTorch", "torch_npu", "Python", "branch", "conflicts"], rows)
    out += ["## CANN and the driver / firmware (HDK)", ""]
    rows = []
    for r in cann:
        hdk = r.get("hdk") or {}
        rows.append([code(r.get("version")), _join(hdk.get("paired")), _join(hdk.get("compatible")),
                     _join(hdk.get("unsupported")), esc(r.get("note", ""))])
    out += _table(["CANN", "paired HDK", "compatible HDK", "unsupported HDK", "note"], rows)
    rows = [[code(r.get("version")), code(m.get("mindspore")), _join(m.get("python")), _join(m.get("conflict"))]
            for r in cann for m in r.get("mindspore") or [] if isinstance(m, dict)]
    if rows:
        out += ["## CANN and MindSpore", ""] + _table(["CANN", "MindSpore", "Python", "conflicts"], rows)
    out += _chips(data) + _firmware(data) + _conflicts(data) + _sources(data)
    return "\n".join(out)


def _chips(data: dict) -> list[str]:
    rows = [[esc(c.get("family")), esc(c.get("name")), _join(c.get("products")), _join(c.get("since"))]
            for c in data.get("chips") or [] if isinstance(c, dict)]
    return (["## Chips", ""] + _table(["family", "chip", "products", "since CANN"], rows)) if rows else []


def _firmware(data: dict) -> list[str]:
    rows = [[code(f.get("driver")), code(f.get("firmware"))] for f in data.get("firmware") or [] if isinstance(f, dict)]
    return (["## Minimum firmware per driver", ""] + _table(["driver", "firmware at least"], rows)) if rows else []


def _conflicts(data: dict) -> list[str]:
    rows = [[code(c.get("id")), esc(c.get("title")), esc(c.get("resolution", ""))]
            for c in data.get("conflicts") or [] if isinstance(c, dict)]
    if not rows:
        return []
    return ["## Conflicts between sources", "",
            "A pairing that carries a conflict is judged *warn*, and the finding names both sides.", ""] \
        + _table(["id", "question", "resolution"], rows)


def _sources(data: dict) -> list[str]:
    src = data.get("sources") or {}
    rows = [[code(k), f"[{esc(v.get('title', k))}]({v['url']})" if v.get("url") else esc(v.get("title", k)),
             esc(v.get("date", ""))] for k, v in src.items() if isinstance(v, dict)]
    return (["## Sources", ""] + _table(["key", "source", "date"], rows)) if rows else []
