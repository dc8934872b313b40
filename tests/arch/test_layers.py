"""The layer rule: imports point down, never up or sideways into a higher layer.

Every ``import envcheck…`` counts — at module top, inside functions and under TYPE_CHECKING — so
a lazy import cannot hide an upward edge. The layers, lowest first:

    0 foundation   envcheck/{__init__,errors,model,versions,redact,resources,subproc,…}.py
    1 matrix, probe, smoke     (matrix is a leaf; probe reads the machine; smoke runs child processes
                                and returns their results: both gather, neither judges)
    2 kb                       (entries, search, the log matcher, error codes, lint)
    3 checks                   (facts + matrix + smoke results -> findings; the registry and the runner)
    4 plan, cluster            (planned environments; the torchrun side)
    5 render, kb site          (pure formatting; the mkdocs hooks)
    6 commands, cli, __main__  (thin: parse, call one layer, emit)
    7 envcheck/__init__.py      (the public facade; nothing inside the package imports it)

A module may import its own layer's package and any lower layer. Same-layer packages may not
import each other (matrix and probe stay independent; plan, smoke and cluster too).
"""
from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "envcheck"

FOUNDATION = 0
SITE = ("sitegen", "mkdocs_hooks", "matrix_page")  # envcheck/kb/ modules that build the mkdocs site
RANKS: dict[str, int] = {
    "matrix": 1, "probe": 1, "smoke": 1,
    "kb": 2,
    "checks": 3,
    "plan": 4, "cluster": 4,
    "render": 5, "kb.site": 5,
    "cli": 6,  # cli.py, __main__.py and commands/ are one layer
    "envcheck": 7,  # the package's __init__: the public facade (envcheck.preflight)
}


def unit(module: str) -> str:
    """The layer unit of a dotted module name below ``envcheck``: a package, or a top-level module."""
    parts = module.split(".")[1:]
    if not parts:
        return "envcheck"
    if parts[0] == "kb" and len(parts) > 1 and parts[1] in SITE:
        return "kb.site"
    if parts[0] in ("__main__", "commands"):
        return "cli"
    return parts[0]


def rank(u: str) -> int:
    return RANKS.get(u, FOUNDATION)


def modules() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG.parent).with_suffix("")
        name = ".".join(rel.parts)
        out[name.removesuffix(".__init__")] = path
    return out


def imports(name: str, path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_pkg else 0)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in ALL]
            if len(subs) < len(node.names):
                found.append((node.lineno, mod))
            found += [(node.lineno, s) for s in subs]
    return [(ln, m) for ln, m in found if m == "envcheck" or m.startswith("envcheck.")]


ALL = modules()


def violations() -> list[str]:
    bad = []
    for name, path in sorted(ALL.items()):
        src = unit(name)
        for line, target in imports(name, path):
            dst = unit(target)
            if dst == src:
                continue
            if rank(dst) > rank(src) or (rank(dst) == rank(src) and rank(src) != FOUNDATION):
                bad.append(f"{path.relative_to(PKG.parent)}:{line}: {src} (layer {rank(src)}) imports "
                           f"{target} (layer {rank(dst)})")
    return bad


def test_imports_point_down_the_layers():
    """Rule: a module imports only its own package and lower layers (see the module docstring)."""
    bad = violations()
    assert not bad, "imports against the layer direction:\n" + "\n".join(bad)


def test_no_import_cycles_between_modules():
    graph = {name: {t for _, t in imports(name, path) if t in ALL and t != name} for name, path in ALL.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:  # Tarjan, iterative enough for ~100 modules
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    assert not cycles, f"import cycles: {cycles}"
