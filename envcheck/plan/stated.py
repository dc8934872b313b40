"""Judge the versions a pasted report states, for `envcheck diagnose`.

`envcheck.kb.claims.stated_versions` reads the stack a report states ("torch 2.12.0", "torch_npu
2.8.0.post1", "CANN 8.0.RC1"); `judge_claims` builds hypothetical facts from the stated components
only (`plan.hypothetical_facts`) and runs the compatibility checks (EC1xx, `plan.judge`) over them.
A failing pairing (EC101 torch/torch_npu, EC102 torch_npu/CANN, EC103 Python, EC104-107), or a MindSpore
the sources pair with another CANN (EC107 only warns, as MindSpore does), is a strong verdict; a release with
a known defect (EC108) is strong where the text's own evidence shares its entry's category; a warning
(a pre-release, "newer than the matrix", a pairing the sources only half state) a weak one. Findings that
only say a version is unknown to the matrix or cannot be judged give nothing, and so does a stack the matrix
judges fine. Each verdict names the kb entries its finding links to, with the
lines the versions came from; `envcheck.kb.diagnose` shows them with confidence `versions`.

`diagnose_report(paths, **kw)` is what `envcheck diagnose` runs: the kb diagnosis with this judge.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from envcheck.kb.claims import COMPONENTS, Claim, Verdict
from envcheck.kb.diagnose import DiagnoseResult, diagnose
from envcheck.matrix import Matrix
from envcheck.model import Finding, Status
from envcheck.plan import hypothetical_facts, judge

# the components a finding's data names, as claims' components
_DATA_KEYS = {"torch": "torch", "torch_npu": "torch_npu", "cann": "cann", "python": "python", "driver": "driver",
              "firmware": "firmware", "chip": "chip", "mindspore": "mindspore"}
# warnings that say only that the matrix cannot judge the stated versions: no evidence of anything
_UNKNOWN = re.compile(r"cannot (?:judge|confirm)|not a chip family|not in the matrix|no source pairs|in no table|"
                      r"sources disagree|lists no|has no HDK statement|too thin|does not parse", re.I)


def judge_claims(claims: Mapping[str, Claim], matrix: Matrix | None = None) -> list[Verdict]:
    """Verdicts on the stated stack: one per failing or warning EC1xx finding that links a kb entry and
    rests on stated versions. An ambiguous claim (two versions stated) is left out of the facts."""
    stated = {c: cl for c, cl in claims.items() if not cl.ambiguous and c in COMPONENTS}
    if not {"torch", "torch_npu", "cann", "python", "driver", "firmware", "chip", "mindspore"} & set(stated):
        return []
    from envcheck.checks.runner import link

    def v(c: str) -> str | None:
        return stated[c].version if c in stated else None

    facts = hypothetical_facts(cann=v("cann"), driver=v("driver"), firmware=v("firmware"), torch=v("torch"),
                               torch_npu=v("torch_npu"), python=v("python"), chip=v("chip"),
                               mindspore=v("mindspore"), arch=v("arch"), source="stated")
    out: list[Verdict] = []
    for f in judge(facts, matrix):
        if f.status not in (Status.FAIL, Status.WARN) or _UNKNOWN.search(f.title):
            continue
        used = _components(f, stated)
        if not used:
            continue
        f = link(f)
        # strong: a failing pairing, or a pairing the sources contradict that the check only warns about
        # (MindSpore's own start-up check only warns, so EC107 does: data["mismatch"])
        strong = (f.status is Status.FAIL and f.failure == f.slug) or bool((f.data or {}).get("mismatch"))
        # a release with a known defect (EC108) is a fact, but explains this failure only when the text's
        # evidence points at the defect's category: diagnose decides (Verdict.corroborated)
        known_defect = bool((f.data or {}).get("advisory"))
        for entry in f.kb[:1]:
            out.append(Verdict(entry=entry, message=_message(f, used), code=f.code, strong=strong, claims=used,
                               corroborated=known_defect))
    return out


def _components(f: Finding, stated: Mapping[str, Claim]) -> tuple[Claim, ...]:
    data: Mapping[str, Any] = f.data or {}
    return tuple(stated[c] for key, c in _DATA_KEYS.items() if key in data and c in stated)


def _message(f: Finding, used: tuple[Claim, ...]) -> str:
    names = {"torch_npu": "torch_npu", "cann": "CANN", "python": "Python", "mindspore": "MindSpore"}
    stated = " with ".join(f"{names.get(c.component, c.component)} {c.version}" for c in used)
    return f"{stated}: {f.title}" if len(used) > 1 else f.title


def diagnose_report(paths: list[str], **kw: Any) -> DiagnoseResult:
    """`envcheck diagnose`: the kb diagnosis of `paths`, with the versions they state judged against the matrix."""
    return diagnose(paths, judge_versions=judge_claims, **kw)
