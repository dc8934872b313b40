"""The error-code dictionary (error_codes.yaml) and a line-by-line code extractor for diagnose / explain.

Families: ``acl`` (ACL_ERROR_*, 1xxxxx-5xxxxx from acl_base_rt.h), ``aclnn`` (ACLNN_ERR_*, the aclnn operator APIs:
161xxx/361xxx/561xxx), ``rt`` (ACL_ERROR_RT_*, 107xxx/207xxx/507xxx), ``ge`` (ACL_ERROR_GE_*, 145xxx/245xxx/545xxx),
``hccl`` (HcclResult 1-24), ``torch_npu`` (ERRxxyyy), ``cann`` (E<module><4 digits> messages), ``dcmi`` (npu-smi /
DCMI -80xx), ``npu_fault`` (NPU health-management fault / event ids such as ``0x80E18400``, canonical form ``0x`` + 8
upper-case hex digits) and ``mindie`` (MindIE codes such as ``MIE05E01000A``: ``MIE`` + 2-digit component + level
letter + 6 upper-case hex digits).

`extract_codes` / `scan_line` find codes in the spellings logs use (``error code is 507001``, ``ret[9]`` in an HCCL
line, ``EI0006:``, ``ERR02200 DIST …``, ``errorCode = 507033``, ``错误码：507033``, ``ret is -8020``,
``[event_id:0x80e18400]``, npu-smi's ``Error Code : 8C03A000 8C084E00``, ``[MIE05E020000]``, ``error code:
MIE05E01000A`` …). A hex value is a code only when the
dictionary lists it: memory addresses and other hex values never become codes. Every regex is a single pass
with bounded repeats (no nested quantifiers), so a line costs time linear in its length and a GB-sized log
can be fed one line at a time through `iter_codes`.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

CODES_PATH = Path(__file__).resolve().with_name("error_codes.yaml")

FAMILIES: tuple[str, ...] = ("acl", "aclnn", "rt", "ge", "hccl", "torch_npu", "cann", "dcmi", "npu_fault", "mindie")
NUMERIC_FAMILIES: tuple[str, ...] = ("rt", "acl", "ge", "aclnn")  # 6-digit codes; lookup order
_REQUIRED = ("name", "meaning", "category")


class CodeBookError(ValueError):
    """error_codes.yaml cannot be read or is malformed (one-line message)."""


@dataclass(frozen=True)
class Family:
    id: str
    title: str
    source: str


@dataclass(frozen=True)
class Code:
    """One dictionary entry. `source` is the code's own source or, if it has none, its family's."""

    code: str
    family: str
    name: str
    meaning: str
    category: str
    entries: tuple[str, ...] = ()
    source: str = ""
    own_source: bool = False
    generic: bool = False  # a wrapper / inner-error code: the first specific error near it is the cause


@dataclass(frozen=True)
class CodeHit:
    """A code found in a log line. `line` is 1-based; `start`/`end` index the code inside that line."""

    code: str
    family: str
    line: int
    start: int
    end: int
    info: Code | None = None

    @property
    def known(self) -> bool:
        return self.info is not None


@dataclass(frozen=True)
class CodeBook:
    families: Mapping[str, Family]
    codes: tuple[Code, ...]
    _index: Mapping[tuple[str, str], Code] = field(repr=False, compare=False, default_factory=dict)
    _names: Mapping[str, Code] = field(repr=False, compare=False, default_factory=dict)

    def __len__(self) -> int:
        return len(self.codes)

    def __iter__(self) -> Iterator[Code]:
        return iter(self.codes)

    def __contains__(self, code: object) -> bool:
        return isinstance(code, str) and self.get(code) is not None

    def in_family(self, family: str) -> tuple[Code, ...]:
        return tuple(c for c in self.codes if c.family == family)

    def get(self, code: str, family: str | None = None) -> Code | None:
        """The entry for `code` (E-codes and names case-insensitive), or None.

        Without `family`, a bare small number (an HcclResult such as ``9``) is ambiguous and gives None; pass
        ``family="hccl"`` or write ``hccl:9``. Macro names (``ACL_ERROR_RT_TS_ERROR``, ``HCCL_E_TIMEOUT``,
        ``DCMI_ERR_CODE_RESOURCE_OCCUPIED``) are accepted too.
        """
        hits = self._lookup(code, family, ambiguous=False)
        return hits[0] if hits else None

    def candidates(self, code: str) -> tuple[Code, ...]:
        """Every entry `code` may mean (for `explain`): as `get`, plus HcclResult for a bare small number."""
        return self._lookup(code, None, ambiguous=True)

    def _lookup(self, code: str, family: str | None, ambiguous: bool) -> tuple[Code, ...]:
        s = str(code).strip()
        m = re.fullmatch(r"(?i)(hccl|hcclresult)\s*[:= ]\s*(\d{1,3})", s)
        if m:
            family, s = "hccl", m.group(2)
        key = _normalise(s)
        if family is not None:
            hit = self._index.get((family, key))
            return (hit,) if hit else ()
        by_name = self._names.get(key)
        if by_name is not None:
            return (by_name,)
        fams: tuple[str, ...]
        if re.fullmatch(r"E[0-9A-Z]\d{4}", key):
            fams = ("cann",)
        elif re.fullmatch(r"ERR\d{5}", key):
            fams = ("torch_npu",)
        elif re.fullmatch(r"-\d+", key):
            fams = ("dcmi",)
        elif _MIE.fullmatch(key):
            fams = ("mindie",)
        elif key.startswith("0x"):
            fams = ("npu_fault",)
        elif re.fullmatch(r"[0-9A-F]{8}", key):  # npu-smi prints fault codes without 0x: 80E18400
            key, fams = "0x" + key, ("npu_fault",)
        elif re.fullmatch(r"\d{6}", key):
            fams = NUMERIC_FAMILIES
        elif re.fullmatch(r"\d{1,2}", key) and ambiguous:
            fams = ("hccl",)
        else:
            fams = ()
        return tuple(c for c in (self._index.get((f, key)) for f in fams) if c is not None)


def _normalise(code: str) -> str:
    s = code.strip().upper()
    if re.fullmatch(r"0X[0-9A-F]{8}", s):  # an NPU fault / event id: 0x80e18400 -> 0x80E18400
        return "0x" + s[2:]
    if re.fullmatch(r"[+-]?\d+", s):
        n = int(s)
        return str(n)
    return s


def _str_tuple(v: Any, where: str) -> tuple[str, ...]:
    if v is None:
        return ()
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise CodeBookError(f"{where}: 'entries' must be a list of kb entry ids")
    return tuple(v)


def parse_codes(data: Any, origin: str = "error_codes.yaml") -> CodeBook:
    """Build a CodeBook from the parsed YAML; CodeBookError on any structural problem."""
    if not isinstance(data, dict) or not isinstance(data.get("families"), dict):
        raise CodeBookError(f"{origin}: expected a mapping with a 'families' mapping")
    families: dict[str, Family] = {}
    codes: list[Code] = []
    index: dict[tuple[str, str], Code] = {}
    for fid, fam in data["families"].items():
        where = f"{origin}: family {fid!r}"
        if fid not in FAMILIES:
            raise CodeBookError(f"{where}: unknown family (expected one of {', '.join(FAMILIES)})")
        if not isinstance(fam, dict) or not isinstance(fam.get("codes"), dict):
            raise CodeBookError(f"{where}: needs 'title', 'source' and a 'codes' mapping")
        fsource = str(fam.get("source") or "").strip()
        if not fsource:
            raise CodeBookError(f"{where}: has no 'source'")
        families[fid] = Family(fid, str(fam.get("title") or fid), fsource)
        for raw, spec in fam["codes"].items():
            cwhere = f"{where}, code {raw!r}"
            if not isinstance(spec, dict):
                raise CodeBookError(f"{cwhere}: expected a mapping")
            missing = [k for k in _REQUIRED if not str(spec.get(k) or "").strip()]
            if missing:
                raise CodeBookError(f"{cwhere}: missing {', '.join(missing)}")
            own = str(spec.get("source") or "").strip()
            key = _normalise(str(raw))
            c = Code(
                code=key,
                family=fid,
                name=str(spec["name"]),
                meaning=str(spec["meaning"]),
                category=str(spec["category"]),
                entries=_str_tuple(spec.get("entries"), cwhere),
                source=own or fsource,
                own_source=bool(own),
                generic=bool(spec.get("generic", False)),
            )
            if (fid, key) in index:
                raise CodeBookError(f"{cwhere}: listed twice")
            index[(fid, key)] = c
            codes.append(c)
    names: dict[str, Code] = {}
    dup: set[str] = set()
    for c in codes:
        n = c.name.upper()
        if re.fullmatch(r"[A-Z][A-Z0-9_]{3,}", n) and "_" in n:
            if n in names:
                dup.add(n)
            names[n] = c
    for n in dup:
        del names[n]
    return CodeBook(MappingProxyType(families), tuple(codes), MappingProxyType(index), MappingProxyType(names))


@functools.lru_cache(maxsize=4)
def _load(path: str) -> CodeBook:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CodeBookError(f"{path}: cannot read: {exc}") from None
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml: ~5x faster
    except yaml.YAMLError as exc:
        raise CodeBookError(f"{path}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    return parse_codes(data, str(path))


def load_codes(path: str | Path | None = None) -> CodeBook:
    """The shipped dictionary (cached); `path` only for tests."""
    return _load(str(path or CODES_PATH))


# --- extraction ---------------------------------------------------------------------------------------------

# Two single-pass regexes with bounded repeats. _E starts with a literal "E", so re skips to candidates quickly;
# its word boundaries are checked in Python. _KEY runs on the lower-cased line (ASCII lines) and only when one of
# its keywords occurs at all: a numeric code after "error code is", "ret[", "errno", "错误码：" ...
_E = re.compile(r"E(?:RR[0-9]{5}|[0-9A-Z][0-9]{4})")
_KEY_SRC = (
    r"(?<![a-z_])(error[ _]?code|err_?code|ret(?:code)?|return code|runtime result|result|errno|错误码|failed|failure)"
    r"([ \t]{0,4}(?:is(?=[ \t])|[=:：\[(]|为|是)?[ \t]{0,4})"
    r"([-+]?[0-9]{1,10})(?![0-9a-z_]|\.[0-9])"
)
_KEY = re.compile(_KEY_SRC)
_KEY_ANYCASE = re.compile(_KEY_SRC.replace("a-z", "A-Za-z"), re.I)  # for non-ASCII lines (lower() may shift indices)
_KEY_WORDS = ("code", "ret", "errno", "result", "错误码", "failed", "failure")
_DIGIT = re.compile(r"[0-9]")
_STRONG_E_CONTEXT = re.compile(r"(?i)err_?code|error[ _]?code|module_name|错误码")
# only known codes count after these; after "failed" (`Call aclrtSetDevice(device->id) failed : 507033`) and
# "failure" (ONNX Runtime's CANN execution provider, onnxruntime/core/providers/cann/cann_call.cc: `CANN failure
# 507013: ... expr=aclrtSynchronizeStream(...)`) only a known six-digit ACL/runtime code
_KNOWN_SIX_ONLY = frozenset({"failed", "failure"})
_WEAK_KEYS = frozenset({"result", "runtime result", "return code"}) | _KNOWN_SIX_ONLY
_NEEDS_PUNCT = frozenset({"ret", "retcode", "result", "runtime result", "failed"})  # a bare space is not enough
HCCL_MAX = 30  # HcclResult values are small (1..24 today); larger numbers near 'hccl' are something else


def _word(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch == "_")


def _whole_word(line: str, start: int, end: int) -> bool:
    """line[start:end] is not part of a longer word (nor of a longer hex number)."""
    return not ((start and _word(line[start - 1])) or (end < len(line) and _word(line[end])))


LABEL_WINDOW = 24  # characters before a code in which an error-code label makes it one


def _labelled(line: str, start: int) -> bool:
    """An error-code label ('errCode', 'error code', 'module_name', '错误码') stands just before `start`."""
    return _STRONG_E_CONTEXT.search(line, max(0, start - LABEL_WINDOW), start) is not None


def _strong_e(line: str, start: int, end: int) -> bool:
    """An unknown E-code counts only where logs print codes: 'EZ1001:', '[EB0000]', 'EE9999  Task', 'errCode'."""
    nxt = line[end:end + 2]
    if nxt[:1] in (":", "：") or nxt == "  ":
        return True
    if start > 0 and line[start - 1] == "[" and nxt[:1] == "]":
        return True
    return _labelled(line, start)


def _e_hits(line: str, lineno: int, book: CodeBook) -> list[CodeHit]:
    out: list[CodeHit] = []
    for m in _E.finditer(line):
        s, e = m.span()
        if not _whole_word(line, s, e):
            continue
        code = m.group()
        if code.startswith("ERR"):
            out.append(CodeHit(code, "torch_npu", lineno, s, e, book.get(code, "torch_npu")))
            continue
        info = book.get(code, "cann")
        if info is None and not _strong_e(line, s, e):
            continue
        out.append(CodeHit(code, "cann", lineno, s, e, info))
    return out


def _numeric_hits(line: str, lineno: int, book: CodeBook) -> list[CodeHit]:
    if line.isascii():
        low = line.lower()
        if not any(w in low for w in _KEY_WORDS):
            return []
        matches = _KEY.finditer(low)
    else:
        low = line.lower()
        matches = _KEY_ANYCASE.finditer(line)
    out: list[CodeHit] = []
    hccl_ctx: bool | None = None
    for m in matches:
        key, sep, raw = m.group(1).lower(), m.group(2), m.group(3)
        if not sep.strip() and (not sep or key in _NEEDS_PUNCT):
            continue  # "ret 9", "result 150000", "return 100000" (Python source) are not codes
        if key in ("result", "runtime result") and "=" not in sep:
            continue
        digits = raw.lstrip("+-")
        span = m.span(3)
        if key in _KNOWN_SIX_ONLY and (len(digits) != 6 or raw[0] in "+-" or book.get(digits) is None):
            continue
        if raw.startswith("-"):
            if len(digits) == 4 and digits[0] == "8":
                code = str(int(raw))
                info = book.get(code, "dcmi")
                if info is not None or key not in _WEAK_KEYS:
                    out.append(CodeHit(code, "dcmi", lineno, *span, info))
            continue
        if len(digits) == 6 and digits[0] in "12345":
            info = book.get(digits)
            if info is not None or key not in _WEAK_KEYS:
                out.append(CodeHit(digits, info.family if info else "acl", lineno, *span, info))
            continue
        value = int(digits)
        if 1 <= value <= HCCL_MAX and key != "errno" and raw[0] != "+":
            if hccl_ctx is None:
                hccl_ctx = "hccl" in low or "hcom" in low
            if hccl_ctx:
                code = str(value)
                out.append(CodeHit(code, "hccl", lineno, *span, book.get(code, "hccl")))
    return out


# NPU fault / event ids (family npu_fault). Device logs print them with 0x, in either case: `Fault RAS occurs in the
# system: [event_id:0x80e18400] ...` (hicann/runtime docs/en/error_code_ref/EZ2001-Execution_Error.md), and
# `Event id=0x80c78008`, `event_id=0x80c78008`, `event_id:  [0x80c78008]` (the log regexes of Ascend/mind-cluster
# component/ascend-faultdiag/src/ascend_fd/configuration/kg-config.json; test/dt/test_interface.py feeds
# `[klogd.c:242][583733.716915] event_id=0x80c78008`). Tools print them bare, after a label: npu-smi
# `Error Code                     : A4025021 8C03A000 8C084E00` (`npu-smi info -i 0 -c 0 -t health` output kept in
# mind-cluster component/ascend-faultdiag/test/st_module_testcase/kg_parse/npu_info_after.txt, read by
# parse/knowledge_graph/parser/npu_info_parser.py) and the MindCluster device-info ConfigMap
# `"fault_code":"A8028801,A4028801,80E18402,80E18401"` (hiascend.com mindcluster 7.3.0 dlug mxdlug_com_008).
# Hex is everywhere in logs (addresses, flags, handles), so a hex value is a code only when the dictionary lists it
# and a word that names an event or a fault stands at most HEX_WINDOW characters before it (a physical address that
# happens to equal a code is not one); a bare one only right after one of those two labels.
_HEX = re.compile(r"0[xX]([0-9A-Fa-f]{8})")
_HEX_CONTEXT = re.compile(r"(?i)event[ _]?id|fault|error|code|alarm|\bRAS\b")
HEX_WINDOW = 40
_BARE_KEY = re.compile(r"(?i)(?:error code|fault_code)[ \t\"\\]{0,40}[:=][ \t\"\\]{0,4}")
_BARE_TOK = re.compile(r"[ \t,]{0,8}([0-9A-Fa-f]{8})(?![0-9A-Za-z_])")
BARE_MAX = 16  # codes read after one label (npu-smi lists a few; the ConfigMap a comma-separated handful)


def _hex_hits(line: str, lineno: int, book: CodeBook) -> list[CodeHit]:
    out: list[CodeHit] = []
    if "0x" in line or "0X" in line:
        for m in _HEX.finditer(line):
            s, e = m.span()
            if not _whole_word(line, s, e):
                continue  # part of a longer word or a longer hex number (a 64-bit address)
            info = book.get("0x" + m.group(1), "npu_fault")
            if info is not None and _HEX_CONTEXT.search(line, max(0, s - HEX_WINDOW), s):
                out.append(CodeHit(info.code, "npu_fault", lineno, s, e, info))
    if "ode" in line or "ODE" in line:
        for k in _BARE_KEY.finditer(line):
            pos = k.end()
            for _ in range(BARE_MAX):
                t = _BARE_TOK.match(line, pos)
                if t is None:
                    break
                pos = t.end()
                info = book.get("0x" + t.group(1), "npu_fault")
                if info is not None:
                    out.append(CodeHit(info.code, "npu_fault", lineno, *t.span(1), info))
    return out


# MindIE codes (family mindie): exactly `MIE` + 2 digits + an upper-case level letter + 6 upper-case hex digits, as a
# whole word (`MIE05E0000005`, `XMIE05E01000A` and `MIE05E01000A_x` are not codes). The spellings logs use are listed
# with the family in error_codes.yaml: `[MIE05E020000] msg`, `MIE05E040001[submodule] msg`, `error code: MIE05E01000A.`,
# `"errCode": "MIE05E01000A"`. A listed code counts wherever it stands. An unlisted one of the same shape counts (as
# an unknown code) only where the line prints it as a code: inside `[...]`, right before a `[submodule]`, or at most
# 24 characters after an error-code label; and only at level E or C: W and I codes (MindIE-Motor's GenerateCode,
# `MIE04I071120` in its node manager) are warnings and notices, not failures.
_MIE = re.compile(r"MIE[0-9]{2}[A-Z][0-9A-F]{6}")
_MIE_LEVELS = frozenset("EC")


def _strong_mie(line: str, start: int, end: int) -> bool:
    if line[start + 5] not in _MIE_LEVELS:
        return False
    nxt = line[end:end + 1]
    if nxt == "[" or (nxt == "]" and start > 0 and line[start - 1] == "["):
        return True
    return _labelled(line, start)


def _mie_hits(line: str, lineno: int, book: CodeBook) -> list[CodeHit]:
    out: list[CodeHit] = []
    for m in _MIE.finditer(line):
        s, e = m.span()
        if not _whole_word(line, s, e):
            continue
        code = m.group()
        info = book.get(code, "mindie")
        if info is None and not _strong_mie(line, s, e):
            continue
        out.append(CodeHit(code, "mindie", lineno, s, e, info))
    return out


def scan_line(line: str, lineno: int = 1, book: CodeBook | None = None) -> list[CodeHit]:
    """Codes in one log line, in order of position."""
    if not _DIGIT.search(line):
        return []
    book = book if book is not None else load_codes()
    hits = _e_hits(line, lineno, book) if "E" in line else []
    num = _numeric_hits(line, lineno, book) + _hex_hits(line, lineno, book)
    if "MIE" in line:
        num += _mie_hits(line, lineno, book)
    if num:
        hits = sorted(hits + num, key=lambda h: h.start)
    return hits


def iter_codes(lines: Iterable[str], book: CodeBook | None = None, start: int = 1) -> Iterator[CodeHit]:
    """Stream version of `extract_codes`: feed a file object (or any lines) without reading it whole."""
    book = book if book is not None else load_codes()
    for n, line in enumerate(lines, start):
        yield from scan_line(line.rstrip("\r\n"), n, book)


def extract_codes(text: str, book: CodeBook | None = None) -> list[CodeHit]:
    """Every code in `text` (all spellings, known or not), in order."""
    return list(iter_codes(text.splitlines(), book))
