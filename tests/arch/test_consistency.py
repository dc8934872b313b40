"""Bind the check registry, the kb and the README/CI together (the 'every failure links to a page' test)."""
from __future__ import annotations

import re
from pathlib import Path

from envcheck.checks import RETIRED, all_checks, by_id
from envcheck.kb.entries import load_kb
from envcheck.model import SECTIONS

REPO = Path(__file__).resolve().parents[2]


def test_registry_codes_and_slugs_are_unique_and_well_formed():
    table = by_id()  # raises on a duplicate code or slug
    codes = [c.code for c in all_checks()]
    assert len(codes) == len(set(codes))
    retired = {r.code for r in RETIRED} | {r.slug for r in RETIRED}
    assert not retired & set(table), "a retired code or slug was reused"


def test_every_check_has_a_known_section_and_a_docstring():
    for c in all_checks():
        assert c.section in SECTIONS, (c.code, c.section)
        assert (c.fn.__doc__ or "").strip(), f"{c.code} needs a docstring (envcheck explain prints it)"


def test_check_families_match_code_hundreds():
    family = {"0": "System", "1": "Compatibility", "2": "Environment", "4": "Smoke tests", "5": "Distributed"}
    for c in all_checks():
        want = family.get(c.code[2])
        if want:
            assert c.section == want or c.code[2] in "0", (c.code, c.section)


def test_every_failable_check_has_a_kb_entry():
    kb = load_kb()
    linked = {code for e in kb.entries for code in e.checks}
    missing = [f"{c.code} {c.slug}" for c in all_checks() if c.failable and c.code not in linked]
    assert not missing, f"failable checks without a kb entry: {missing}"


def test_every_kb_check_reference_exists():
    known = set(by_id()) | {r.code for r in RETIRED}
    bad = [(e.id, code) for e in load_kb().entries for code in e.checks if code not in known]
    assert not bad, f"kb entries name unknown checks: {bad}"


def test_readme_test_command_is_what_ci_runs():
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", readme, re.S)
    cmds = [ln for b in blocks[:2] for ln in b.splitlines() if ln and not ln.startswith("#")]
    assert len(cmds) == 2, cmds
    assert cmds[1] in (REPO / ".ci" / "run").read_text()
    assert "envcheck" in cmds[0] and "pytest" in cmds[1]


def test_every_declared_check_is_in_its_family_tuple():
    """A @check function left out of its module's CHECKS tuple would never run: find every Check object
    in the envcheck.checks modules and demand it is registered."""
    import importlib
    import pkgutil

    import envcheck.checks as pkg
    from envcheck.checks import all_checks
    from envcheck.checks.registry import Check

    registered = {id(c) for c in all_checks()}
    orphans = []
    for info in pkgutil.iter_modules(pkg.__path__):
        mod = importlib.import_module(f"envcheck.checks.{info.name}")
        for name, obj in vars(mod).items():
            if isinstance(obj, Check) and id(obj) not in registered:
                orphans.append(f"{info.name}.{name} ({obj.code})")
            if isinstance(obj, tuple) and name != "CHECKS":
                orphans += [f"{info.name}.{name}[] ({c.code})" for c in obj if isinstance(c, Check)
                            and id(c) not in registered]
    assert not orphans, f"checks missing from a CHECKS tuple: {orphans}"
