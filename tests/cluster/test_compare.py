"""`envcheck compare`: drift across recorded `envcheck --json` reports, the odd node(s) named."""
from __future__ import annotations

import json

import jsonschema
import pytest
from conftest import DATA

from envcheck.cluster import drift
from envcheck.model import Facts
from envcheck.resources import schema_path

REPORTS = DATA / "reports"
A, B, C, D = (REPORTS / f"node-{x}.json" for x in "abcd")


def fails(doc):
    return {f["data"]["field"]: f for f in doc["findings"] if f["status"] == "fail"}


def test_identical_nodes_agree(cli):
    r = cli("compare", "--json", A, B)
    assert r.rc == 0, r.err
    [f] = r.json()["findings"]
    assert f["code"] == "EC504" and f["status"] == "ok"
    assert f["title"].startswith("2 node(s) agree on CANN, driver")


def test_odd_node_out_is_named(cli):
    r = cli("compare", "--json", A, B, C)
    assert r.rc == 1
    jsonschema.validate(r.json(), json.loads(schema_path("report").read_text()))
    found = fails(r.json())
    assert set(found) == {"CANN"}
    assert found["CANN"]["data"]["odd"] == ["node-c"]
    assert found["CANN"]["title"] == "CANN differs across nodes: node-c has 8.5.0 (majority: 8.2.RC1)"


def test_every_drifting_field_names_its_minority(cli):
    r = cli("compare", "--json", A, B, C, D)
    found = fails(r.json())
    assert found["CANN"]["data"]["odd"] == ["node-c", "node-d"]
    assert found["driver"]["data"]["odd"] == ["node-d"]
    assert found["firmware"]["data"]["odd"] == ["node-d"]
    assert "torch" not in found and "Python" not in found
    verdicts = [f for f in r.json()["findings"] if f["data"].get("field", "").startswith("matrix ")]
    assert verdicts and all(f["status"] == "warn" for f in verdicts)


def test_text_output_prints_the_table_with_odd_cells_marked(cli):
    r = cli("compare", A, B, C)
    head, cann = r.out.splitlines()[0], next(x for x in r.out.splitlines() if x.startswith("CANN"))
    assert head.split() == ["field", "node-a", "node-b", "node-c"]
    assert cann.split() == ["CANN", "8.2.RC1", "8.2.RC1", "8.5.0", "*"]
    assert "node-c has 8.5.0" in r.out


def test_same_hostname_is_told_apart_by_file(cli, tmp_path):
    doc = json.loads(C.read_text())
    doc["facts"]["system"]["hostname"] = "node-a"
    other = tmp_path / "again.json"
    other.write_text(json.dumps(doc))
    r = cli("compare", "--json", A, other)
    assert fails(r.json())["CANN"]["data"]["odd"] == ["node-a (again.json)"]


@pytest.mark.parametrize("content,why", [
    ("not json at all", "not JSON"),
    ('{"foo": 1}', "not an envcheck report"),
    ("[1, 2]", "not an envcheck report"),
    ('{"schema_version": 1, "facts": {}}', "not an envcheck report"),
])
def test_bad_files_are_usage_errors(cli, tmp_path, content, why):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    r = cli("compare", A, bad)
    assert r.rc == 2 and why in r.err and len(r.err.splitlines()) == 1
    assert r.out == ""


def test_missing_file_and_single_report(cli, tmp_path):
    r = cli("compare", A, tmp_path / "nope.json")
    assert r.rc == 2 and "no such file" in r.err
    r = cli("compare", A)
    assert r.rc == 2 and "two or more" in r.err


def test_tie_goes_to_the_first_node():
    nodes = [drift.Node("n0", Facts(python={"version": "3.10.1"})),
             drift.Node("n1", Facts(python={"version": "3.11.2"}))]
    row = next(r for r in drift.table(nodes) if r.field == "Python")
    assert row.majority == "3.10.1" and row.odd == ["n1"]
