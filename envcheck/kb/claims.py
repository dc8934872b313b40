"""The versions a pasted report states: "python： 3.11 / pytorch：2.1.0 / torch-npu：2.1.0", "CANN 8.0.RC1".

`stated_versions(text)` reads the software stack a user wrote into an issue-template report, a
`pip list`, a `pip install x==v` line, a CANN package file name or an `npu-smi` banner: one `Claim`
per component that `envcheck.plan.hypothetical_facts` takes (cann, driver, firmware, torch,
torch_npu, python, chip, mindspore, arch). Pure text parsing; the plan layer judges the claims
(envcheck/plan/stated.py).

Conservative by design: a version counts only when it is bound to its component on the same line
(a label, a separator, a package file name), never a path component (`site-packages/torch/...`),
a range (`torch>=2.1`), a CUDA version or a date. A component stated with two different versions
(before and after an upgrade, two packages pinning two torches) is kept with every version and
marked `ambiguous`; nothing is judged from it. Only the head of an input is read (`HEAD_BYTES`):
a report states its stack at the top, and a 500 MB log is not read twice.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

HEAD_BYTES = 64 * 1024  # what is read of each input: a pasted report, not a whole log
MAX_LINE = 2000  # longer lines are no report lines (minified JSON, a base64 blob): skipped

COMPONENTS = ("cann", "driver", "firmware", "torch", "torch_npu", "python", "chip", "mindspore", "arch")

# a character that glues a name to what precedes it: `libtorch`, `site-packages/torch`, `x.torch`
_NB = r"(?<![A-Za-z0-9_.\-/\\])"
# between a label and its value: `:`, `：`, `=`, `==`, whitespace, table pipes, a dash, "version", 版本
_SEP = r"(?:[ \t]*(?:[:：=|]|==|version|Version|VERSION|版本号?|\(|（)[ \t]*|[ \t]+){1,4}"
_VER = r"(?P<v>\d{1,2}(?:\.\d{1,4}){1,4}(?:\.?(?:post|rc|RC|a|b|alpha|beta|dev|B|T)\d*(?:\.(?:alpha|beta|B|dev)?\d+)?)?(?:\+[A-Za-z0-9_.]+)?)"  # noqa: E501
_END = r"(?![A-Za-z0-9_]|\.\d|-\d)"

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((comp, re.compile(rx, re.I)) for comp, rx in (
    # torch_npu: torch-npu, torch_npu, torchnpu, pytorch-npu; pip list columns, wheels, image tags (torch_npu2.5.1)
    ("torch_npu", _NB + r"(?:py)?torch[-_ ]?npu" + r"(?:" + _SEP + r"|-|)" + _VER + _END),
    # torch / pytorch (not torchvision, torch_npu, torch.npu, `Ascend Extension for PyTorch 6.0.rc1`)
    ("torch", _NB + r"(?<!for )(?<!Extension )(?:py)?torch(?![-_ ]?npu)" + r"(?:" + _SEP + r"|-|)" + _VER + _END),
    # python: "Python 3.10.12", "python： 3.11", "Python-3.8.10", `python3.11 -m`, .../lib/python3.10/site-packages
    ("python", _NB + r"python(?:" + _SEP + r"|-)" + r"(?P<v>[23]\.\d{1,2}(?:\.\d{1,2})?)" + _END),
    ("python", _NB + r"python(?P<v>3\.\d{1,2})(?=[ \t]|$)"),  # a command: `python3.11 -m pip` (not GE(1,python3.7))
    ("python", r"/python(?P<v>3\.\d{1,2})/(?:site|dist)-packages/"),
    ("python", r"\bcp3(?P<v>1\d|[6-9])-cp3\d"),  # a wheel's tag: cp310 -> 3.10 (handled in _normalise)
    # an image tag: 0.8.5rc1-torch_npu2.5.1-cann8.1.rc1-python3.10-oe2203lts
    ("torch_npu", r"(?<=[-:])torch[-_]?npu(?P<v>\d\.\d+\.\d+(?:\.post\d+)?)(?=-|\s|$)"),
    ("cann", r"(?<=[-:])cann(?P<v>\d\.\d+\.(?:rc\d+|\d+))(?=-|\s|$)"),
    ("python", r"(?<=[-:])(?:python|py)(?P<v>3\.\d{1,2})(?=-|\s|$)"),
    # CANN: "CANN 8.0.RC1", "cann版本 8.0.0", Ascend-cann-toolkit_8.0.RC2_linux-aarch64.run, cann-8.5.1/, cann8.1.rc1
    ("cann", _NB + r"(?:cann|cann[-_ ]toolkit|ascend[-_ ]toolkit)(?:" + _SEP + r"|[-_]|)" + _VER + _END),
    # a package name as a label: "Ascend-cann-toolkit 8.0.RC1", "Ascend-cann-nnae/nnrt/toolkit=5.0.4"
    ("cann", r"(?<![A-Za-z0-9_])Ascend[-_ ]cann[-_ ](?:toolkit|nnae|nnrt|nnal|kernels(?:-[A-Za-z0-9]+)?)"
             r"(?:/(?:toolkit|nnae|nnrt|nnal|kernels))*(?:" + _SEP + r")" + _VER + _END),
    ("cann", r"Ascend-cann-(?:toolkit|kernels-[A-Za-z0-9]+|nnal)_"
             r"(?P<v>\d{1,2}\.\d{1,2}\.(?:RC\d+|\d+)(?:\.(?:alpha|beta|B)?\d+)?)_"),
    # NPU driver: "driver 24.1.rc2", 驱动版本：23.0.3, Ascend-hdk-910b-npu-driver_24.1.rc2_linux-aarch64.run,
    # the npu-smi banner "npu-smi 23.0.6  Version: 23.0.6" (npu-smi reports the driver's version)
    ("driver", _NB + r"(?:npu[-_ ]?driver|driver|驱动(?:版本)?)(?:" + _SEP + r"|[-_]|)" + _VER + _END),
    ("driver", _NB + r"npu-smi[ \t]+(?P<v>\d{2}\.\d\.(?:\d+|rc\d+)(?:\.\d+)?)" + _END),
    ("firmware", _NB + r"(?:npu[-_ ]?firmware|firmware|固件(?:版本)?)(?:" + _SEP + r"|[-_]|)" + _VER + _END),
    ("mindspore", _NB + r"mindspore(?:" + _SEP + r"|-|)" + _VER + _END),
    # chips: Ascend910B3, 910B, 昇腾910A, 910ProB, 310P3, 910_93
    ("chip", r"(?<![A-Za-z0-9_.\-/])(?:Ascend[ -]?|昇腾)?(?P<v>910(?:B[1-4]?C?|A|ProA|ProB|PremiumA|_93|C)|310P[13]?)"
             r"(?![A-Za-z0-9_])"),
    ("arch", r"(?<![A-Za-z0-9_])(?P<v>aarch64|x86_64)(?![A-Za-z0-9_])"),
))

# the plausible major versions of each component: what else is a date, a port or another product's version
_MAJOR = {"torch": range(1, 4), "torch_npu": range(1, 4), "python": range(2, 4), "mindspore": range(0, 4),
          "cann": range(1, 10), "driver": range(20, 30), "firmware": range(1, 30)}
_CUDA = re.compile(r"(?:cuda|cudnn|nvcc|rocm)[ \t/]*$", re.I)  # "CUDA/CANN 11.8": the version is CUDA's
_RANGE_BEFORE = re.compile(r"[<>~!]=?\s*$")
# what another package requires (pip's "x 1.0 requires torch==2.1.0, but you have torch 2.3.1", "depends on")
_REQUIRES = re.compile(r"(?:\brequires|\bdepends on|\bhas requirement|依赖|需要)\s*$", re.I)


@dataclass(frozen=True)
class Claim:
    """A component's version as the text states it, with where: the first line that states it."""

    component: str
    version: str
    line: int
    """1-based line number in the text"""
    text: str
    """that line, stripped"""
    others: tuple[tuple[str, int, str], ...] = ()
    """other versions stated for the same component: (version, line, text); non-empty = ambiguous"""

    @property
    def ambiguous(self) -> bool:
        return bool(self.others)


def _normalise(comp: str, ver: str, rx: re.Pattern[str]) -> str | None:
    if rx.pattern.startswith(r"\bcp3"):
        return f"3.{ver}"
    if comp in ("chip", "arch"):
        return ver if comp == "chip" else ver.lower()
    try:
        major = int(ver.split(".")[0])
    except ValueError:
        return None
    if comp in _MAJOR and major not in _MAJOR[comp]:
        return None
    return ver


def _same(a: str, b: str) -> bool:
    """One version written twice, once less precisely: 2.1.0 and 2.1.0+cpu, 2.2 and 2.2.0, Python 3.11 and
    3.11.10, 8.0.RC1 and 8.0.rc1."""
    xs, ys = a.split("+")[0].lower().split("."), b.split("+")[0].lower().split(".")
    n = min(len(xs), len(ys))
    return xs[:n] == ys[:n]


def line_claims(line: str) -> list[tuple[str, str]]:
    """(component, version) pairs one line states, in order."""
    return [(comp, ver) for comp, ver, _ in _line_claims(line)]


def _line_claims(line: str) -> list[tuple[str, str, bool]]:
    """(component, version, a requirement: "x requires torch==2.1.0") one line states, in order."""
    if len(line) > MAX_LINE:
        return []
    out: list[tuple[str, str, bool]] = []
    taken: list[tuple[int, int]] = []
    for comp, rx in _RULES:
        for m in rx.finditer(line):
            if any(s < m.end() and m.start() < e for s, e in taken):
                continue  # torch_npu's span is not torch's
            if comp == "cann" and _CUDA.search(line[:m.start()]):
                continue
            if comp != "chip" and _RANGE_BEFORE.search(line[:m.start("v")]):
                continue
            ver = _normalise(comp, m.group("v"), rx)
            if ver is None:
                continue
            taken.append((m.start(), m.end()))
            out.append((comp, ver, bool(_REQUIRES.search(line[max(0, m.start() - 40):m.start()]))))
    return out


def stated_versions(text: str, limit: int = HEAD_BYTES) -> dict[str, Claim]:
    """component -> Claim for every component the first `limit` characters of `text` state.

    A version another package requires ("vllm 0.6.6 requires torch==2.5.1, but you have torch 2.2.0")
    is what that package wants, not what is installed: it counts only when the text states no other
    version of the component."""
    found: dict[str, list[tuple[str, int, str, bool]]] = {}
    for n, line in enumerate(text[:limit].splitlines(), 1):
        for comp, ver, req in _line_claims(line):
            seen = found.setdefault(comp, [])
            for i, (v, ln, tx, r) in enumerate(seen):
                if _same(v, ver):
                    if len(ver) > len(v) and "+" not in ver:  # 2.2 then 2.2.0: keep the fuller spelling
                        v = ver
                    seen[i] = (v, ln, tx, r and req)
                    break
            else:
                seen.append((ver, n, line.strip()[:300], req))
    out: dict[str, Claim] = {}
    for comp, seen in found.items():
        stated = [x for x in seen if not x[3]] or seen
        (v, ln, tx, _), rest = stated[0], tuple(x[:3] for x in stated[1:])
        out[comp] = Claim(comp, v, ln, tx, rest)
    return out


@dataclass(frozen=True)
class Verdict:
    """What a judge of the claims (envcheck/plan/stated.py) says about them, for diagnose to show:
    the kb entry the finding names, its message, and the claims (lines) it rests on."""

    entry: str
    message: str
    code: str
    """the check code (EC101 ...)"""
    strong: bool
    """a definite mismatch (a failing pairing); False: a warning or "newer than the matrix\""""
    claims: tuple[Claim, ...]
    corroborated: bool = False
    """strong only where the text agrees: a known defect of a stated release (EC108) explains a failure
    when the text's own evidence points at its entry's category, and is only a note otherwise"""
