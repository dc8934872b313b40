"""matrix.yaml and envcheck.matrix: the data is faithful to the research, every row cites a source,
and every row round-trips through the checks with the verdict the issue defines."""
from __future__ import annotations

import re

import pytest
from conftest import DATA, RESEARCH

from envcheck.matrix import MatrixError, load, parse_text
from envcheck.matrix.lint import lint_file
from envcheck.model import Status
from envcheck.plan import hypothetical_facts, judge
from envcheck.resources import matrix_path
from envcheck.versions import parse_ascend, parse_pep440

MX = load()


def test_shipped_matrix_lints_clean():
    problems, mx = lint_file(str(matrix_path()))
    assert problems == [] and mx is not None


def test_every_row_cites_a_source_with_a_url():
    for rel in MX.cann:
        assert rel.sources, rel.version
        for p in rel.pairings:
            assert p.sources, (rel.version, p.torch_npu)
        for m in rel.mindspore:
            assert m.sources
        if rel.hdk:
            assert rel.hdk.sources
    refs = {s for r in MX.cann for s in r.sources + tuple(x for p in r.pairings for x in p.sources)}
    for ref in refs:
        assert MX.url(ref).startswith(("https://", "http://")), ref


def _cells(table_heading: str) -> list[str]:
    text = (RESEARCH / "compat-facts.md").read_text(encoding="utf-8")
    block = text.split(table_heading, 1)[1].split("\n### ", 1)[0]
    return [line.split("|")[1].strip() for line in block.splitlines()
            if line.startswith("| ") and not line.startswith("| cann") and not line.startswith("|---")]


@pytest.mark.skipif(not (RESEARCH / "compat-facts.md").exists(), reason="shared research not present")
def test_every_cann_release_of_the_research_is_in_the_matrix():
    releases = set(_cells("### A. torch_npu")) | set(_cells("### B. CANN"))
    text = (RESEARCH / "compat-facts.md").read_text(encoding="utf-8")
    older = re.findall(r"^- (\d\.\d\.(?:RC)?\d)[ :(]", text, re.M) + re.findall(r"\. (5\.\d\.(?:RC)?\d): ", text)
    releases |= set(older)
    assert len(releases) >= 25
    missing = [r for r in releases if MX.release(r) is None]
    assert missing == []


@pytest.mark.skipif(not (RESEARCH / "torch_npu_pypi_wheels.tsv").exists(), reason="shared research not present")
def test_wheel_ranges_match_pypi_listing():
    rows = [line.split("\t") for line in (RESEARCH / "torch_npu_pypi_wheels.tsv").read_text().splitlines()
            if line and not line.startswith(("#", "version"))]
    assert len(rows) > 100
    for version, arch, pythons, _ in rows:
        rng = MX.wheel_python(version, arch)
        tags = pythons.split(",")
        assert all(t in rng for t in tags), (version, arch)
        minor_after = f"3.{int(tags[-1].split('.')[1]) + 1}"
        minor_before = f"3.{int(tags[0].split('.')[1]) - 1}"
        assert minor_after not in rng and minor_before not in rng, (version, arch)


def _python_for(p, mx=MX):
    """A Python minor inside both the table range and the wheel range of this build."""
    ranges = ([p.python] if p.python else []) + mx.wheel_ranges(p.torch_npu)
    if not ranges:
        return None
    for minor in sorted({m for r in ranges for m in r.minors()}, reverse=True):
        text = f"3.{minor[1]}.{5 if minor == (3, 7) else 0}"
        if all(text in r for r in ranges):
            return text
    raise AssertionError(f"no Python fits every range of {p.torch_npu}")


def _chip_for(rel):
    return "910B4" if rel.parsed >= parse_ascend("6.3.RC2") else "910A"


def _driver_for(rel):
    specs = (rel.hdk.paired + rel.hdk.matched) if rel.hdk else ()
    exact = [s.text for s in specs if ".." not in s.text and not s.text.upper().endswith(".X")]
    return exact[0] if exact else None


ROWS = [(r, p) for r in MX.cann for p in r.pairings]


@pytest.mark.parametrize("rel,p", ROWS, ids=[f"{r.version}-{p.torch_npu}" for r, p in ROWS])
def test_every_row_round_trips(rel, p):
    """Each row judged as an environment is ok; a row that carries a conflict warns and names both sides."""
    facts = hypothetical_facts(cann=rel.version, torch=p.torch, torch_npu=p.torch_npu, python=_python_for(p),
                               driver=_driver_for(rel), chip=_chip_for(rel), arch="aarch64")
    found = judge(facts, MX)
    by = {}
    for f in found:
        by.setdefault(f.code, []).append(f)
    disputed = [MX.conflicts[c] for c in p.conflicts if MX.conflicts[c].applies_to == "pairing"]
    for f in found:
        assert f.status != Status.FAIL and f.status != Status.ERROR, (f.code, f.title)
        if f.code == "EC102" and disputed:
            assert f.status == Status.WARN, f.title
            text = f.detail + " ".join(e.source for e in f.evidence)
            for c in disputed:
                for side in c.sides:
                    assert any(src.split()[0] in text for src in side[1]), (c.id, side)
        elif f.status == Status.WARN and f.code == "EC108":
            # a tabled release with a known defect (advisories): only that release, and naming the fixed build
            (adv,) = MX.advisories_for("torch_npu", p.torch_npu)
            assert adv.fixed_in in f.title and f.kb == (adv.kb,), f.title
        elif f.status == Status.WARN:
            # the only other warnings allowed: a tabled Python with no wheel or vice versa (d4)
            assert f.code == "EC103" and any(MX.conflicts[c].applies_to == "python" for c in p.conflicts), f.title
    assert by["EC101"][0].status == Status.OK
    if not disputed:
        assert by["EC102"][0].status == Status.OK


def test_hdk_specs_and_lookups():
    rel = MX.release("9.1.0")
    assert rel.hdk.classify(parse_ascend("26.0.rc1")) == "paired"
    assert rel.hdk.classify(parse_ascend("25.0.rc1.1")) == "unsupported"
    assert rel.hdk.classify(parse_ascend("25.5.2")) == "compatible"
    assert rel.hdk.classify(parse_ascend("24.1.0")) == "outside"
    assert MX.release("8.0.RC2").hdk.classify(parse_ascend("24.1.rc2.2")) == "paired"  # hot-fix drop
    assert MX.release("8.5.0").hdk.classify(parse_ascend("25.0.rc1")) == "matched"
    assert MX.release("8.0.rc1") is MX.release("8.0.RC1")
    assert [p.cann for p in MX.builds("2.1.0.post6+git1a2b3c4")] == ["8.0.RC2"]
    assert MX.chip_family("Ascend910").family == "a3" and MX.chip_family("910").family == "a1"
    assert MX.chip_family("Ascend 910B3").family == "a2" and MX.chip_family("Ascend910_9392").family == "a3"
    assert MX.chip_family("310P3").family == "i2" and MX.chip_family("Ascend950DT").family == "a5"
    assert MX.chip_family("GeForce") is None


def test_conflicts_d1_to_d13_are_data_with_two_sides():
    assert sorted(MX.conflicts, key=lambda c: int(c[1:])) == [f"d{i}" for i in range(1, 14)]
    for c in MX.conflicts.values():
        assert len(c.sides) >= 2 and all(srcs for _, srcs in c.sides)
        assert c.id in c.describe()


def test_rows_and_markdown_for_the_site():
    rows = MX.rows()
    assert {"cann", "torch", "torch_npu", "python", "hdk", "sources"} <= set(rows[0])
    assert len(rows) == len(ROWS) + sum(1 for r in MX.cann if not r.pairings)
    md = MX.to_markdown()
    assert md.startswith("| CANN |") and "[PT-COMPAT](https://github.com/Ascend/pytorch/" in md


def test_load_errors_carry_file_and_line(tmp_path):
    bad = (DATA / "matrix" / "minimal.yaml").read_text().replace('python: "3.8-3.10", sources: [SRC-A]}',
                                                                 'python: "3.8-3.10", sources: [SRC-Q]}', 1)
    with pytest.raises(MatrixError) as exc:
        parse_text(bad, "site.yaml")
    assert str(exc.value) == "site.yaml:19: unknown source 'SRC-Q' (not in `sources`)"
    with pytest.raises(MatrixError, match=r"^x\.yaml:3: not valid YAML"):
        parse_text("a: [\nb: c\n", "x.yaml")
    with pytest.raises(MatrixError, match="quote versions"):
        parse_text((DATA / "matrix" / "float-version.yaml").read_text(), "f.yaml")


def test_load_caches_and_reports_unreadable(tmp_path):
    assert load() is MX
    from envcheck.errors import UsageError

    with pytest.raises(UsageError, match="cannot read matrix"):
        load(tmp_path / "nope.yaml")


def test_newest_versions():
    assert MX.newest_cann() == parse_ascend("9.2.0")
    assert MX.newest_torch_npu() == parse_pep440("2.14.0")
