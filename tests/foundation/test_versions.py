"""envcheck.versions: the CANN / HDK grammar and ordering, PEP 440 helpers and Python ranges."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envcheck.versions import (
    PyRange,
    VersionError,
    base_release,
    canonical_name,
    canonical_pip,
    lenient_key,
    parse_ascend,
    parse_pep440,
    python_minor,
    same_base,
)

# Every string in ascend-artifacts.md section 7 (CANN, CANN internal, driver / HDK, firmware).
REAL = """6.3.RC2 7.0.0 7.0.RC1.alpha003 7.0.0.beta1 8.0.RC1 8.0.RC2.alpha003 8.0.RC2.beta1 8.0.T6 8.0.T63
8.1.RC1 8.1.RC1.alpha001 8.5.0 8.5.0.alpha002 9.0.0 9.1.0-beta.3 9.2.0-beta.2 8.0.rc2.alpha003 8.2.rc1
7.7.T20.0.B210 8.2.0.0.201 8.2.RC1.B150 20.2.2.spc001 21.0.4 22.0.4 23.0.rc1.b050 23.0.rc1.b070 23.0.rc3
23.0.rc3.3 23.0.0 23.0.5 24.1.rc1 24.1.rc2.2 24.1.rc3.7 24.1.0.3 24.1.1 25.0.rc1.1 25.2.0 25.2.1 25.3.rc1
25.5.0 25.5.1 26.0.rc1 26.0.rc2 26.1.0.b083 6.4.12.1.241 7.1.0.7.220 7.1.0.11.220 7.7.0.1.231 24.1.rc2.b030
25.0.RC1.1 8.0.0.beta1""".split()


@pytest.mark.parametrize("text", REAL)
def test_every_real_string_parses(text):
    v = parse_ascend(text)
    assert v == parse_ascend(text.swapcase())  # case-insensitive
    assert parse_ascend(v.canonical()) == v  # the canonical spelling round-trips


@pytest.mark.parametrize("text", ["", "8", "8.0", "latest", "8.0.XX", "8.0.RC", "v8.0.RC1", "8.0.RC1 beta",
                                  "8.0.RC1.gamma1"])
def test_garbage_is_rejected(text):
    with pytest.raises(VersionError):
        parse_ascend(text)


def test_documented_order():
    ordered = ["7.0.RC1", "7.0.0.beta1", "7.0.0", "8.0.T6", "8.0.RC1", "8.0.RC2.alpha003", "8.0.RC2.beta1",
               "8.0.RC2", "8.0.RC3", "8.0.0.beta1", "8.0.0", "8.1.RC1", "8.5.0", "9.0.0-beta.1", "9.0.0",
               "9.2.0-beta.2", "9.2.0"]
    assert sorted(ordered, key=parse_ascend) == ordered
    drivers = ["23.0.rc3", "23.0.rc3.3", "23.0.0", "24.1.rc2", "24.1.rc2.b030", "24.1.rc2.2", "24.1.0",
               "24.1.0.3", "24.1.1", "25.0.rc1", "25.0.RC1.1", "26.1.0", "26.1.0.b083"]
    assert sorted(drivers, key=parse_ascend) == drivers


def test_equalities_and_views():
    assert parse_ascend("9.0.0-beta.1") == parse_ascend("9.0.0.beta1")  # the runtime's ConvertVersion
    assert parse_ascend("24.1.RC1") == "24.1.rc1"
    assert parse_ascend("24.1.rc2.2").base == parse_ascend("24.1.RC2")
    assert parse_ascend("24.1.rc2.2").release_key == parse_ascend("24.1.RC2").release_key
    assert parse_ascend("8.0.RC2.alpha003").is_prerelease and not parse_ascend("8.0.RC2").is_prerelease
    assert parse_ascend("8.0.RC2").line == (8, 0)
    assert parse_ascend("20.2.2.spc001") > parse_ascend("20.2.2")
    assert not (parse_ascend("8.0.RC1") == "garbage")


def test_pep440_helpers():
    assert base_release("2.1.0+cpu") == base_release("2.1.0.post6") == base_release("2.1.0rc1") == (2, 1, 0)
    assert same_base("2.13.0a0+git1234567", "2.13.0")
    assert not same_base("2.1.0", "2.2.0")
    assert parse_pep440("2.1.0.rc1") == parse_pep440("2.1.0rc1")
    assert canonical_pip("2.1.0.rc1") == "2.1.0rc1"
    assert parse_pep440("2.1.0.post3") < parse_pep440("2.1.0.post10")
    assert python_minor("3.10.12") == (3, 10)
    with pytest.raises(VersionError):
        parse_pep440("2.1.0-garbage!")


@pytest.mark.parametrize("rng,inside,outside", [
    ("3.8-3.10", ["3.8", "3.9.18", "3.10.12"], ["3.7.17", "3.11.0"]),
    ("3.7.5-3.10", ["3.7.5", "3.10.0"], ["3.7.4", "3.11"]),
    ("3.7-3.11.4", ["3.7.0", "3.11.4"], ["3.11.5", "3.12"]),
    ("3.10", ["3.10.1"], ["3.9", "3.11"]),
])
def test_python_ranges(rng, inside, outside):
    r = PyRange(rng)
    assert all(v in r for v in inside)
    assert not any(v in r for v in outside)


def test_python_range_errors():
    with pytest.raises(VersionError):
        PyRange("3.10-3.8")
    with pytest.raises(VersionError):
        PyRange("three")
    assert PyRange("3.8-3.10").minors() == [(3, 8), (3, 9), (3, 10)]


# ---- property-based ordering ----------------------------------------------------------------
def _case(s: str, flips: list[bool]) -> str:
    return "".join(c.swapcase() if f else c for c, f in zip(s, flips + [False] * len(s)))


@st.composite
def ascend_versions(draw):
    major, minor = draw(st.integers(0, 30)), draw(st.integers(0, 9))
    third = draw(st.sampled_from(["RC", "T", ""]))
    num = draw(st.integers(0, 99))
    text = f"{major}.{minor}.{third}{num}"
    if draw(st.booleans()):
        kind = draw(st.sampled_from(["alpha", "beta", "rc"]))
        n = draw(st.integers(0, 999))
        text += draw(st.sampled_from([f".{kind}{n:03d}", f".{kind}{n}", f"-{kind}.{n}"]))
    for _ in range(draw(st.integers(0, 2))):
        text += draw(st.sampled_from([".b{:03d}", ".spc{:03d}", ".{}"])).format(draw(st.integers(0, 300)))
    flips = draw(st.lists(st.booleans(), max_size=len(text)))
    return _case(text, flips)


@settings(max_examples=200, deadline=None)
@given(ascend_versions(), ascend_versions())
def test_total_order_and_antisymmetry(a, b):
    va, vb = parse_ascend(a), parse_ascend(b)
    assert sum([va < vb, va == vb, va > vb]) == 1
    if va <= vb and vb <= va:
        assert va == vb and hash(va) == hash(vb)


@settings(max_examples=150, deadline=None)
@given(ascend_versions(), ascend_versions(), ascend_versions())
def test_transitivity(a, b, c):
    x, y, z = sorted((parse_ascend(a), parse_ascend(b), parse_ascend(c)))
    assert x <= y <= z and x <= z


@settings(max_examples=150, deadline=None)
@given(ascend_versions())
def test_case_insensitive(a):
    assert parse_ascend(a) == parse_ascend(a.upper()) == parse_ascend(a.lower())


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 30), st.integers(0, 9), st.integers(0, 9), st.integers(0, 9), st.integers(1, 500))
def test_stage_order(major, minor, rc, patch, n):
    base = f"{major}.{minor}"
    t, rcv, final = (parse_ascend(f"{base}.T{n}"), parse_ascend(f"{base}.RC{rc}"), parse_ascend(f"{base}.{patch}"))
    assert t < rcv < final  # internal test drop < release candidate < final
    alpha, beta, pre_rc = (parse_ascend(f"{base}.{patch}-{k}.{n}") for k in ("alpha", "beta", "rc"))
    assert alpha < beta < pre_rc < final  # pre-releases sort below their base
    assert final < parse_ascend(f"{base}.{patch}.b{n}") < parse_ascend(f"{base}.{patch}.spc{n}") \
        < parse_ascend(f"{base}.{patch}.{n}")  # build / spc / hot-fix sort above it
    assert parse_ascend(f"{base}.RC{rc}.{n}") < parse_ascend(f"{base}.RC{rc + 1}")  # a hot-fix stays below the next RC
    assert final < parse_ascend(f"{major}.{minor + 1}.RC1")  # the next line's RC is newer than this final


# PEP 503 "Normalized Names": re.sub(r"[-_.]+", "-", name).lower() (https://peps.python.org/pep-0503/#normalized-names)
@pytest.mark.parametrize("raw, want", [
    ("torch_npu", "torch-npu"), ("Torch-NPU", "torch-npu"), ("torch.npu", "torch-npu"),
    ("vllm__ascend", "vllm-ascend"), ("a-_.-b", "a-b"), ("numpy", "numpy"), ("Friendly-Bard", "friendly-bard"),
])
def test_canonical_name_is_pep503(raw, want):
    assert canonical_name(raw) == want


def test_lenient_key_follows_the_ascend_ordering():
    order = ["8.0.RC2.alpha003", "8.0.RC2", "8.0.0", "cann-8.1.RC1", "9.2.0-beta.2", "9.2.0", "CANN-9.2.0.1"]
    assert sorted(reversed(order), key=lenient_key) == order
    assert lenient_key("8.0.RC2 beta") == lenient_key("8.0.RC2")  # only the head parses: the head decides


def test_lenient_key_sorts_non_versions_below_and_keeps_their_order():
    names = ["driver", "8.0.RC1", "latest", "", "cann-", "9" * 40 + ".0.0", "8.5.0"]
    assert sorted(names, key=lenient_key, reverse=True) == ["8.5.0", "8.0.RC1", "driver", "latest", "", "cann-",
                                                            "9" * 40 + ".0.0"]
    assert lenient_key(None) == lenient_key("garbage") < lenient_key("0.0.T1")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_lenient_key_never_raises_and_agrees_with_parse_ascend(text):
    key = lenient_key(text)
    try:
        v = parse_ascend(text.strip())
    except VersionError:
        return
    assert key == (1, v.key)
