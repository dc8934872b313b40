"""The compatibility matrix (matrix.yaml) as one compact, filterable page for the site.

One row per official CANN x PyTorch x torch_npu pairing, with the Python minors its wheels cover
and the chips the CANN release supports; select boxes filter the rows in the browser
(docs/assets/javascripts/envcheck.js). A pairing that carries a conflict says in words what the two
sources disagree on and how envcheck judges it. The releases with a known defect, the driver (HDK),
MindSpore, chip, firmware, conflict and source tables follow, collapsed.
"""
from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any, Callable

import yaml

from envcheck.kb.sitegen import code, esc

# What a conflict is about (matrix.yaml conflicts[].applies_to), for the row's one-line note.
ABOUT = {"pairing": "this pairing", "python": "the Python range", "hdk": "the driver (HDK)",
         "mindspore": "the MindSpore pairing", "chip": "the chips", "none": "a related statement"}
LABELS = {"cann": "CANN", "torch": "PyTorch", "torch_npu": "torch_npu", "python": "Python 版本", "chip": "chip 芯片"}


def _join(v: Any) -> str:
    if v is None or v == []:
        return ""
    if isinstance(v, (list, tuple)):
        return ", ".join(esc(x) for x in v)
    return esc(v)


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    return out + ["| " + " | ".join(r) + " |" for r in rows] + [""]


def _indent(lines: list[str]) -> list[str]:
    return [("    " + x) if x else "" for x in lines]


def _validate(path: Path) -> None:
    """Run the matrix's own loader when it exists, so the site never shows a matrix envcheck rejects."""
    try:
        from envcheck import matrix
    except ImportError:
        return
    load = getattr(matrix, "load", None)
    if load is not None:
        load(path)


def _sort_key(kind: str) -> Callable[[str], Any]:
    from envcheck import versions

    def key(v: str) -> Any:
        try:
            return (0, versions.parse_ascend(v) if kind == "ascend" else versions.parse_pep440(v))
        except (versions.VersionError, ValueError, TypeError):
            return (1, v)
    return key


def _minors(text: Any) -> list[str]:
    from envcheck.versions import VersionError, parse_pyrange

    if not text:
        return []
    try:
        return [f"{a}.{b}" for a, b in parse_pyrange(str(text)).minors()]
    except VersionError:
        return []


def _chips_of(release: str, chips: list[dict]) -> list[str]:
    """Chip families a CANN release supports: those without `since`, or since <= release."""
    key = _sort_key("ascend")
    out = []
    for c in chips:
        since = c.get("since")
        k_rel, k_since = key(release), key(str(since)) if since else None
        if since is None or (k_rel[0] == 0 and k_since is not None and k_since[0] == 0 and k_since[1] <= k_rel[1]):
            out.append(str(c.get("family")))
    return out


def conflict_words(c: dict, sources: dict) -> str:
    """What two sources disagree on, in words: the question, each side with its sources, the verdict."""
    def src(keys: Any) -> str:
        names = []
        for k in keys or []:
            s = sources.get(str(k).split()[0]) if isinstance(sources, dict) else None
            names.append(f"{k} ({s['title']})" if isinstance(s, dict) and s.get("title") else str(k))
        return "; ".join(names)
    sides = [s for s in c.get("sides") or [] if isinstance(s, dict)]
    said = " — versus — ".join(f"“{s.get('says', '')}” according to {src(s.get('sources'))}" for s in sides)
    out = f"{c.get('title', '')}: {said}." if said else f"{c.get('title', '')}."
    if c.get("resolution"):
        out += f" envcheck: {c['resolution']}."
    return out


_CONFLICT_REF_RE = re.compile(r"\bconflicts? (d[0-9]+)\b")


def _note(text: Any, conflicts: dict) -> str:
    """A note from the data, with "conflict d3" replaced by what the sources disagree on."""
    def repl(m: re.Match) -> str:
        c = conflicts.get(m.group(1))
        return f"sources disagree: {c.get('title', '')}" if c else m.group(0)
    return esc(_CONFLICT_REF_RE.sub(repl, str(text or "")))


def matrix_page(path: Path) -> str:
    _validate(path)
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    cann = [r for r in data.get("cann") or [] if isinstance(r, dict)]
    chips = [c for c in data.get("chips") or [] if isinstance(c, dict)]
    sources = data.get("sources") or {}
    conflicts = {str(c.get("id")): c for c in data.get("conflicts") or [] if isinstance(c, dict)}
    out = ["---", "hide:", "  - navigation", "  - toc", "---", "", "# Compatibility matrix 版本配套表", "",
           f"Which CANN, PyTorch, torch_npu and Python versions go together, from {code('matrix.yaml')} "
           f"(dated {esc(data.get('dated', '?'))}). Pick any versions to filter the rows; "
           f"{code('envcheck matrix check')} judges a machine against the same data.",
           "选择任意版本即可筛选；`envcheck matrix check` 使用同一份数据判断本机。", ""]
    wheels = (data.get("wheels") or {}).get("python") or {}
    rows, values = _pairings(cann, chips, sources, conflicts, wheels)
    out += _filter_form(values) + _pairing_table(rows) + [""]
    out += _advisories(data, sources)
    out += _hdk(cann, conflicts) + _mindspore(cann, conflicts) + _chips(chips) + _firmware(data)
    out += _conflicts(data, sources) + _sources(data)
    return "\n".join(out)


def _wheel_text(wheels: dict, npu: str) -> str:
    """The PyPI wheels' Python range(s) for a build (one string, or per-architecture ranges joined)."""
    w = wheels.get(npu)
    if isinstance(w, dict):
        return ", ".join(f"{v} ({k})" for k, v in w.items())
    if isinstance(w, list):
        return ", ".join(str(x) for x in w)
    return str(w or "")


def _pairings(cann: list[dict], chips: list[dict], sources: dict, conflicts: dict,
              wheels: dict | None = None) -> tuple[list[dict], dict]:
    rows: list[dict] = []
    values: dict[str, set[str]] = {k: set() for k in LABELS}
    for r in cann:
        release = str(r.get("version"))
        fams = _chips_of(release, chips)
        values["cann"].add(release)
        values["chip"].update(fams)
        pairs = [t for t in r.get("torch") or [] if isinstance(t, dict)]
        if not pairs:
            rows.append({"cann": release, "torch": "", "torch_npu": "", "python": [], "chip": fams,
                         "notes": [_note(r.get("note") or "no torch_npu build listed for this release", conflicts)],
                         "conflicts": []})
        for t in pairs:
            table = t.get("python")
            wheel = "" if table else _wheel_text(wheels or {}, str(t.get("torch_npu")))
            table = table or ("" if wheel else r.get("python"))
            # no Python column for the build: the wheels that exist decide (as `envcheck matrix check` does)
            minors = _minors(table) if table else sorted({m for part in wheel.split(", ")
                                                          for m in _minors(part.split(" (")[0])},
                                                         key=lambda v: tuple(int(x) for x in v.split(".")))
            values["torch"].add(str(t.get("torch")))
            values["torch_npu"].add(str(t.get("torch_npu")))
            values["python"].update(minors)
            rows.append({"cann": release, "torch": str(t.get("torch")), "torch_npu": str(t.get("torch_npu")),
                         "python": minors, "python_text": str(table or (f"wheels: {wheel}" if wheel else "")),
                         "chip": fams, "notes": [],
                         "conflicts": [conflicts[c] for c in t.get("conflict") or [] if c in conflicts]})
    for row in rows:
        row["conflict_text"] = [conflict_words(c, sources) for c in row["conflicts"]]
    return rows, values


def _filter_form(values: dict[str, set[str]]) -> list[str]:
    order = {"cann": None, "torch": _sort_key("pep440"), "torch_npu": _sort_key("pep440"),
             "python": lambda v: tuple(int(x) for x in v.split(".")), "chip": None}
    out = ['<form id="envcheck-matrix-filter" class="envcheck-filter" onsubmit="return false">']
    for key, label in LABELS.items():
        vals = list(values[key])
        sorter = order[key]
        if key == "cann":
            vals = sorted(vals, key=_sort_key("ascend"), reverse=True)
        elif sorter is not None:
            vals = sorted(vals, key=sorter, reverse=True)
        else:
            vals = sorted(vals)
        opts = "".join(f'<option value="{html.escape(v)}">{html.escape(v)}</option>' for v in vals)
        out.append(f'<label>{html.escape(label)} <select data-key="{key}"><option value="">any 全部</option>'
                   f"{opts}</select></label>")
    out += ['<button type="button" id="envcheck-matrix-reset" class="md-button">Reset 重置</button>',
            '<span class="envcheck-count">rows 行: <span id="envcheck-matrix-count"></span></span>', "</form>", ""]
    return out


def _pairing_table(rows: list[dict]) -> list[str]:
    out = ['<table id="envcheck-matrix" class="envcheck-matrix">',
           "<thead><tr><th>CANN</th><th>PyTorch</th><th>torch_npu</th><th>Python</th><th>chips 芯片</th>"
           "<th>notes 说明</th></tr></thead>", "<tbody>"]
    for r in rows:
        attrs = " ".join(f'data-{k}="{html.escape(" ".join(v) if isinstance(v, list) else v)}"'
                         for k, v in (("cann", r["cann"]), ("torch", r["torch"]), ("torch_npu", r["torch_npu"]),
                                      ("python", r["python"]), ("chip", r["chip"])))
        py = html.escape(r.get("python_text") or "")
        notes = list(r["notes"])
        for c, words in zip(r["conflicts"], r["conflict_text"]):
            what = ABOUT.get(str(c.get("applies_to")), "a related statement")
            notes.append(f'<details class="envcheck-conflict"><summary>⚠ Sources disagree on {html.escape(what)} '
                         f'来源不一致</summary><p>{html.escape(words)}</p></details>')
        cells = [f"<code>{html.escape(r['cann'])}</code>",
                 f"<code>{html.escape(r['torch'])}</code>" if r["torch"] else "—",
                 f"<code>{html.escape(r['torch_npu'])}</code>" if r["torch_npu"] else "—",
                 py or "—", html.escape(", ".join(r["chip"])), "".join(notes)]
        out.append(f"<tr {attrs}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    out += ["</tbody>", "</table>",
            '<p class="envcheck-none">No pairing matches these versions. 没有符合条件的组合。</p>']
    return out


def _hdk(cann: list[dict], conflicts: dict) -> list[str]:
    rows = []
    for r in cann:
        hdk = r.get("hdk") or {}
        rows.append([code(r.get("version")), _join(hdk.get("paired")), _join(hdk.get("compatible")),
                     _join(hdk.get("unsupported")), _note(r.get("note", ""), conflicts)])
    return ['??? info "CANN and the driver / firmware (HDK) 驱动与固件"', ""] + _indent(
        _table(["CANN", "paired HDK", "compatible HDK", "unsupported HDK", "note"], rows))


def _mindspore(cann: list[dict], conflicts: dict) -> list[str]:
    def said(ids: Any) -> str:
        return "; ".join("sources disagree: " + esc(conflicts[c].get("title", "")) for c in ids or [] if c in conflicts)
    rows = [[code(r.get("version")), code(m.get("mindspore")), _join(m.get("python")), said(m.get("conflict"))]
            for r in cann for m in r.get("mindspore") or [] if isinstance(m, dict)]
    if not rows:
        return []
    return ['??? info "CANN and MindSpore"', ""] + _indent(_table(["CANN", "MindSpore", "Python", "notes"], rows))


def _chips(chips: list[dict]) -> list[str]:
    rows = [[esc(c.get("family")), esc(c.get("name")), _join(c.get("products")), _join(c.get("since"))]
            for c in chips]
    return (['??? info "Chips 芯片"', ""] + _indent(_table(["family", "chip", "products", "since CANN"], rows))) \
        if rows else []


def _firmware(data: dict) -> list[str]:
    rows = [[code(f.get("driver")), code(f.get("firmware"))] for f in data.get("firmware") or [] if isinstance(f, dict)]
    return (['??? info "Minimum firmware per driver 驱动所需最低固件"', ""]
            + _indent(_table(["driver", "firmware at least"], rows))) if rows else []


def _advisories(data: dict, sources: dict) -> list[str]:
    """Releases with a known defect (matrix.yaml advisories; check EC108), each with its fix and sources."""
    def src(keys: Any) -> str:
        return ", ".join(f"[{esc(k)}]({sources[k]['url']})" if isinstance(sources.get(k), dict) else esc(k)
                         for k in keys or [])
    rows = [[esc(a.get("package")), _join(a.get("versions")), esc(a.get("title")), code(a.get("fixed_in")),
             code(f"envcheck kb show {a.get('kb')}"), src(a.get("sources"))]
            for a in data.get("advisories") or [] if isinstance(a, dict)]
    if not rows:
        return []
    return (['??? danger "Releases with a known defect 已知缺陷版本"', "",
             "    Paired correctly, but their maintainers name a defect that a later build fixes; "
             f"{code('envcheck')} warns (EC108).", ""]
            + _indent(_table(["package", "releases", "defect", "fixed in", "kb", "sources"], rows)))


def _conflicts(data: dict, sources: dict) -> list[str]:
    items = [c for c in data.get("conflicts") or [] if isinstance(c, dict)]
    if not items:
        return []
    out = ['??? warning "Where sources disagree 来源不一致之处"', "",
           "    A pairing that carries one of these is judged *warn*, and the finding names both sides.", ""]
    out += [f"    - {esc(conflict_words(c, sources))}" for c in items]
    return out + [""]


def _sources(data: dict) -> list[str]:
    src = data.get("sources") or {}
    rows = [[code(k), f"[{esc(v.get('title', k))}]({v['url']})" if v.get("url") else esc(v.get("title", k)),
             esc(v.get("date", ""))] for k, v in src.items() if isinstance(v, dict)]
    return (['??? info "Sources 来源"', ""] + _indent(_table(["key", "source", "date"], rows))) if rows else []
