"""Static checks on kb patterns: catastrophic backtracking and the Python-re / POSIX-ERE subset.

The backtracking detector walks the `sre_parse` tree and flags the two shapes that make a
backtracking engine exponential (or high-degree polynomial):

* nested quantifiers: a repeated group that itself contains a repeat, with at least one of the
  two unbounded, e.g. ``(a+)+``, ``(.*x)*``, ``([0-9]+,?){2,}``;
* overlapping alternation under a quantifier: ``(a|ab)*``, ``(.|x)+``, where two alternatives can
  start with the same character, so every character may be consumed by either branch.
"""
from __future__ import annotations

import sys
import warnings
from collections.abc import Iterable
from typing import Any

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    if sys.version_info >= (3, 11):  # the parser moved to re._parser; sre_parse is a deprecated alias
        import re._constants as C
        import re._parser as sre_parse
    else:  # pragma: no cover - Python < 3.11
        import sre_constants as C
        import sre_parse

MAXREPEAT = C.MAXREPEAT
_REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT) + ((C.POSSESSIVE_REPEAT,) if hasattr(C, "POSSESSIVE_REPEAT") else ())
# A universe of characters to test first-character overlap on: printable ASCII is enough to
# find overlaps in real-world error-line patterns; literals outside it are added per regex.
_ASCII = frozenset(chr(i) for i in range(9, 127))


def parse(regex: str) -> Any:
    return sre_parse.parse(regex)


def backtracking_problems(regex: str) -> list[str]:
    """Reasons this regex can backtrack catastrophically ([] when it looks safe)."""
    tree = parse(regex)
    universe = _ASCII | frozenset(chr(c) for c in _literals(tree) if c < 0x110000)
    out: list[str] = []
    _walk(tree, universe, out, outer=None)
    return sorted(set(out))


_NESTED = ("nested quantifiers: a repeat inside a repeated group whose characters can also start the "
           "group can backtrack catastrophically; bound one repeat or make them disjoint")


def _unbounded(hi: int) -> bool:
    return hi == MAXREPEAT


def _walk(seq: Iterable, universe: frozenset, out: list[str], outer: tuple | None) -> None:
    """outer: (max, first characters of the enclosing repeated group) or None."""
    for op, av in seq:
        if op in _REPEATS:
            lo, hi, body = av
            if (outer is not None and hi > 1 and (_unbounded(hi) or _unbounded(outer[0]))
                    and _chars(body, universe) & outer[1]):
                out.append(_NESTED)
            if hi > 1 and _has_overlapping_branch(body, universe):
                out.append("alternatives that can start with the same character under a quantifier "
                           "can backtrack catastrophically; make the alternatives disjoint")
            _walk(body, universe, out, outer=(hi, _first(body, universe)) if hi > 1 else outer)
        elif op == C.SUBPATTERN:
            _walk(av[-1], universe, out, outer)
        elif op == C.BRANCH:
            for alt in av[1]:
                _walk(alt, universe, out, outer)
        elif op in (C.ASSERT, C.ASSERT_NOT):
            _walk(av[1], universe, out, outer)


def _has_overlapping_branch(seq: Iterable, universe: frozenset) -> bool:
    for op, av in seq:
        if op == C.BRANCH:
            firsts = [_first(alt, universe) for alt in av[1]]
            for i, a in enumerate(firsts):
                if any(a & b for b in firsts[i + 1:]):
                    return True
        elif op == C.SUBPATTERN and _has_overlapping_branch(av[-1], universe):
            return True
    return False


def _first(seq: Iterable, universe: frozenset) -> frozenset:
    """Characters (from universe) that a match of seq can start with."""
    out: set[str] = set()
    for op, av in seq:
        first, nullable = _first_item(op, av, universe)
        out |= first
        if not nullable:
            break
    return frozenset(out)


def _first_item(op: Any, av: Any, universe: frozenset) -> tuple[frozenset, bool]:
    if op == C.LITERAL:
        return frozenset({chr(av)}), False
    if op == C.NOT_LITERAL:
        return universe - {chr(av)}, False
    if op == C.ANY:
        return universe - {"\n"}, False
    if op == C.IN:
        return frozenset(ch for ch in universe if _in_class(ch, av)), False
    if op in _REPEATS:
        lo, _hi, body = av
        return _first(body, universe), lo == 0 or _nullable(body)
    if op == C.SUBPATTERN:
        return _first(av[-1], universe), _nullable(av[-1])
    if op == C.BRANCH:
        alts = av[1]
        return frozenset().union(*(_first(a, universe) for a in alts)), any(_nullable(a) for a in alts)
    return frozenset(), True  # AT (anchors), assertions, GROUPREF: treat as zero-width


def _chars(seq: Iterable, universe: frozenset) -> frozenset:
    """Every character (from universe) that a match of seq can consume."""
    out: set[str] = set()
    for op, av in seq:
        if op in _REPEATS:
            out |= _chars(av[2], universe)
        elif op == C.SUBPATTERN:
            out |= _chars(av[-1], universe)
        elif op == C.BRANCH:
            for alt in av[1]:
                out |= _chars(alt, universe)
        elif op in (C.LITERAL, C.NOT_LITERAL, C.ANY, C.IN):
            out |= _first_item(op, av, universe)[0]
    return frozenset(out)


def _nullable(seq: Iterable) -> bool:
    for op, av in seq:
        if op in _REPEATS:
            if av[0] > 0 and not _nullable(av[2]):
                return False
        elif op == C.SUBPATTERN:
            if not _nullable(av[-1]):
                return False
        elif op == C.BRANCH:
            if not any(_nullable(a) for a in av[1]):
                return False
        elif op in (C.LITERAL, C.NOT_LITERAL, C.ANY, C.IN):
            return False
    return True


def _in_class(ch: str, items: list) -> bool:
    negate = False
    hit = False
    o = ord(ch)
    for op, av in items:
        if op == C.NEGATE:
            negate = True
        elif op == C.LITERAL:
            hit |= o == av
        elif op == C.NOT_LITERAL:
            hit |= o != av
        elif op == C.RANGE:
            hit |= av[0] <= o <= av[1]
        elif op == C.CATEGORY:
            hit |= _in_category(ch, av)
    return hit != negate


def _in_category(ch: str, cat: Any) -> bool:
    name = str(cat).upper()
    neg = "_NOT_" in name
    if "DIGIT" in name:
        r = ch.isdigit()
    elif "SPACE" in name:
        r = ch.isspace()
    elif "WORD" in name:
        r = ch.isalnum() or ch == "_"
    elif "LINEBREAK" in name:
        r = ch == "\n"
    else:
        r = False
    return r != neg


def _literals(seq: Iterable) -> set[int]:
    out: set[int] = set()
    for op, av in seq:
        if op in (C.LITERAL, C.NOT_LITERAL):
            out.add(av)
        elif op in _REPEATS:
            out |= _literals(av[2])
        elif op == C.SUBPATTERN:
            out |= _literals(av[-1])
        elif op == C.BRANCH:
            for alt in av[1]:
                out |= _literals(alt)
        elif op == C.IN:
            out |= {a for o, a in av if o == C.LITERAL}
    return out


def portability_problems(regex: str) -> list[str]:
    """Constructs outside the common subset of Python `re` and POSIX ERE (grep -E)."""
    out: set[str] = set()
    _portable(parse(regex), out)
    if _has_extension_group(regex):  # the parser inlines (?:...) and lifts (?i) out of the tree
        out.add(_HINTS["noncap"])
    return sorted(out)


def _has_extension_group(regex: str) -> bool:
    """True when the source has an unescaped `(?` outside a character class."""
    i, in_class = 0, False
    while i < len(regex):
        ch = regex[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            if regex[i + 1:i + 2] == "^":
                i += 1
            if regex[i + 1:i + 2] == "]":  # a leading ] is a literal
                i += 1
        elif ch == "(" and regex[i + 1:i + 2] == "?":
            return True
        i += 1
    return False


_HINTS = {
    "category": r"character-class escapes (\d \w \s \b ...) are not POSIX ERE: write [0-9], [A-Za-z0-9_], [ \t]",
    "noncap": "use (...) instead of (?:...) / inline flags: POSIX ERE has no (?...) groups",
    "lookaround": "lookahead / lookbehind are not POSIX ERE",
    "lazy": "lazy quantifiers (*? +? ?? {m,n}?) are not POSIX ERE",
    "backref": r"back-references (\1) are not POSIX ERE",
    "anchor": r"\A \Z \b \B are not POSIX ERE: use ^ and $",
}


def _portable(seq: Iterable, out: set[str]) -> None:
    for op, av in seq:
        if op in _REPEATS:
            if op != C.MAX_REPEAT:
                out.add(_HINTS["lazy"])
            _portable(av[2], out)
        elif op == C.SUBPATTERN:
            group, add_flags, del_flags, body = av
            if group is None or add_flags or del_flags:
                out.add(_HINTS["noncap"])
            _portable(body, out)
        elif op == C.BRANCH:
            for alt in av[1]:
                _portable(alt, out)
        elif op in (C.ASSERT, C.ASSERT_NOT):
            out.add(_HINTS["lookaround"])
        elif op == C.IN:
            if any(o == C.CATEGORY for o, _ in av):
                out.add(_HINTS["category"])
        elif op == C.CATEGORY:
            out.add(_HINTS["category"])
        elif op in (C.GROUPREF, getattr(C, "GROUPREF_EXISTS", None)):
            out.add(_HINTS["backref"])
        elif op == C.AT and av not in (C.AT_BEGINNING, C.AT_END):
            out.add(_HINTS["anchor"])


# ---------------------------------------------------------------------------- timed probe

# Runs in a child interpreter: a runaway regex cannot be interrupted in-process (the re engine
# holds the GIL), so the parent kills the child and blames the pattern it was working on.
_PROBE = r"""
import json, re, sys
for i, (rx, examples) in enumerate(json.load(sys.stdin)):
    print(i, flush=True)
    c = re.compile(rx)
    for ex in examples or ["a"]:
        chars = sorted(set(ex)) or ["a"]
        for s in [ch * 28 + "\x00" for ch in chars] + [ex[:p] + ex[p] * 28 + "\x00" for p in range(len(ex))]:
            c.search(s)
print("done", flush=True)
"""


def probe_slow(patterns: list[tuple[str, list[str]]], budget: float = 4.0, rounds: int = 5) -> set[int]:
    """Indexes of patterns that run for more than `budget` seconds on crafted near-miss inputs
    (each example with one character pumped 28 times, plus a mismatching end)."""
    import json
    import sys

    from envcheck import subproc

    slow: set[int] = set()
    todo = [i for i, (rx, _ex) in enumerate(patterns) if _compiles(rx)]
    for _ in range(rounds):
        if not todo:
            break
        payload = json.dumps([patterns[i] for i in todo])
        res = subproc.run([sys.executable, "-c", _PROBE], timeout=budget, input=payload)
        if not res.timed_out:
            break
        started = [ln for ln in res.stdout.split() if ln.isdigit()]
        if not started:
            break  # the interpreter itself did not start in time: say nothing
        culprit = int(started[-1])
        slow.add(todo[culprit])
        todo = todo[culprit + 1:]
    return slow


def _compiles(rx: str) -> bool:
    import re

    try:
        re.compile(rx)
    except re.error:
        return False
    return True
