"""`envcheck kb search`: ranked, typo-tolerant, bilingual search over kb entries (no torch, no jieba).

Tokens: lower-cased ASCII words (``torch_npu`` also yields ``torch`` and ``npu``) and CJK
character bigrams, so Chinese queries work without a segmenter. An error or check code in the
query (``EI0006``, ``ERR02200``, ``EC201``) puts the entries that declare it first, then entries that
mention it in patterns, examples or body. Unknown query words fall back to prefix and difflib
matches over the vocabulary. The index is cached as JSON (data, never code: no pickle) in the user
cache dir, keyed by the kb files' paths, sizes and mtimes, and validated before use (a cache file
that is not ours, not a regular file, or not the expected shape is ignored and rebuilt); it is
never written inside the kb or the package.
"""
from __future__ import annotations

import difflib
import hashlib
import json
import math
import os
import re
import stat
import tempfile
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INDEX_VERSION = 7
MAX_CACHE_BYTES = 64 * 1024 * 1024
MAX_ENTRY_BYTES = 1024 * 1024
FIELD_WEIGHTS = {
    "id": 3.0, "title": 3.0, "title_zh": 3.0, "codes": 3.0, "symptoms": 2.0, "summary_zh": 2.0,
    "tags": 1.5, "category": 1.5, "patterns": 1.0, "body": 1.0,
}
# CANN (EI0006, E39999), torch_npu (ERR02200), envcheck (EC201) and ACL return codes (507035).
CODE_RE = re.compile(r"^(e[a-z0-9][0-9]{4}|err[0-9]{5}|ec[0-9]{3}|[1-5][0-9]{5})$")
ASCII_RE = re.compile(r"[a-z0-9_]+")
# a camelCase / PascalCase identifier (tlsStatus, rtMemQueueEnQueueBuff, OpsKernelInfoStore, HCCLComm) and its parts
CAMEL_WORD_RE = re.compile(r"[A-Za-z0-9]*(?:[a-z][A-Z]|[A-Z]{2}[a-z])[A-Za-z0-9]*")
CAMEL_PART_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
CJK_RUN_RE = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
CJK_RE = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
STOP = frozenset("a an and are as at be by can for from how in into is it its not of on or that the "
                 "this to was when with".split())
# Chinese words people type -> the English words entries use (cross-language recall).
GLOSSARY = {
    "超时": "timeout hang", "卡住": "hang", "挂起": "hang", "版本": "version versions",
    "不匹配": "mismatch", "不兼容": "mismatch incompatible", "配套": "matrix version", "内存": "memory",
    "显存": "memory", "不足": "oom", "找不到": "not found", "驱动": "driver", "固件": "firmware",
    "算子": "operator op", "设备": "device npu", "初始化": "init", "通信": "hccl communication",
    "集合通信": "collective hccl", "建链": "link socket", "网卡": "nic network", "环境变量": "environment",
    "精度": "precision numerics", "溢出": "overflow", "性能": "performance slow", "慢": "slow",
    "数据": "data", "数据加载": "dataloader pipeline data", "预处理": "preprocessing",
    "断点": "checkpoint resume", "续训": "resume", "保存": "save checkpoint", "迁移": "migration cuda",
    "日志": "log", "共享内存": "shm", "回退": "fallback", "报错": "error",
    "堆栈": "stacktrace traceback", "混合精度": "mixed precision amp autocast", "生效": "effect disabled",
    "升级": "upgrade upgrading", "索引": "indexing index", "赋值": "assignment",
}


@dataclass(frozen=True)
class Hit:
    id: str
    title: str
    title_zh: str
    category: str
    path: str
    score: float
    error_codes: tuple[str, ...]
    checks: tuple[str, ...]
    summary_zh: str

    def to_dict(self) -> dict[str, Any]:
        from envcheck.kb.site import page_path

        d = {k: getattr(self, k) for k in ("id", "title", "title_zh", "category", "summary_zh", "path")}
        d.update(score=round(self.score, 3), error_codes=list(self.error_codes), checks=list(self.checks),
                 url=page_path(self.category, self.id))
        return d


def tokens(text: str) -> list[str]:
    """Index/query tokens: ASCII words (and their _ parts), then CJK bigrams (unigram for 1 char)."""
    low = text.lower()
    out = [w for w in ASCII_RE.findall(low) if w not in STOP]
    out += [p for w in out if "_" in w for p in w.split("_") if p and p not in STOP]
    for run in CJK_RUN_RE.findall(text):
        out.extend([run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)])
    return out


def camel_parts(text: str) -> list[tuple[str, list[str]]]:
    """(lower-cased identifier, its lower-cased parts) for each camelCase / PascalCase identifier in text."""
    return [(w.lower(), [p for p in (q.lower() for q in CAMEL_PART_RE.findall(w)) if p not in STOP])
            for w in CAMEL_WORD_RE.findall(text)]


# ---------------------------------------------------------------------------- index

def _stamp(root: Path) -> list[list[Any]]:
    out: list[list[Any]] = []
    for cat in sorted(os.scandir(root), key=lambda d: d.name):
        if not cat.is_dir() or cat.name.startswith((".", "_")):
            continue
        for f in os.scandir(cat.path):
            if f.name.endswith(".md"):
                try:
                    st = f.stat()
                except OSError:  # a dangling symlink
                    continue
                out.append([f"{cat.name}/{f.name}", st.st_mtime_ns, st.st_size])
    out.sort()
    return out


def cache_dir() -> Path | None:
    """$ENVCHECK_CACHE_DIR, else $XDG_CACHE_HOME/envcheck, else ~/.cache/envcheck."""
    if os.environ.get("ENVCHECK_CACHE_DIR"):
        return Path(os.environ["ENVCHECK_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "envcheck" if base else None


def _cache_file(root: Path) -> Path | None:
    d = cache_dir()
    if d is None:
        return None
    key = hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:16]
    return d / f"kb-index-{key}.json"


# the index last loaded in this process, per (kb root, cache file): a process that diagnoses many inputs (a
# test run, a cluster's logs) parses the ~1 MB cache once, not once per diagnosis; the stamp still decides
_LOADED: dict[tuple[str, str], tuple[list[list[Any]], dict[str, Any]]] = {}


def load_index(root: Path) -> dict[str, Any]:
    """The search index of root, from the cache when the files are unchanged and the cache is valid.
    The returned index is shared: callers must not modify it."""
    stamp = _stamp(root)
    cf = _cache_file(root)
    key = (str(root.resolve()), str(cf))
    seen = _LOADED.get(key)
    if seen is not None and seen[0] == stamp:
        return seen[1]
    idx = _read_cache(cf) if cf is not None else None
    if idx is None or idx.get("stamp") != stamp:
        idx = build_index(root, stamp)
        if cf is not None:
            _write_cache(cf, idx)
    if len(_LOADED) >= 8:
        _LOADED.clear()
    _LOADED[key] = (stamp, idx)
    return idx


def _read_cache(cf: Path) -> dict[str, Any] | None:
    """The cached index when cf is a regular file of ours holding a well-formed index, else None."""
    from envcheck.safeio import InputError, load_json_checked, read_text_bounded

    try:
        st = os.lstat(cf)
        if not stat.S_ISREG(st.st_mode) or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
            return None  # a symlink, a FIFO or a file another user planted in a shared cache dir
        idx = load_json_checked(read_text_bounded(cf, MAX_CACHE_BYTES), dict, str(cf), max_depth=8)
    except (OSError, InputError):
        return None
    return idx if valid_index(idx) else None


def valid_index(idx: Any) -> bool:
    """True when idx has exactly the shape build_index produces (types and index ranges)."""
    try:
        if not isinstance(idx, dict) or idx.get("version") != INDEX_VERSION:
            return False
        entries, postings, vocab, stamp = idx["entries"], idx["postings"], idx["vocab"], idx["stamp"]
        if not (isinstance(entries, list) and isinstance(postings, dict) and isinstance(vocab, list)
                and isinstance(stamp, list)):
            return False
        for row in stamp:
            if not (isinstance(row, list) and len(row) == 3 and isinstance(row[0], str)
                    and all(type(x) is int for x in row[1:])):
                return False
        for e in entries:
            if not isinstance(e, dict):
                return False
            for k in ("id", "title", "title_zh", "category", "summary_zh", "path"):
                if not isinstance(e.get(k), str):
                    return False
            for k in ("error_codes", "checks", "declared", "mentions"):
                if not (isinstance(e.get(k), list) and all(isinstance(x, str) for x in e[k])):
                    return False
        n = len(entries)
        for plist in postings.values():
            if not isinstance(plist, list):
                return False
            for p in plist:
                if not (isinstance(p, list) and len(p) == 2 and type(p[0]) is int and 0 <= p[0] < n
                        and isinstance(p[1], (int, float)) and math.isfinite(p[1])):
                    return False
        return vocab == sorted(postings) and all(isinstance(v, str) for v in vocab)
    except (KeyError, TypeError, AttributeError):
        return False


def _write_cache(cf: Path, idx: dict[str, Any]) -> None:
    try:
        cf.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=cf.name + ".", suffix=".tmp", dir=str(cf.parent))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(idx, fh, ensure_ascii=False, separators=(",", ":"))
            os.replace(tmp, cf)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass  # a read-only home is fine: search just rebuilds next time


def _front_matter(path: Path) -> tuple[dict, str] | None:
    import yaml

    from envcheck.kb.entries import FRONT_RE
    from envcheck.safeio import InputError, load_yaml_safely, read_text_bounded

    try:
        m = FRONT_RE.match(read_text_bounded(path, MAX_ENTRY_BYTES))
        meta = load_yaml_safely(m.group(1)) if m else None
    except (InputError, yaml.YAMLError):
        return None
    return (meta, m.group(2)) if isinstance(meta, dict) and m else None


def _strs(v: Any) -> list[str]:
    """A front-matter list of scalars as strings (a scalar is a one-item list; nested values dropped)."""
    if v is None:
        return []
    items = v if isinstance(v, (list, tuple)) else [v]
    return [str(x) for x in items if isinstance(x, (str, int, float)) and not isinstance(x, bool)]


def _str(v: Any) -> str:
    return str(v) if isinstance(v, (str, int, float)) and not isinstance(v, bool) else ""


def build_index(root: Path, stamp: list[list[Any]]) -> dict[str, Any]:
    entries: list[dict[str, Any]] = []
    postings: dict[str, list[list[Any]]] = {}
    for rel, _m, _s in stamp:
        got = _front_matter(root / rel)
        if got is None:
            continue
        meta, body = got
        eid = _str(meta.get("id")) or Path(rel).stem
        raw = meta.get("patterns")
        pats = [p for p in (raw if isinstance(raw, list) else []) if isinstance(p, dict)]
        pattern_text = " ".join(_str(p.get("regex")) + " " + " ".join(_strs(p.get("examples"))) for p in pats)
        declared = sorted({c.upper().lstrip("-") for c in _strs(meta.get("error_codes")) + _strs(meta.get("checks"))})
        e: dict[str, Any] = {
            "id": eid, "title": _str(meta.get("title")), "title_zh": _str(meta.get("title_zh")),
            "category": _str(meta.get("category")) or Path(rel).parent.name,
            "summary_zh": _str(meta.get("summary_zh")), "path": str(root / rel),
            "error_codes": _strs(meta.get("error_codes")), "checks": _strs(meta.get("checks")),
            "declared": declared,
        }
        fields = {
            "id": eid.replace("-", " "), "title": e["title"], "title_zh": e["title_zh"],
            "codes": " ".join(declared), "symptoms": " ".join(_strs(meta.get("symptoms"))),
            "summary_zh": e["summary_zh"], "tags": " ".join(_strs(meta.get("tags"))).replace("-", " "),
            "category": e["category"].replace("-", " "), "patterns": pattern_text, "body": body,
        }
        weights: dict[str, float] = {}
        mentions: set[str] = set()
        for name, text in fields.items():
            counts = Counter(tokens(text))
            for tok, n in counts.items():
                weights[tok] = weights.get(tok, 0.0) + FIELD_WEIGHTS[name] * (1.0 + math.log(n))
            if name in ("patterns", "body"):
                mentions.update(t.upper() for t in counts if CODE_RE.match(t))
        e["mentions"] = sorted(mentions)
        i = len(entries)
        entries.append(e)
        for tok, w in weights.items():
            postings.setdefault(tok, []).append([i, w])
    return {"version": INDEX_VERSION, "stamp": stamp, "entries": entries, "postings": postings,
            "vocab": sorted(postings)}


# ---------------------------------------------------------------------------- query

def _expand(query: str, idx: dict[str, Any]) -> list[tuple[str, str, float]]:
    """(query token, index token, similarity): exact 1.0, prefix 0.7, fuzzy <= 0.8, glossary 0.6."""
    postings, vocab = idx["postings"], idx["vocab"]
    out: list[tuple[str, str, float]] = []
    for tok in dict.fromkeys(tokens(query)):
        if tok in postings:
            out.append((tok, tok, 1.0))
        elif not CJK_RE.match(tok) and len(tok) >= 3:
            out.extend((tok, v, sim) for v, sim in _near(tok, vocab))
    for zh, en in GLOSSARY.items():
        if zh in query:
            out.extend((zh, w, 0.6) for w in en.split() if w in postings)
    return out


def _near(tok: str, vocab: list[str]) -> list[tuple[str, float]]:
    i = bisect_left(vocab, tok)
    prefixed: list[tuple[str, float]] = []
    while i < len(vocab) and vocab[i].startswith(tok) and len(prefixed) < 5:
        prefixed.append((vocab[i], 0.7))
        i += 1
    if prefixed:
        return prefixed
    if len(tok) < 4:
        return []
    cands = [v for v in vocab if abs(len(v) - len(tok)) <= 2 and not CJK_RE.match(v)]
    close = difflib.get_close_matches(tok, cands, n=3, cutoff=0.75)
    return [(c, 0.8 * difflib.SequenceMatcher(None, tok, c).ratio()) for c in close]


def search(query: str, root: Path | None = None, limit: int = 10) -> list[Hit]:
    """Entries ranked for query (best first); [] when nothing matches."""
    from envcheck import resources

    idx = load_index(Path(root) if root else resources.kb_dir())
    entries, postings = idx["entries"], idx["postings"]
    n = max(len(entries), 1)
    scores: dict[int, float] = {}
    matched: dict[int, set[str]] = {}
    for qtok, tok, sim in _expand(query, idx):
        plist = postings.get(tok, ())
        idf = math.log(1.0 + n / max(len(plist), 1))
        for i, w in plist:
            scores[i] = scores.get(i, 0.0) + sim * idf * w
            matched.setdefault(i, set()).add(qtok)
    qtoks = set(tokens(query))
    for i in list(scores):  # entries that match every query word rank above partial matches
        scores[i] *= 0.5 + 0.5 * len(matched[i] & qtoks) / max(len(qtoks), 1)
    for code in (t.upper() for t in qtoks if not CJK_RE.match(t)):
        for i, e in enumerate(entries):  # a code the entry declares ranks it first
            if code in e["declared"]:
                scores[i] = scores.get(i, 0.0) + 1000.0
            elif CODE_RE.match(code.lower()) and code in e["mentions"]:
                scores[i] = scores.get(i, 0.0) + 500.0
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], entries[kv[0]]["id"]))
    return [_hit(entries[i], s) for i, s in ranked[:limit] if s > 0]


def _hit(e: dict[str, Any], score: float) -> Hit:
    return Hit(e["id"], e["title"], e["title_zh"], e["category"], e["path"], score,
               tuple(e["error_codes"]), tuple(e["checks"]), e["summary_zh"])
