"""Match error text and logs against kb patterns: one RE2 prefilter over big chunks, exact per-line checks.

The scan is built for untrusted, gigabyte-sized logs:

* input is read in large chunks (``CHUNK`` bytes) that end on a line boundary, so memory stays
  bounded whatever the file size; a line longer than ``max_line`` bytes is cut there and the rest
  of it is skipped without being kept;
* with ``google-re2`` (linear-time DFA, no backtracking) all patterns are combined into one
  prefilter that runs over whole chunks; only lines it hits are confirmed pattern by pattern with
  an ``re2.Set``. Without re2 a pure-Python ``re`` engine checks line by line (slower);
* every scan has a time budget: it is checked between chunks and lines, and the Python engine is
  also interrupted inside a regex by a timer signal (``_sre`` checks signals), so one
  catastrophically backtracking pattern stops the scan at the budget instead of stalling it.

Patterns are in the common subset of Python ``re`` and POSIX ERE (see kb/CONTRIBUTING), so the
same text works for RE2, ``re`` and ``grep -E``.

Besides kb patterns the prefilter marks lines that carry an error code (CANN ``EI0006``, torch_npu
``ERR02200``, ``error code is 507001`` ...) and, for the first ``ERROR_CAP`` such lines of each input,
lines that read like an error (``RuntimeError:``, ``failed``, ``cannot`` ...). Only marked lines are
looked at in Python: their codes are read through the error-code dictionary (envcheck/kb/codes.py),
each gets a severity (error, plain, warning, known-benign warning), and its timestamp and rank where
it shows them. The first error lines are kept (`ScanResult.errors`) for the ranked fallback, and the
first error and first timeout of every rank (`ScanResult.ranks`) for the first-failing-rank analysis
(envcheck/kb/diagnose.py). Small inputs (a pasted traceback) are unwrapped first: hard-wrapped lines
are joined (`unwrap`), and their lines that describe a symptom in words are kept (`symptom_lines`).
"""
from __future__ import annotations

import functools
import os
import re
import signal
import threading
import time
from collections import deque
from collections.abc import Generator, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envcheck.kb.codes import CodeBook

CHUNK = 8 << 20  # bytes read at a time
MAX_LINE = 64 << 10  # bytes of one line kept for matching; the rest is cut
EXCERPT = 400  # characters of a matching line kept for display
BINARY_PROBE = 8192  # bytes inspected for a NUL to call a file binary
DEFAULT_BUDGET = 300.0  # seconds per scan
SPECIFIC_ENOUGH = 32  # literal characters beyond which a pattern counts as fully specific
GENERIC_SPEC = 12  # a pattern with fewer required literal characters is weak evidence on its own
ERROR_CAP = 2000  # error-looking lines examined per input; past it only patterns and codes are looked for
KEEP_ERRORS = 64  # error lines kept for the fallback and the report
MAX_RANKS = 4096  # ranks tracked for the first-failure analysis
UNWRAP_MAX = 1 << 20  # inputs up to this size are unwrapped (hard-wrapped pastes) before matching
# terminal colour / cursor sequences (a coloured log saved or pasted: `\x1b[31mEZ9999: Inner Error!\x1b[0m`) and
# HTML character references (a paste copied from a web page or a mail: `&#x27;Tensor&#x27;`, `&quot;npu&quot;`)
# hide words and codes from the patterns: a block that holds escape sequences, and a pasted input (one small
# block) that holds references, is cleaned before matching (newlines kept)
_ANSI = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_ENTITY = re.compile(rb"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|quot|apos|lt|gt|amp|nbsp);")

# Error codes that identify a failure without any kb pattern: CANN's `EI0006`, `EE9999`, `E39999`
# (level E, a module character, four digits) and torch_npu's `ERR01007` (submodule + error type).
CODE_REGEXES = (r"\bE[0-9A-Z][0-9]{4}\b", r"\bERR[0-9]{5}\b")
_CODE_RE = re.compile("|".join(CODE_REGEXES).encode())
# Numeric codes after the keywords envcheck/kb/codes.py reads them from (`error code is 507001`, `ret=507033`,
# `errno 9`, `错误码：507033`, `hcclCommInitRootInfo ... error code is 4`); a superset, confirmed by codes.scan_line.
NUMERIC_CODE_REGEX = (r"([Ee][Rr][Rr][Oo][Rr][ _]?[Cc][Oo][Dd][Ee]|[Ee][Rr][Rr]_?[Cc][Oo][Dd][Ee]|[Rr][Ee][Tt]|"
                      r"[Rr][Ee][Ss][Uu][Ll][Tt]|[Ee][Rr][Rr][Nn][Oo]|错误码|[Ff]ailed)[^0-9\n]{0,8}[-+]?[0-9]")
# NPU fault / event ids (envcheck/kb/codes.py, family npu_fault): `[event_id:0x80e18400]`, `Event id=0x81078603`,
# npu-smi's `Error Code   : 8C03A000 8C084E00`, the device-info ConfigMap's `"fault_code":"80E18402,80E18401"`.
# Hex is everywhere in logs, so this marks only those labelled forms, with 0x values in the ranges the dictionary
# uses (0x80/0x81/0x8C/0x40 + 6); codes.scan_line then keeps only values the dictionary lists (a superset here, kept
# in step with the dictionary by tests/kb/test_error_codes.py). Other spellings (`fault ... 0x80E18400`) are read
# on the error-looking lines (ERROR_CAP) only: a looser context here slowed every scan by about 15%.
HEX_CODE_REGEX = (r"[Ee][Vv][Ee][Nn][Tt][ _]?[Ii][Dd][^0-9A-Za-z\n]{0,6}0[xX](8[01Cc]|40)[0-9A-Fa-f]{6}|"
                  r"[Ee]rror [Cc]ode[ \t]*: *[0-9A-Fa-f]{8}|fault_code[^0-9A-Za-z\n]{1,8}[0-9A-Fa-f]{8}")
# MindIE codes (envcheck/kb/codes.py, family mindie): `[MIE05E020000] msg`, `error code: MIE05E01000A.`. The literal
# `MIE` leads, so only lines holding it reach the extractor; codes.scan_line checks the word boundaries and the level.
MIE_CODE_REGEX = r"MIE[0-9]{2}[A-Z][0-9A-F]{6}"
# A line that reads like an error in English or Chinese. Words, not levels: `[ERROR]` is caught by `ERROR`.
ERROR_WORDS_REGEX = (r"[Ee][Rr][Rr][Oo][Rr]|\b[Ee]rr\b|[Ee]xception|EXCEPTION|[Ff]ail|FAIL|[Ff]atal|FATAL|[Aa]bort|"
                     r"[Cc]annot |[Cc]an't |[Cc]ould not |[Uu]nable to |[Nn]ot supported|[Uu]nsupported|"
                     r"[Nn]ot found|[Nn]ot installed|[Nn]ot available|[Nn]ot compiled|undefined symbol|"
                     r"No module named|[Tt]ime[d ]?out|TIMEOUT|Killed|[Ss]egmentation fault|core dumped|"
                     r"[Ii]nvalid|[Dd]enied|[Rr]efused|[Oo]ut of memory|OUT OF MEMORY|"
                     r"错误|失败|报错|异常|不支持|超时|找不到|无法|冲突|内存不足|显存不足")

# Symptoms people describe in prose, per taxonomy category (shared/TAXONOMY.md: performance = "slow steps",
# numerics = "NaN/Inf loss, fp16/bf16 overflow ...", cpu-fallback = "work silently running on the host",
# out-of-memory = "memory exhausted", device-unavailable = "no or too few devices visible", version-mismatch =
# "versions that do not work together"). Read only in pasted reports (inputs up to UNWRAP_MAX), where the
# reporter's own words are often the only statement of the failure; they point the fallback to a category.
SYMPTOMS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((cat, re.compile(rx, re.I)) for cat, rx in (
    ("performance",
     r"\b(slow|slower|slowly|slowness|sluggish)\b|\bpoor performance\b|\bperformance (drops?|degrad\w*|regress\w*)"
     r"|\bperformance\b.{0,24}\b(poor|bad|low|worse)\b|\blow (throughput|utili[sz]ation)\b|\bhigh latency\b|"
     r"\b(inference|training|decode|decoding|generation|prefill) (speed|throughput)s?\b|"
     r"\btakes? (several |many |a few )?(minutes|hours)\b|"
     r"慢|性能.{0,6}(差|低|下降|不佳)|速度|(延时|延迟|耗时)(很|较|非常)?(高|长|久)|吞吐(量)?(低|下降)|(几|数)分钟"),
    ("numerics",
     r"\b(nan|inf)\b|\bloss\b.{0,30}\b(increas\w*|jump\w*|spik\w*|diverg\w*|explod\w*|blows? up)|"
     r"\b(fp16|bf16|float16|half|numeric\w*|gradients?|loss)\W+(\w+\W+)?(overflow|underflow)|"
     r"gradient explosion|exploding gradient|\baccuracy (drops?|degrad\w*|loss)|"
     r"精度|数值(溢出|异常|不稳定)|梯度(爆炸|消失)|跑飞|发散|loss.{0,12}(突然|突增|增大|变大|飞|异常)|"
     # what a model's wrong answers look like to its user: garbage, repeats, results unlike the GPU's
     r"\b(outputs?|results?|responses?|answers?|generations?|text)\b.{0,30}\b(garbled|gibberish|nonsense|"
     r"meaningless|wrong|incorrect|abnormal|corrupt\w*|repeat\w*|repetitive)\b|"
     r"\b(differ\w*|inconsistent|mismatch\w*|deviat\w*)\b.{0,40}\b(GPU|CUDA|A100|A800|H100|H800|4090|CPU)\b|"
     r"\b(results?|outputs?|logits|accuracy|precision)\b.{0,40}\b(differ\w*|inconsistent|deviat\w*)\b|"
     r"(输出|结果|回答|生成).{0,12}(乱码|感叹号|重复|异常|错误|不对|不一致|胡言乱语)|"
     r"(与|和|跟)\s*(GPU|CPU|显卡|英伟达).{0,12}(不一致|不同|差异|对不上)"),
    ("cpu-fallback",
     r"\b(run|runs|running|ran|executed|executing|computed)\s+on\s+(the\s+)?(CPU|host)\b|\bCPU instead\b|"
     r"instead of (on )?(the )?NPU|\bfall(s|ing)?\s*back to (the )?CPU|"
     r"\bNPU (utili[sz]ation|usage|util)\b.{0,24}\b(0|0%|zero|low|idle)(\W|$)|"
     r"(回退|退回|跑)到?\s*CPU|在\s*CPU\s*上(运行|执行|跑)|NPU\s*(利用率|占用率?)\s*(为|是|一直)?\s*(0|零|很低|低)"),
    ("out-of-memory",
     r"\bout of memory\b|\bOOM\b|\bmemory (leak\w*|keeps growing|grows)|\b(not enough|insufficient) memory\b|"
     # the same said the other way round, and a free/available amount compared with what was asked
     r"\bmemory (is |was )?(not enough|insufficient)\b|"
     r"\b(free|available|remaining) (\w+ )?memory\b.{0,60}\b(less|smaller|lower) than\b|"
     # an allocation that failed (`Allocate memory failed`, `Failed to allocate memory`, `memory allocation failed`);
     # (not glibc's `cannot allocate memory in static TLS block`: a loader limit, libgomp-static-tls; no "fail")
     r"\balloc(ate|ating|ation)?\b( \w+)? (device |host )?memory\b.{0,20}\bfail\w*|"
     r"\bfail\w* to alloc(ate)?\b.{0,30}\bmemory\b|\bmemory alloc(ation)?\b.{0,12}\bfail\w*|"
     r"内存不足|显存不足|内存泄[漏露]|(内存|显存)(持续)?(增长|上涨|暴涨|溢出|爆)|爆显存"),
    ("device-unavailable",
     r"\b(cannot|can't|could not|couldn't|unable to|fails? to|failed to)\s+(detect|find|see|recogni[sz]e)\s+"
     r"(the\s+|any\s+)?(NPU|Ascend|device)|\bNPUs?\s+(is |are |were |was )?not\s+(be\s+)?(detected|recogni[sz]ed|found|"
     r"visible)|\bno NPUs?( devices?)? (found|detected|available)\b|is_available\(\)\W+(\w+\W+){0,3}False|"
     r"(识别|检测|找)不到\s*(NPU|卡|设备)|(NPU|卡|设备)\s*(无法|不能)(识别|使用|检测)"),
    ("checkpoint",
     r"\b(sav\w*|load\w*|resum\w*|writ\w*)\s+(the\s+|a\s+)?(model|checkpoints?|ckpts?|weights|state[_ ]dict|"
     r"optimizer state)\b.{0,40}\b(fail\w*|errors?|hangs?|hung|stuck|slow|time[sd]? ?out|timeouts?|crash\w*)|"
     r"\b(checkpoints?|ckpts?)\b.{0,30}\b(fail\w*|hangs?|stuck|time[sd]? ?out|timeouts?|corrupt\w*|missing)\b|"
     r"(保存|加载|存储|恢复|续训|断点).{0,8}(模型|权重|检查点|checkpoint|ckpt).{0,16}(失败|超时|卡住|卡死|报错|很慢|慢)|"
     r"(保存|加载)(模型|权重|checkpoint|ckpt)?.{0,6}(时|的时候)?.{0,8}(超时|卡住|卡死|失败)"),
    ("data-pipeline",
     r"\b(data ?loader|dataloading|data loading|num_workers|dataset loading|prefetch\w*)\b.{0,40}"
     r"\b(hangs?|hung|stuck|slow\w*|bottleneck|deadlock\w*|killed|freez\w*)|"
     r"(数据加载|数据读取|数据预处理|dataloader).{0,12}(慢|卡住|卡死|瓶颈|死锁)"),
    ("hccl-timeout",
     r"\b(hangs?|hung|stuck|freez\w*)\b.{0,40}\b(all_?reduce|all_?gather|broadcast|collective|barrier|"
     r"multi-?(node|machine)|HCCL)\b|\b(all_?reduce|all_?gather|broadcast|collective|barrier|HCCL)\b.{0,40}"
     r"\b(hangs?|hung|stuck|never returns|freez\w*)\b|(多机|多卡|集合通信|通信).{0,12}(卡住|卡死|挂住|hang)"),
    ("version-mismatch",
     r"\bversions? (conflict|mismatch|incompatib\w*)|\bincompatible versions?\b|\bbreaking changes?\b|"
     r"版本(冲突|不匹配|不兼容|不一致|不对应)|不配套"),
))

SEV_BENIGN, SEV_WARNING, SEV_PLAIN, SEV_ERROR = 0, 1, 2, 3
SEVERITY_NAMES = {SEV_BENIGN: "benign", SEV_WARNING: "warning", SEV_PLAIN: "plain", SEV_ERROR: "error"}

# Warnings that are printed on healthy runs and are never the cause of a failure.
BENIGN = (
    # torch_npu _to_copy: float64 is cast to float32 (TORCH_NPU_WARN_ONCE in
    # Ascend/pytorch torch_npu/csrc/aten/ops/ToKernelNpu.cpp); printed by many working programs.
    (re.compile(r"Device do not support double dtype now"), "torch_npu casts float64 to float32 (harmless)"),
    # torch_npu/utils/collect_env.py: CANN installed by another user (kb/env-not-loaded/cann-owner-mismatch-warning).
    (re.compile(r"owner does not match the current owner"), "CANN installed by another user (harmless)"),
    # upstream vLLM's envs.py warns of every VLLM_* variable it does not define, vllm-ascend's own among them
    # (vllm-project/vllm-ascend#11624, a maintainer; kb/env-not-loaded/vllm-harmless-startup-logs)
    (re.compile(r"Unknown vLLM environment variable detected: VLLM_ASCEND_"),
     "vllm-ascend's own variable, unknown to upstream vLLM (harmless)"),
    # vLLM built for the empty target has no vllm._C; vllm-ascend's v0.7.1rc1 release notes list it as harmless
    (re.compile(r"Failed to import from vllm\._C with ModuleNotFoundError"),
     "vLLM built without its CUDA extension, as on Ascend (harmless)"),
    # vllm-ascend's NPUPlatform switches off an option it cannot honour and starts without it: --calculate-kv-scales,
    # use_inductor_graph_partition (vllm-project/vllm-ascend#10602), disable_cascade_attn (#10086), in platform.py
    (re.compile(r"not supported on Ascend[^.]*\. parameter=[A-Za-z_.]+, .*action: resetting to"),
     "vllm-ascend resets an option it does not support and starts without it (harmless)"),
    # DeepSpeed's op-compatibility check for async_io (op_builder/async_io.py, op_builder/npu/async_io.py) warns on
    # hosts without libaio's headers (at import in 0.14.x, in ds_report always); the op serves only DeepNVMe / NVMe
    # offload (docs/_tutorials/deepnvme.md), whose own failure is "Unable to JIT load the async_io op" (builder.py)
    (re.compile(r"async_io requires the dev libaio|async_io: please install the libaio"),
     "DeepSpeed's async_io op needs libaio only for NVMe offload (harmless otherwise)"),
    # numexpr (pulled in by pandas) on a host with more cores than NUMEXPR_MAX_THREADS (64 unset): module.cpp
    # numexpr_set_nthreads prints this to stderr and returns -1, leaving its thread pool as it was; no exception.
    # Anchored at the line's end: numexpr prints no newline, so a record glued after it is not hidden.
    (re.compile(r'nthreads cannot be larger than environment variable "NUMEXPR_MAX_THREADS" \([0-9]+\)\s*$'),
     "numexpr keeps its thread count when more are asked than NUMEXPR_MAX_THREADS (harmless)"),
)

_LEVEL = re.compile(
    r"\[(ERROR|WARNING|WARN|INFO|DEBUG|EVENT|TRACE|CRITICAL|FATAL)\]|"
    r"\b(ERROR|WARNING|WARN|CRITICAL|FATAL|INFO|DEBUG)\b|"
    r"\b([A-Za-z_][A-Za-z0-9_.]*(?:Error|Exception|Warning|Interrupt|Exit))\b:?|"
    r"(?:^|[\s\]])\[?([EWF])\d{3,4}[ \]]|"  # glog / torch: "[W compiler_depend.ts:51]", "E0101 12:00:00"
    r"\[([EWF]) ")
_ERROR_WORDS = re.compile(ERROR_WORDS_REGEX)
_TRACEBACK_HEAD = re.compile(r"^\W{0,8}Traceback \(most recent call last\)|^\W*During handling of the above")
_TIMEOUT = re.compile(  # waiting for a peer that is gone (HCCL / torch / gloo wording; EI0002, EI0006, ERR02011)
    r"[Tt]ime[ds]?[ _-]?[Oo]ut|TIMEOUT|\bEI0002\b|\bEI0006\b|\bERR02011\b|[Ww]atchdog|HCCL_E_TIMEOUT|"
    r"[Cc]onnection (reset|refused|closed)|[Bb]roken pipe|[Nn]otify wait|[Hh]eartbeat|超时")
_TS = re.compile(
    r"(?<![0-9])(20[0-9]{2})-([01][0-9])-([0-3][0-9])[-T ]([0-2][0-9]):([0-5][0-9]):([0-6][0-9])"
    r"(?:[.,]([0-9]{1,6}))?(?:\.([0-9]{1,3}))?|"
    r"(?<![0-9])([01][0-9])-([0-3][0-9]) ([0-2][0-9]):([0-5][0-9]):([0-6][0-9])(?:[.,]([0-9]{1,6}))?")
_RANK = re.compile(r"\[[Rr]ank ?([0-9]{1,5})\]|\[default([0-9]{1,5})\]:|\b[Rr]ank[ _=:]?([0-9]{1,5})\b|"
                   r"\bRankID:([0-9]{1,5})\b|"
                   r"\b[Rr]ank\[([0-9]{1,5})\]")
_HOST = re.compile(r"\b(?:hostname|host)[=: ]\s?([A-Za-z0-9][A-Za-z0-9_.-]{0,62})")


try:  # google-re2: DFA-based, linear time, wheels for x86_64 and aarch64
    import re2 as _re2
except ImportError:  # pragma: no cover - exercised by forcing engine="re"
    _re2 = None


class Budget:
    """A scan's time budget, shared by every stream of one scan."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds


class BudgetExceeded(Exception):
    """The scan ran past its time budget; `partial` holds what the interrupted block found."""

    partial: _Block | None = None


@dataclass(frozen=True)
class Rule:
    """One kb pattern (kind "pattern") or an error code an entry lists (kind "code")."""

    entry_id: str
    regex: str
    specificity: int
    kind: str = "pattern"
    wrapper: bool = False  # the pattern's `wrapper: true`: weak evidence, like a pattern on a wrapper line


@dataclass(frozen=True)
class Hit:
    """One matching line."""

    source: str
    line: int
    text: str

    def to_dict(self) -> dict:
        return {"file": self.source, "line": self.line, "text": self.text}


Pos = tuple  # (input index, line number): order in time within one input, inputs in their given order


@dataclass
class EntryHits:
    """Everything one kb entry matched during a scan.

    `quality` is the best (severity, specific, by pattern) over its lines and `pos` where that best
    first occurred: an entry seen on an error line beats one seen only on warnings, a specific
    pattern beats a weak one or a wrapper line (one whose codes are all generic), a pattern beats an
    error code the entry merely lists.
    """

    entry_id: str
    count: int = 0
    specificity: int = 0
    order: int = 0
    first: list[Hit] = field(default_factory=list)
    patterns: set[str] = field(default_factory=set)
    quality: tuple[int, int, int] = (-1, 0, 0)
    pos: Pos = (0, 0)
    codes: set[str] = field(default_factory=set)  # error codes seen in the input that link to this entry

    @property
    def severity(self) -> int:
        return self.quality[0]

    @property
    def specific(self) -> bool:
        return bool(self.quality[1])

    @property
    def by_pattern(self) -> bool:
        return bool(self.quality[2])

    @property
    def corroborated(self) -> bool:
        """A pattern matched and an error code in the input links here too: two signals agree."""
        return self.by_pattern and bool(self.codes)

    def sort_key(self) -> tuple:
        # benign last; then errors before plain lines before warnings; specific before weak evidence;
        # patterns before codes; a pattern a code agrees with first; then the first in time (the
        # cascade follows the cause), then more specific patterns and more hits. Past SPECIFIC_ENOUGH
        # literal characters a pattern is as good as unique; between two such patterns with as many hits, the
        # one with more literal text is the narrower claim (`npu::npu_x: an autograd kernel was not registered`
        # over `an autograd kernel was not registered`).
        sev, spec, pat = self.quality
        return (sev == SEV_BENIGN, -sev, -spec, -pat, not self.corroborated, self.pos,
                -min(self.specificity, SPECIFIC_ENOUGH), -self.count, -self.specificity, self.order, self.entry_id)


@dataclass
class CodeHits:
    code: str
    count: int = 0
    first: Hit | None = None
    family: str = ""
    known: bool = False
    generic: bool = False
    severity: int = SEV_PLAIN
    pos: Pos = (0, 0)


@dataclass
class LineEvent:
    """An error-looking line kept for the fallback ranking and the first-failure analysis."""

    source: str
    line: int
    text: str
    severity: int
    pos: Pos
    timeout: bool = False
    ts: tuple | None = None
    rank: int | None = None
    host: str | None = None
    matched: bool = False  # a kb pattern matched it (not only a code)
    symptoms: tuple[str, ...] = ()  # taxonomy categories the symptoms it describes point to (SYMPTOMS), in pastes


@dataclass
class RankEvents:
    """The first error and the first timeout one rank (or one input without ranks) showed."""

    rank: int | None
    source: str
    host: str | None = None
    first_error: LineEvent | None = None
    first_timeout: LineEvent | None = None
    errors: int = 0
    timeouts: int = 0


@dataclass
class ScanResult:
    """Accumulated over every input of one scan."""

    entries: dict[str, EntryHits] = field(default_factory=dict)
    codes: dict[str, CodeHits] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    errors: list[LineEvent] = field(default_factory=list)
    symptoms: list[LineEvent] = field(default_factory=list)  # lines of a pasted report describing a symptom
    prose: list[LineEvent] = field(default_factory=list)  # sentences of a pasted report (see prose_lines)
    ranks: dict[tuple, RankEvents] = field(default_factory=dict)
    benign: dict[str, list] = field(default_factory=dict)  # why -> [count, first Hit]
    error_lines: int = 0
    files: int = 0
    bytes: int = 0
    lines: int = 0
    cut_lines: int = 0
    partial: bool = False  # an input could not be read to its end (truncated .gz, I/O error)
    budget_exceeded: bool = False
    seconds: float = 0.0
    _seq: int = 0

    def ranked(self) -> list[EntryHits]:
        return sorted(self.entries.values(), key=EntryHits.sort_key)

    def unknown_codes(self, known: Iterable[str]) -> list[CodeHits]:
        known_set = {k.upper() for k in known}
        rest = [c for c in self.codes.values() if c.code.upper() not in known_set]
        return sorted(rest, key=lambda c: (-c.count, c.code))


def specificity(regex: str) -> int:
    """Literal characters every match must contain (an alternation counts its weakest branch)."""
    return _Spec(regex).alt()


class _Spec:
    """A tiny recursive-descent walk over the regex subset kb patterns use."""

    def __init__(self, s: str) -> None:
        self.s, self.i = s, 0

    def _peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def alt(self) -> int:
        best = [self.seq()]
        while self._peek() == "|":
            self.i += 1
            best.append(self.seq())
        return min(best)

    def seq(self) -> int:
        total = 0
        while self._peek() not in ("", "|", ")"):
            n = self.atom()
            c = self._peek()
            if c in ("*", "?"):
                n, self.i = 0, self.i + 1
            elif c == "+":
                self.i += 1
            elif c == "{":
                m = re.match(r"\{([0-9]*)(,[0-9]*)?\}", self.s[self.i:])
                if m:
                    n = n * int(m.group(1)) if m.group(1) else 0
                    self.i += m.end()
            if self._peek() == "?":  # lazy suffix (not in the subset, but harmless)
                self.i += 1
            total += n
        return total

    def atom(self) -> int:
        c = self.s[self.i]
        if c == "\\":
            nxt = self.s[self.i + 1:self.i + 2]
            self.i += 2
            return 0 if nxt in ("d", "D", "s", "S", "w", "W", "b", "B", "A", "Z", "") else 1
        if c == "[":
            self.i += 1
            if self._peek() == "^":
                self.i += 1
            if self._peek() == "]":
                self.i += 1
            while self._peek() not in ("", "]"):
                self.i += 2 if self._peek() == "\\" else 1
            self.i += 1
            return 0
        if c == "(":
            self.i += 1
            if self.s.startswith("?:", self.i):
                self.i += 2
            n = self.alt()
            if self._peek() == ")":
                self.i += 1
            return n
        self.i += 1
        return 0 if c in ".^$" else 1


def rules_from_entries(entries: Iterable) -> list[Rule]:
    """One Rule per pattern of every kb entry, plus one per CANN / torch_npu code in `error_codes`.

    A code alone is weak evidence (`EZ9999` is an internal error that many failures end in), so
    its specificity is just its length and its kind is "code": any real pattern outranks it.
    """
    out = []
    for e in entries:
        for p in e.patterns:
            if p.regex:
                out.append(Rule(e.id, p.regex, specificity(p.regex), wrapper=p.wrapper))
        for code in e.error_codes:
            if _CODE_RE.fullmatch(code.encode()):
                out.append(Rule(e.id, rf"\b{code}\b", len(code), "code"))
    return out


# -- one line --------------------------------------------------------------------------------

def line_severity(text: str) -> int:
    """SEV_BENIGN / SEV_WARNING / SEV_PLAIN / SEV_ERROR of one line: its first level marker decides
    (`[ERROR]`, `WARNING`, `RuntimeError:`, `UserWarning:`, glog `[W ...]`), else error words make it an error."""
    if benign_reason(text):
        return SEV_BENIGN
    if _CODE_LEAD.match(text, launcher_end(text)):  # CANN's error-message block (`EZ9999: ...`, `E89999[PID: ...]`)
        return SEV_ERROR
    head = text[:240]
    for m in _LEVEL.finditer(head):
        word = next(g for g in m.groups() if g)
        up = word.upper()
        if up in ("ERROR", "CRITICAL", "FATAL", "E", "F") or up.endswith(("ERROR", "EXCEPTION", "INTERRUPT", "EXIT")):
            return SEV_ERROR
        if up in ("WARNING", "WARN", "W") or up.endswith("WARNING"):
            return SEV_WARNING
        if up in ("INFO", "DEBUG", "EVENT", "TRACE"):
            return SEV_PLAIN  # an INFO line with the word "failed" in it is still not an error line
    return SEV_ERROR if _ERROR_WORDS.search(text) and not _TRACEBACK_HEAD.search(text) else SEV_PLAIN


def symptoms_of(text: str) -> tuple[str, ...]:
    """The taxonomy categories the symptoms described in `text` point to (SYMPTOMS, in that order)."""
    return tuple(cat for cat, rx in SYMPTOMS if rx.search(text))


# a machine record names its level at its start ("[INFO] ...", "INFO 04-18 ...", "(Worker pid=1) WARNING ...",
# "W0101 ..."); a sentence may name one further on ("the console is flooded with [INFO] GE lines")
RECORD_HEAD = 32
# what a launcher or log collector puts before a program's line: "(RayWorkerWrapper pid=9)", "[rank3]:",
# torchrun --tee's "[default3]:", `kubectl logs --prefix`'s "[pod/trainer-0/main]", journald/syslog's
# "Nov 30 08:12:01 node-3 python3[4711]:"
LAUNCHER_PREFIX = (r"\(\w+(?: \w+=[\w.:-]+)+\)|\[rank ?\d+\]:?|\[default\d+\]:|\[pod/[\w.-]+/[\w.-]+\]|"
                   r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [\w.-]+ [\w./-]+(?:\[\d+\])?:")
_LAUNCHER = re.compile(rf"\s*(?:(?:{LAUNCHER_PREFIX})\s*)+")
# CANN's error codes start with their level, E (error); a line led by one (after any launcher prefix) belongs to
# an error message block
_CODE_LEAD = re.compile(r"\W{0,8}E[0-9A-Z][0-9]{4}\b")


def launcher_end(line: str) -> int:
    """Where the program's own text starts: after the launchers' and collectors' prefixes, if any."""
    m = _LAUNCHER.match(line)
    return m.end() if m else 0


def is_record(line: str, level: re.Pattern[str]) -> bool:
    """A machine record: `level` within RECORD_HEAD characters of its start, after any launcher prefix."""
    at = launcher_end(line)
    return bool(level.search(line, at, at + RECORD_HEAD))


_QUIET_LEVEL = re.compile(r"\[(INFO|DEBUG|EVENT|TRACE|WARNING|WARN)\]|\b(INFO|DEBUG|WARNING|WARN)\b|"
                          r"^\W{0,3}[IWD][0-9]{4} ")


PROSE_LINES = 20  # sentences of a pasted report kept for the fallback when it has no error or symptom line
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+|[\u4e00-\u9fff]{2,}")
_PROSE_SKIP = re.compile(r"^\W{0,3}(\d{4}-\d\d-\d\d|\d\d:\d\d:\d\d|[IWEF]\d{3,4} |\$ |>>> |#+ |\|)|https?://")


_LEVEL_WORD = re.compile(r"\b(INFO|DEBUG|WARNING|WARN|ERROR)\b")
_LOWER_WORD = re.compile(r"\b[a-z]{2,}\b")


def talks_of_levels(line: str) -> bool:
    """A sentence that names log levels ("The screen is full of CANN INFO and DEBUG logs") rather than a record at
    one: three lower-case words and no bracket, colon or pipe before the first level word of its head."""
    m = _LEVEL_WORD.search(line, 0, RECORD_HEAD + 64)
    if m is None:
        return False
    before = line[:m.start()]
    return not any(c in before for c in "[]:|") and len(_LOWER_WORD.findall(before)) >= 3


def prose_lines(block: bytes, start: int, end: int) -> list[tuple[int, str]]:
    """(line, text) of the first sentences of a pasted report: what its writer says in words ("inside docker
    npu-smi shows nothing and device_count() is 0"). Read by the fallback only when the report has no error
    line and describes no known symptom; machine records (levels, timestamps, prompts, tables, links) are none."""
    out: list[tuple[int, str]] = []
    for n, raw in enumerate(block[start:end].split(b"\n")):
        if len(out) >= PROSE_LINES:
            break
        line = raw.rstrip(b"\r").decode("utf-8", "replace").strip()
        if len(line) < 12 or _PROSE_SKIP.search(line) or benign_reason(line) or (
                is_record(line, _LEVEL) and not talks_of_levels(line)):
            continue
        words = _WORD.findall(line)
        letters = sum(len(w) for w in words)
        if (len(words) >= 4 or any(len(w) >= 6 and not w.isascii() for w in words)) and letters >= 0.5 * len(line):
            out.append((n, _excerpt(line.encode("utf-8"))))
    return out


def symptom_lines(block: bytes, start: int, end: int) -> list[tuple[int, str, int, tuple[str, ...]]]:
    """(line, text, severity, categories) of the lines of a pasted report that describe a symptom.

    A machine record at INFO/DEBUG/WARNING level is no description (a healthy run prints `slow`,
    throughput figures and warnings), nor is a known-benign warning. One search over the whole
    block (RE2 when installed) finds the candidate lines; only those are looked at line by line."""
    search = _any_symptom()
    out: list[tuple[int, str, int, tuple[str, ...]]] = []
    pos, cpos, cline = start, start, 0
    while len(out) < KEEP_ERRORS:
        m = search(block, pos, end)
        if m is None:
            break
        ls = block.rfind(b"\n", start, m.start()) + 1 or start
        le = block.find(b"\n", m.start(), end)
        le = end if le < 0 else le
        cline += block.count(b"\n", cpos, ls)
        cpos, pos = ls, le + 1
        line = block[ls:le].rstrip(b"\r").decode("utf-8", "replace")
        cats = symptoms_of(line)
        if not cats or is_record(line, _QUIET_LEVEL):
            continue
        text = _excerpt(line.encode("utf-8"))
        sev = line_severity(text)
        if sev > SEV_WARNING:
            out.append((cline, text, sev, cats))
    return out


@functools.lru_cache(maxsize=1)
def _any_symptom() -> Any:
    """search(bytes, pos, endpos) for a line that may describe a symptom (a superset of SYMPTOMS)."""
    src = "|".join(f"(?:{rx.pattern})" for _, rx in SYMPTOMS)
    if _re2 is not None:
        opts = _re2.Options()
        opts.case_sensitive = False
        opts.never_nl = True
        return _re2.compile(src.encode(), opts).search
    return re.compile(src.encode(), re.I).search


def benign_reason(text: str) -> str:
    for rx, why in BENIGN:
        if rx.search(text):
            return why
    return ""


def timestamp(text: str) -> tuple | None:
    """A comparable timestamp from the start of a line: (year or 0, month, day, h, m, s, fraction)."""
    m = _TS.search(text, 0, 200)
    if m is None:
        return None
    g = m.groups()
    if g[0]:
        frac = (g[6] or "") + (g[7] or "")
        return (int(g[0]), int(g[1]), int(g[2]), int(g[3]), int(g[4]), int(g[5]), float("0." + (frac or "0")))
    return (0, int(g[8]), int(g[9]), int(g[10]), int(g[11]), int(g[12]), float("0." + (g[13] or "0")))


def line_rank(text: str) -> int | None:
    """The rank a line names near its start (`[rank3]:`, `rank 3`, `RankID:3`, `(VllmWorker rank=3 ...)`)."""
    m = _RANK.search(text, 0, 160)
    return int(next(g for g in m.groups() if g)) if m else None


def unwrap(lines: list[bytes]) -> tuple[list[bytes], list[int]]:
    """Join hard-wrapped lines; returns (logical lines, index of the physical line each starts at).

    A line is a wrap candidate when the next line goes on in lower case or punctuation (a new log
    record starts upper-case, with `[` or a digit). Two kinds of wrap are recognised: a fixed-width
    wrap (an 80/100/120-column terminal, or a width at least two candidates share exactly), joined as
    is because the break falls anywhere, even mid-word; and a sentence broken at a space (a candidate
    of 40+ characters ending in a letter, a comma or a colon, the next line starting with a lower-case
    word and no indentation, not a log record with a level or timestamp), joined with a space. A line of exactly
    a terminal's width that ends in a letter before a line that starts with one is joined with a space
    when a neighbouring line is such a sentence broken at a space (a word-wrapped paste that happened to
    fill the line: "... less than desired" / "GPU memory utilization ..."), else as is (a cut mid-word).
    """
    texts = [ln.rstrip(b"\r") for ln in lines]
    lengths = [len(t.decode("utf-8", "replace")) for t in texts]
    cand = [60 <= lengths[i] <= 240 and bool(_WRAPPED_ON.match(texts[i + 1])) for i in range(len(texts) - 1)]
    counts: dict[int, int] = {}
    for i, c in enumerate(cand):
        if c:
            counts[lengths[i]] = counts.get(lengths[i], 0) + 1
    widths = {80, 100, 120} | {w for w, n in counts.items() if n >= 2}

    def broken_at_space(j: int) -> bool:  # line j ends mid-sentence and line j + 1 goes on with a lower-case word
        return (0 <= j < len(texts) - 1 and 40 <= lengths[j] <= 240 and bool(_ENDS_MID.search(texts[j]))
                and bool(_CONTINUES.match(texts[j + 1])))

    def sentence_wrap(j: int) -> bool:  # line j is prose broken at a space, shorter than a terminal's width
        return broken_at_space(j) and lengths[j] not in TERMINAL_WIDTHS and not _RECORD.match(texts[j])

    out: list[bytes] = []
    starts: list[int] = []
    i = 0
    while i < len(texts):
        cur, start = texts[i], i
        while i + 1 < len(texts) and texts[i + 1].strip():
            nxt = texts[i + 1]
            if (cand[i] and lengths[i] in widths) or (lengths[i] in TERMINAL_WIDTHS and _CUT_ON.match(nxt)
                                                      and not _NEW_RECORD.match(nxt)):
                # a letter on both sides of the break: a terminal's cut inside a word, or a word wrap (an issue
                # tracker's, an editor's) that dropped the space and happened to fill the line; the lines next to
                # it tell which: a neighbour broken at a space, shorter than the width, makes it a word wrap
                word_wrap = (texts[i][-1:].isalpha() and nxt[:1].isalpha()
                             and (sentence_wrap(i - 1) or sentence_wrap(i + 1)))
                cur += (b" " if word_wrap else b"") + nxt
            elif broken_at_space(i) and not _RECORD.match(texts[start]):
                cur += b" " + nxt
            else:
                break
            i += 1
        out.append(cur)
        starts.append(start)
        i += 1
    return out, starts


TERMINAL_WIDTHS = frozenset({80, 100, 120})
# at a terminal's exact width the cut falls anywhere: mid-word ("Set seed for `npu`"), mid-number ("50" + "7048"),
# mid-identifier ("HCCL_CONNECT" + "_TIMEOUT") or right before a space ("Could not" + " run"); the next line then starts
# with anything but a new record's start (an indented line, two spaces or more, is a traceback's or a block's own)
_CUT_ON = re.compile(rb"[A-Z0-9_`'\"(]| [^ ]")
_NEW_RECORD = re.compile(rb"\W{0,3}(\[?(ERROR|WARNING|WARN|INFO|DEBUG|EVENT|TRACE|CRITICAL|FATAL)\b|"
                         rb"(20[0-9]{2}|[01][0-9])-[0-9]{2}[- ]|[IWEF][0-9]{3,4} |[0-9]{2}:[0-9]{2}:[0-9]{2}|"
                         rb"Traceback |During handling|[A-Za-z_.]*(Error|Exception|Warning)\b|E[A-Z][0-9]{4}\b|"
                         rb"E[0-9]{5}\b|\[rank ?[0-9]+\]|File \"|[0-9]+ ?[|:]|[A-Z][a-z]+:)")
_WRAPPED_ON = re.compile(rb"[a-z.,;:)'\"]")  # a continuation, not a new record (those start upper-case, [ or digits)
# a word, a comma, or a colon before its detail ("libx.so:" / "undefined symbol: ...")
_ENDS_MID = re.compile(rb"[A-Za-z,:]$")
# a machine log record (level, timestamp, glog prefix): its lines are never prose broken at a space
_RECORD = re.compile(rb"\W{0,3}(\[?(ERROR|WARNING|WARN|INFO|DEBUG|EVENT|TRACE)\b|(20[0-9]{2}|[01][0-9])-[0-9]{2}[- ]|"
                     rb"[IWEF][0-9]{4} )")
_CONTINUES = re.compile(rb"[a-z]+[,;]?( |$)")


@dataclass
class _Block:
    """What one block of lines matched, with line numbers relative to the block (0-based)."""

    newlines: int = 0
    entries: dict[str, list] = field(default_factory=dict)  # id -> [n, spec, pats, firsts, last, q, qline, codes]
    codes: dict[str, list] = field(default_factory=dict)  # code -> [count, (line, text), family, known, generic, sev]
    events: list[LineEvent] = field(default_factory=list)  # error lines (source/pos filled in at merge)
    benign: dict[str, list] = field(default_factory=dict)  # why -> [count, (line, text)]
    error_lines: int = 0
    linemap: list[int] | None = None  # logical line -> physical line (unwrapped input)
    symptoms: list[tuple[int, str, int, tuple[str, ...]]] = field(default_factory=list)  # (line, text, sev, cats)
    prose: list[tuple[int, str]] = field(default_factory=list)  # (line, text) of a pasted report's sentences


class Matcher:
    """All kb patterns compiled once; scans text, files and streams."""

    def __init__(self, rules: Sequence[Rule], engine: str = "auto", max_hits: int = 3,
                 max_line: int = MAX_LINE, chunk: int = CHUNK, book: CodeBook | None = None,
                 entry_ids: Iterable[str] | None = None) -> None:
        if engine == "auto":
            engine = "re2" if _re2 is not None else "re"
        if engine == "re2" and _re2 is None:
            raise RuntimeError("google-re2 is not installed (pip install google-re2)")
        if engine not in ("re2", "re"):
            raise ValueError(f"unknown regex engine {engine!r}")
        self.engine, self.max_hits, self.max_line, self.chunk = engine, max_hits, max_line, chunk
        self.notes: list[str] = []
        self.rules: list[Rule] = []
        self._book = book
        rules = list(rules)
        # entries the error-code dictionary may link to: the kb's (default: those with rules)
        self.entry_ids = frozenset(entry_ids if entry_ids is not None else (r.entry_id for r in rules))
        (self._compile_re2 if engine == "re2" else self._compile_re)(rules)

    @property
    def book(self) -> CodeBook:
        if self._book is None:
            from envcheck.kb.codes import load_codes

            self._book = load_codes()
        return self._book

    # -- compilation -------------------------------------------------------------------------
    def _prefilter_parts(self) -> tuple[list[str], list[str]]:
        """(lean, full): lean finds pattern and code lines; full also error-looking lines."""
        codes = [*CODE_REGEXES, NUMERIC_CODE_REGEX, HEX_CODE_REGEX, MIE_CODE_REGEX]
        lean = [f"(?:{r.regex})" for r in self.rules] + codes
        return lean, lean + [ERROR_WORDS_REGEX]

    def _compile_re2(self, rules: list[Rule]) -> None:
        opts = _re2.Options()
        opts.never_nl = True  # a match never spans lines, even through [^x] classes
        opts.never_capture = True
        opts.max_mem = 64 << 20  # room for the combined DFA; past it RE2 falls back to slower NFA
        self._set = _re2.Set.SearchSet(opts)
        for r in rules:
            try:
                rx = _re2.compile(r.regex.encode(), opts)
                _re2.compile(f"(?:{r.regex})".encode(), opts)  # must also stand inside the combined prefilter
            except _re2.error as exc:
                self.notes.append(f"pattern of {r.entry_id} skipped (RE2 cannot compile it: {exc}): {r.regex}")
                continue
            if self._matches_empty(r, rx.search(b"")):
                continue
            self._set.Add(r.regex.encode())
            self.rules.append(r)
        lean, full = self._prefilter_parts()
        self._pre_lean = _re2.compile(("(?m)" + "|".join(lean)).encode(), opts)
        self._pre = _re2.compile(("(?m)" + "|".join(full)).encode(), opts)
        if self.rules:
            self._set.Compile()

    def _compile_re(self, rules: list[Rule]) -> None:
        self._res = []
        for r in rules:
            try:
                rx = re.compile(r.regex.encode())
                re.compile(f"(?:{r.regex})".encode())  # must also stand inside the combined prefilter
            except re.error as exc:
                self.notes.append(f"pattern of {r.entry_id} skipped (does not compile: {exc}): {r.regex}")
                continue
            if self._matches_empty(r, rx.search(b"")):
                continue
            self._res.append(rx)
            self.rules.append(r)
        lean, full = self._prefilter_parts()
        self._pre_re_lean = re.compile("|".join(lean).encode(), re.MULTILINE)
        self._pre_re = re.compile("|".join(full).encode(), re.MULTILINE)  # ^ after each newline, as with RE2

    def _matches_empty(self, r: Rule, m: object) -> bool:
        """A pattern matching empty text would match every line: skip it, say so."""
        if m is not None:
            self.notes.append(f"pattern of {r.entry_id} skipped (it matches empty text, so every line): {r.regex}")
        return m is not None

    # -- public API --------------------------------------------------------------------------
    def scan_text(self, text: str, source: str = "<text>", budget: float = DEFAULT_BUDGET) -> ScanResult:
        import io

        result = ScanResult()
        data = text.encode("utf-8", "replace")
        workers = None if len(data) > self.chunk else 1  # no thread pool for short evidence
        self.scan_stream(io.BytesIO(data), source, result, budget=budget, workers=workers)
        return result

    def match_line(self, line: str | bytes) -> list[Rule]:
        """Rules matching one line (no budget: for short text only)."""
        b = line.encode("utf-8", "replace") if isinstance(line, str) else line
        return [self.rules[i] for i in self._confirm(b[:self.max_line].rstrip(b"\r\n"))]

    def scan_stream(self, stream: IO[bytes], source: str, result: ScanResult,
                    budget: float | Budget = DEFAULT_BUDGET, workers: int | None = None,
                    interactive: bool = False) -> bool:
        """Scan one binary stream into `result`. False when it was skipped as binary.

        With RE2, blocks are scanned by a small thread pool (RE2 releases the GIL) while the
        next block is read; results are merged in input order, so line numbers stay exact.
        `budget` is seconds or a Budget shared by several streams; with `interactive` (a pasted
        traceback on stdin) time spent waiting for input does not count against it.
        An input no bigger than UNWRAP_MAX is unwrapped (hard-wrapped lines joined) first.
        """
        budget = budget if isinstance(budget, Budget) else Budget(budget)
        if workers is None:
            workers = min(4, os.cpu_count() or 1) if self.engine == "re2" else 1
        started = time.monotonic()
        blocks = _blocks(stream, self.chunk, self.max_line)
        state: dict[str, Any] = {"line_base": 0, "first": True, "file": result.files, "errors": 0}
        scan = self._scan_block_re2 if self.engine == "re2" else self._scan_block_re
        pool = ThreadPoolExecutor(workers) if workers > 1 else None
        pending: deque = deque()
        try:
            ahead: list = []
            while True:
                waited = time.monotonic()
                try:
                    block, start, end, cut = ahead.pop() if ahead else next(blocks)
                except StopIteration:
                    break
                if interactive:
                    budget.deadline += time.monotonic() - waited
                linemap = None
                size = end - start
                if block.find(b"\x1b", start, end) >= 0 and not (
                        state["first"] and b"\0" in block[start:start + BINARY_PROBE]):
                    block = cleaned(block[start:end], references=False)
                    start, end = 0, len(block)
                if state["first"]:
                    state["first"] = False
                    if b"\0" in block[start:start + BINARY_PROBE]:
                        result.notes.append(f"{source}: binary file skipped")
                        return False
                    result.files += 1
                    # a container's JSON log file (docker json-file) or a structured logger's: decoded block by
                    # block, each line being one record (the first line decides, as a log is written one way)
                    state["json"] = bool(_JSON_LINE.match(block, start, block.find(b"\n", start, end) + 1 or end))
                    if state["json"]:
                        block = json_decoded(block[start:end])
                        start, end = 0, len(block)
                    if end - start <= UNWRAP_MAX and not cut:
                        waited = time.monotonic()
                        nxt = next(blocks, None)
                        if interactive:
                            budget.deadline += time.monotonic() - waited
                        if nxt is None:  # the whole input is this one small block (a paste): unwrap it
                            if _ENTITY.search(block, start, end):  # copied from a web page
                                block = cleaned(block[start:end])
                                start, end = 0, len(block)
                            if not state["json"] and _JSON_LINE.search(block, start, end):  # a paste of JSON records
                                block = json_decoded(block[start:end])
                                start, end = 0, len(block)
                            physical = block.count(b"\n", start, end)
                            result.bytes += size
                            block, start, end, linemap = _unwrapped(block, start, end)
                        else:
                            ahead.append(nxt)
                elif state["json"]:
                    block = json_decoded(block[start:end])
                    start, end = 0, len(block)
                if time.monotonic() > budget.deadline:
                    raise BudgetExceeded
                if linemap is None:
                    result.bytes += size
                result.cut_lines += cut
                lean = state["errors"] >= ERROR_CAP
                if pool is None or linemap is not None:  # an unwrapped input is one small block
                    with _alarm(budget.deadline if self.engine == "re" else None):
                        found = scan(block, start, end, budget.deadline, lean, state["errors"])
                    if linemap is not None:
                        found.linemap, found.newlines = linemap, physical
                        found.symptoms = symptom_lines(block, start, end)
                        found.prose = prose_lines(block, start, end)
                    self._merge(found, source, state, result)
                    continue
                pending.append(pool.submit(scan, block, start, end, budget.deadline, lean, state["errors"]))
                while len(pending) > workers:
                    self._merge(pending.popleft().result(), source, state, result)
            while pending:
                self._merge(pending.popleft().result(), source, state, result)
        except BudgetExceeded as exc:
            if exc.partial is not None:
                self._merge(exc.partial, source, state, result)
            result.budget_exceeded = True
            result.notes.append(f"{source}: time budget exceeded after line {state['line_base']}; "
                                "results are partial")
        finally:
            for f in pending:
                f.cancel()
            if pool is not None:
                pool.shutdown(wait=True)
            blocks.close()
            result.lines += state["line_base"]
            result.seconds += time.monotonic() - started
        if state["first"]:  # empty input still counts as read
            result.files += 1
        return True

    # -- scanning ----------------------------------------------------------------------------
    def _scan_block_re2(self, buf: bytes, start: int, end: int, deadline: float, lean: bool = False,
                        errors_before: int = 0) -> _Block:
        """Lines buf[start:end] (ending in a newline) through the RE2 prefilter, hits confirmed."""
        out = _Block(newlines=buf.count(b"\n", start, end))
        try:
            self._search_re2(buf, start, end, deadline, out, lean, errors_before)
        except BudgetExceeded as exc:
            exc.partial = out
            raise
        return out

    def _search_re2(self, buf: bytes, start: int, end: int, deadline: float, out: _Block, lean: bool,
                    errors_before: int) -> None:
        search = (self._pre_lean if lean else self._pre).search
        pos, n = start, 0
        cpos, cline = start, 0  # newlines counted up to cpos
        while pos < end:
            m = search(buf, pos, end)
            if m is None:
                break
            hit = m.start()
            ls = buf.rfind(b"\n", start, hit) + 1 or start
            le = buf.find(b"\n", hit, end)
            le = end if le < 0 else le
            cline += buf.count(b"\n", cpos, ls)
            cpos = ls
            self._record(buf[ls:min(le, ls + self.max_line)], cline, out)
            if not lean and errors_before + out.error_lines >= ERROR_CAP:
                lean, search = True, self._pre_lean.search
            pos = le + 1
            n += 1
            if n % 256 == 0 and time.monotonic() > deadline:
                raise BudgetExceeded

    def _scan_block_re(self, buf: bytes, start: int, end: int, deadline: float, lean: bool = False,
                       errors_before: int = 0) -> _Block:
        """Lines buf[start:end] one by one through the Python re prefilter, hits confirmed."""
        out = _Block(newlines=buf.count(b"\n", start, end))
        try:
            self._search_re(buf, start, end, deadline, out, lean, errors_before)
        except BudgetExceeded as exc:
            exc.partial = out
            raise
        return out

    def _search_re(self, buf: bytes, start: int, end: int, deadline: float, out: _Block, lean: bool,
                   errors_before: int) -> None:
        search = (self._pre_re_lean if lean else self._pre_re).search
        pos, n = start, 0
        while pos < end:
            le = buf.find(b"\n", pos)
            le = end if le < 0 else le
            if search(buf, pos, min(le, pos + self.max_line)):
                self._record(buf[pos:min(le, pos + self.max_line)], n, out)
                if not lean and errors_before + out.error_lines >= ERROR_CAP:
                    lean, search = True, self._pre_re_lean.search
            pos = le + 1
            n += 1
            if n % 1024 == 0 and time.monotonic() > deadline:
                raise BudgetExceeded

    def _confirm(self, line: bytes) -> list[int]:
        if self.engine == "re2":
            return sorted(self._set.Match(line) or ()) if self.rules else []
        return [i for i, rx in enumerate(self._res) if rx.search(line)]

    def _record(self, line: bytes, rel: int, out: _Block) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        matched = self._confirm(line)
        text = _excerpt(line)
        from envcheck.kb.codes import scan_line

        hits = scan_line(text, rel + 1, self.book) if (_CODE_RE.search(line) or _DIGIT.search(line)) else []
        sev = line_severity(text)
        if sev == SEV_BENIGN:
            why = benign_reason(text)
            b = out.benign.get(why)
            if b is None:
                out.benign[why] = [1, (rel, text)]
            else:
                b[0] += 1
        codes = list(dict.fromkeys(h.code if h.family != "hccl" else f"hccl:{h.code}" for h in hits))
        if not codes:  # the plain E-code regex also counts codes the dictionary reader leaves out
            codes = list(dict.fromkeys(c.decode() for c in _CODE_RE.findall(line)))
        infos = [h.info for h in hits]
        wrapper = bool(infos) and all(i is not None and i.generic for i in infos)
        fam = {(h.code if h.family != "hccl" else f"hccl:{h.code}"): h for h in hits}
        for code in codes:
            ch = out.codes.get(code)
            if ch is None:
                h = fam.get(code)
                info = h.info if h else None
                out.codes[code] = [1, (rel, text), h.family if h else "", info is not None,
                                   bool(info and info.generic), sev]
            else:
                ch[0] += 1
        # evidence per entry on this line: (quality, specificity, pattern regex or None, linking code or None)
        found: list[tuple[str, tuple[int, int, int], int, str | None, str | None]] = []
        any_pattern = False
        for i in matched:
            rule = self.rules[i]
            if rule.kind == "pattern":
                any_pattern = True
                # a pattern on a wrapper line (all its codes generic: `... error code is 500001`,
                # `ERR00100 PTA call acl api failed`) describes the wrapper, not the cause; so does a pattern the
                # kb marks `wrapper: true` (a line printed for several causes)
                specific = int(rule.specificity >= GENERIC_SPEC and not wrapper and not rule.wrapper)
                found.append((rule.entry_id, (sev, specific, 1), rule.specificity, rule.regex, None))
            else:
                listed = rule.regex[2:-2]  # \bEI0006\b
                info = self.book.get(listed)
                found.append((rule.entry_id, (sev, int(not (info and info.generic)), 0), rule.specificity,
                              None, listed))
        for h in hits:  # the dictionary links codes to the entries that treat them
            if h.info is not None:
                for linked in h.info.entries:
                    if linked in self.entry_ids:
                        found.append((linked, (sev, int(not h.info.generic), 0), len(h.code), None, h.code))
        for eid, q, spec, regex, via in found:
            eh = out.entries.get(eid)
            if eh is None:
                eh = out.entries[eid] = [0, 0, set(), [], -1, q, rel, set()]
            eh[1] = max(eh[1], spec)
            if regex is not None:
                eh[2].add(regex)
            if via is not None:
                eh[7].add(via)
            if q > eh[5]:
                eh[5], eh[6] = q, rel
            if eh[4] == rel:  # more evidence for the same entry on the same line
                continue
            eh[4] = rel
            eh[0] += 1
            if len(eh[3]) < self.max_hits:
                eh[3].append((rel, text))
        waiting = bool(_TIMEOUT.search(text)) or any(
            h.info is not None and (h.info.category == "hccl-timeout" or "TIMEOUT" in h.info.name.upper())
            for h in hits)
        if sev == SEV_ERROR or (found and waiting):
            if sev == SEV_ERROR:
                out.error_lines += 1
            out.events.append(LineEvent("", rel, text, sev, (0, rel), timeout=waiting,
                                        ts=timestamp(text), rank=line_rank(text), matched=any_pattern))

    def _merge(self, blk: _Block, source: str, state: dict, result: ScanResult) -> None:
        base, fidx, lm = state["line_base"], state["file"], blk.linemap

        def phys(rel: int) -> int:
            return base + (lm[rel] if lm is not None else rel) + 1

        for code, (count, (rel, text), family, known, generic, sev) in blk.codes.items():
            ch = result.codes.get(code)
            if ch is None:
                ch = result.codes[code] = CodeHits(code, family=family, known=known, generic=generic,
                                                   severity=sev, pos=(fidx, phys(rel)))
                ch.first = Hit(source, phys(rel), text)
            ch.count += count
        for eid, (count, spec, pats, firsts, _, q, qrel, linked) in blk.entries.items():
            eh = result.entries.get(eid)
            if eh is None:
                result._seq += 1
                eh = result.entries[eid] = EntryHits(eid, order=result._seq)
            eh.count += count
            eh.specificity = max(eh.specificity, spec)
            eh.patterns |= pats
            eh.codes |= linked
            if q > eh.quality:
                eh.quality, eh.pos = q, (fidx, phys(qrel))
            for rel, text in firsts[:max(0, self.max_hits - len(eh.first))]:
                eh.first.append(Hit(source, phys(rel), text))
        for why, (count, (rel, text)) in blk.benign.items():
            b = result.benign.get(why)
            if b is None:
                result.benign[why] = [count, Hit(source, phys(rel), text)]
            else:
                b[0] += count
        result.error_lines += blk.error_lines
        state["errors"] += blk.error_lines
        for rel, text in blk.prose:
            if len(result.prose) < PROSE_LINES:
                line = phys(rel)
                # a warning stays a warning: the fallback's guesses from it must not outrank a pattern on it
                sev = SEV_WARNING if line_severity(text) == SEV_WARNING else SEV_PLAIN
                result.prose.append(LineEvent(source, line, text, sev, (fidx, line)))
        for rel, text, sev, cats in blk.symptoms:
            if len(result.symptoms) < KEEP_ERRORS:
                line = phys(rel)
                result.symptoms.append(LineEvent(source, line, text, sev, (fidx, line), symptoms=cats))
        for ev in blk.events:
            ev.source, ev.line = source, phys(ev.line)
            ev.pos = (fidx, ev.line)
            if ev.severity == SEV_ERROR and len(result.errors) < KEEP_ERRORS:
                result.errors.append(ev)
            _track_rank(result, ev)
        state["line_base"] = base + blk.newlines


_DIGIT = re.compile(rb"[0-9]")


def _track_rank(result: ScanResult, ev: LineEvent) -> None:
    """Keep the first error and the first timeout per (input, rank); a Python traceback's header is no event."""
    key = (ev.source, ev.rank)
    re_ = result.ranks.get(key)
    if re_ is None:
        if len(result.ranks) >= MAX_RANKS:
            return
        re_ = result.ranks[key] = RankEvents(ev.rank, ev.source)
    if ev.timeout:
        re_.timeouts += 1
        if re_.first_timeout is None:
            re_.first_timeout = ev
    elif ev.severity == SEV_ERROR:
        re_.errors += 1
        if re_.first_error is None:
            re_.first_error = ev
    if re_.host is None:
        m = _HOST.search(ev.text)
        if m:
            re_.host = m.group(1)


def cleaned(data: bytes, references: bool = True) -> bytes:
    """`data` without terminal escape sequences and (`references`) with HTML character references decoded;
    newlines are kept, so line numbers stay those of the input."""
    if b"\x1b" in data:
        data = _ANSI.sub(b"", data)
    if references and b"&" in data:
        import html

        def ref(m: re.Match[bytes]) -> bytes:
            out = html.unescape(m.group().decode("ascii")).encode("utf-8")
            return m.group() if b"\n" in out or b"\r" in out else out

        data = _ENTITY.sub(ref, data)
    return data


# a line that is one JSON object (docker's json-file log, a structured logger), and the keys that hold its text
_JSON_LINE = re.compile(rb"^[ \t]*\{.*\}[ \t]*\r?$", re.M)
_JSON_TEXT = ("log", "msg", "message", "MESSAGE")
_JSON_LEVEL = ("level", "levelname", "severity", "PRIORITY")
# docker's json-file record whose text has no escape but its newline: rewritten by the regex engine alone, so a
# big container log is not decoded record by record in Python (the rest go through json_decoded's parser)
_DOCKER_PLAIN = re.compile(rb'^\{"log": ?"([^"\\\n]*)\\n", ?"stream": ?"std(?:out|err)", ?"time": ?"[^"\\\n]*"\}\r?$',
                           re.M)
_LEVEL_WORDS = {"error": "ERROR", "err": "ERROR", "critical": "CRITICAL", "fatal": "FATAL", "warning": "WARNING",
                "warn": "WARNING", "3": "ERROR", "2": "CRITICAL", "4": "WARNING"}  # journald PRIORITY is syslog's


def json_decoded(data: bytes) -> bytes:
    """`data` with every line that is a JSON log record replaced by the record's text (`log`, `msg`, `message`),
    led by its level when the record gives one that the text does not already show (`ERROR`, `WARNING`). A record
    whose text spans lines (a traceback in one value), or that is no log record, is left as it is, so the input
    keeps its line count and line numbers."""
    import json

    def one(m: re.Match[bytes]) -> bytes:
        try:
            rec = json.loads(m.group())
        except ValueError:
            return m.group()
        if not isinstance(rec, dict):
            return m.group()
        text = next((rec[k] for k in _JSON_TEXT if isinstance(rec.get(k), str)), None)
        if text is None:
            return m.group()
        text = text.rstrip("\r\n")
        if "\n" in text or "\r" in text:
            return m.group()
        level = next((str(rec[k]) for k in _JSON_LEVEL if isinstance(rec.get(k), (str, int))), "")
        word = _LEVEL_WORDS.get(level.strip().lower())
        if word and not _LEVEL.search(text):
            text = f"[{word}] {text}"
        out = text.encode("utf-8", "replace")
        return _ANSI.sub(b"", out) if b"\x1b" in out else out  # colour escaped as \u001b in the record

    data = _DOCKER_PLAIN.sub(rb"\1", data)
    return _JSON_LINE.sub(one, data) if b"{" in data else data


def _excerpt(line: bytes) -> str:
    text = line.decode("utf-8", "replace").strip()
    return text if len(text) <= EXCERPT else text[:EXCERPT] + " …"


def _unwrapped(block: bytes, start: int, end: int) -> tuple[bytes, int, int, list[int]]:
    """The block's lines unwrapped, as a new block, and the physical line each logical line starts at."""
    phys = block[start:end].split(b"\n")[:-1]  # the block ends in a newline
    logical, starts = unwrap(phys)
    data = b"\n".join(logical) + b"\n" if logical else b""
    return data, 0, len(data), starts



def _blocks(stream: IO[bytes], chunk: int, max_line: int) -> Generator[tuple[bytes, int, int, int], None, None]:
    """(buffer, start, end, lines cut): buffer[start:end] is whole lines, each ending in a newline.

    Big reads are passed on without copying; only a line split across two reads is joined
    into a small buffer of its own. A line longer than `max_line` keeps its first `max_line`
    bytes and the rest is read and dropped, so memory is bounded by about `chunk + max_line`
    per block in flight whatever the input looks like.
    """
    tail, skipping = b"", False
    while True:
        data = stream.read(chunk)
        if not data:
            break
        start = 0
        if skipping or tail:
            nl = data.find(b"\n")
            if nl < 0:  # the pending line goes on past this read
                if not skipping:
                    tail += data[:max_line - len(tail) + 1]
                    if len(tail) > max_line:
                        yield _cut(tail, max_line)
                        tail, skipping = b"", True
                continue
            if not skipping:
                head = tail + data[:min(nl + 1, max_line - len(tail) + 1)]
                if head.endswith(b"\n"):
                    yield head, 0, len(head), 0
                else:
                    yield _cut(head, max_line)
            tail, skipping, start = b"", False, nl + 1
        last = data.rfind(b"\n", start)
        if last >= 0:
            yield data, start, last + 1, 0
            start = last + 1
        if len(data) - start >= max_line:  # the start of an over-long line: keep its head only
            yield _cut(data[start:start + max_line], max_line)
            skipping = True
        elif start < len(data):
            tail = data[start:]
    if tail:
        yield tail + b"\n", 0, len(tail) + 1, 0


def _cut(head: bytes, max_line: int) -> tuple[bytes, int, int, int]:
    line = head[:max_line] + b"\n"
    return line, 0, len(line), 1


class _alarm:
    """Interrupt a running Python regex at the deadline (main thread, POSIX only; else a no-op)."""

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline
        self.active = (deadline is not None and hasattr(signal, "setitimer")
                       and threading.current_thread() is threading.main_thread())

    def __enter__(self) -> _alarm:
        if self.active:
            remaining = max(self.deadline - time.monotonic(), 0.001)  # type: ignore[operator]
            self.old = signal.signal(signal.SIGALRM, _raise_budget)
            signal.setitimer(signal.ITIMER_REAL, remaining)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.active:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.old)


def _raise_budget(signum: int, frame: object) -> None:
    raise BudgetExceeded


@functools.lru_cache(maxsize=4)
def kb_matcher(root: str | None = None, engine: str = "auto") -> Matcher:
    """The matcher for a kb directory (default: the shipped kb), compiled once per process."""
    from envcheck.kb.entries import load_kb

    kb = load_kb(root)
    return Matcher(rules_from_entries(kb.entries), engine=engine, entry_ids=[e.id for e in kb.entries])
