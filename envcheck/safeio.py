"""Bounded, regular-file-only reads; capped YAML and JSON; output files written atomically.

Every file envcheck reads because a user named it (``--facts``, ``--matrix``, ``compare`` inputs,
kb entries, version files under ``--root``, the search cache) goes through here, so a named pipe,
a device, ``/dev/zero``, a YAML alias bomb or 100 000 nested JSON arrays is a one-line error
(`InputError`, a `UsageError`) instead of a hang, a MemoryError or a traceback.
Output files are never an input of the same run, never written through a symlink that leads to a
regular file, and replaced atomically (temp file in the same directory + ``os.replace``).
"""
from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from collections.abc import Iterable
from typing import Any

from envcheck.errors import UsageError

DEFAULT_LIMIT = 64 * 1024 * 1024
"""Largest file read whole (64 MiB): far above any facts / matrix / report / kb file."""
MAX_JSON_DEPTH = 64
MAX_YAML_WEIGHT = 2_000_000
"""Cap on a YAML document's size after alias expansion, in nodes (+1 per 64 scalar characters)."""
MAX_YAML_ALIASES = 10_000


class InputError(UsageError):
    """A file that cannot be used as input: one line, exit 2."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def require_regular_file(path: str | os.PathLike[str], what: str = "") -> os.stat_result:
    """stat(path) (following symlinks) when it is a regular file; InputError otherwise. Never blocks."""
    label = f"{what} {os.fspath(path)}".strip()
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(f"cannot read {label}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"cannot read {label}: it is {_kind(st.st_mode)}, expected a regular file")
    return st


def read_bytes_bounded(path: str | os.PathLike[str], limit: int = DEFAULT_LIMIT, what: str = "") -> bytes:
    """Content of a regular file of at most `limit` bytes. Opens with O_NONBLOCK and checks the
    opened file's type (no race with a swap to a FIFO), so it never blocks on a pipe or device."""
    label = f"{what} {os.fspath(path)}".strip()
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise InputError(f"cannot read {label}: no such file") from None
    except OSError as exc:
        raise InputError(f"cannot read {label}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"cannot read {label}: it is {_kind(st.st_mode)}, expected a regular file")
        if st.st_size > limit:
            raise InputError(f"cannot read {label}: {st.st_size:,} bytes, more than the {limit:,} allowed")
        chunks, got = [], 0
        while got <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > limit:  # grew while being read
            raise InputError(f"cannot read {label}: more than the {limit:,} bytes allowed")
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(f"cannot read {label}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_text_bounded(path: str | os.PathLike[str], limit: int = DEFAULT_LIMIT, what: str = "") -> str:
    """UTF-8 text of a regular file of at most `limit` bytes (see read_bytes_bounded)."""
    data = read_bytes_bounded(path, limit, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        label = f"{what} {os.fspath(path)}".strip()
        raise InputError(f"cannot read {label}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


# ---------------------------------------------------------------------------- YAML

def _yaml_error_class() -> type:
    import yaml

    class YAMLBombError(yaml.YAMLError):
        """A YAML document that expands (through aliases) beyond the caps."""

        def __init__(self, problem: str) -> None:
            super().__init__(problem)
            self.problem = problem
            self.problem_mark = None

    return YAMLBombError


_BOMB: type | None = None


def yaml_bomb_error() -> type:
    """The exception class load_yaml_safely raises for alias bombs (a yaml.YAMLError subclass)."""
    global _BOMB
    if _BOMB is None:
        _BOMB = _yaml_error_class()
    return _BOMB


def _weigh(root: Any, max_weight: int) -> None:
    """Size of the node graph with every alias expanded; raises when over max_weight or cyclic."""
    import yaml

    weights: dict[int, int] = {}
    # iterative post-order walk over the node DAG (aliases share node objects)
    stack: list[tuple[Any, bool]] = [(root, False)]
    active: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            active.discard(key)
            if isinstance(node, yaml.ScalarNode):
                w = 1 + len(node.value) // 64
            elif isinstance(node, yaml.SequenceNode):
                w = 1 + sum(weights[id(c)] for c in node.value)
            else:
                w = 1 + sum(weights[id(k)] + weights[id(v)] for k, v in node.value)
            if w > max_weight:
                raise yaml_bomb_error()(f"document expands to more than {max_weight:,} nodes "
                                        "(YAML aliases, e.g. a 'billion laughs' bomb)")
            weights[key] = w
            continue
        if key in weights:
            continue
        if key in active:
            raise yaml_bomb_error()("recursive YAML alias (a node that contains itself)")
        active.add(key)
        stack.append((node, True))
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [x for kv in node.value for x in kv]
        else:
            children = []
        for c in children:
            if id(c) not in weights:
                stack.append((c, False))


def check_yaml_node(node: Any, max_weight: int = MAX_YAML_WEIGHT) -> None:
    """For callers with their own YAML loader (line numbers, duplicate keys): raise the bomb error when
    a composed node expands beyond the cap or contains itself. Call it between compose and construct."""
    if node is not None:
        _weigh(node, max_weight)


def load_yaml_safely(text: str, max_weight: int = MAX_YAML_WEIGHT, max_aliases: int = MAX_YAML_ALIASES) -> Any:
    """yaml.safe_load with alias expansion capped. Raises a yaml.YAMLError subclass (with `.problem`)
    for a bomb, a recursive alias or too many aliases, so callers' `except yaml.YAMLError` applies."""
    return load_yaml_node_safely(text, max_weight, max_aliases)[1]


def load_yaml_node_safely(text: str, max_weight: int = MAX_YAML_WEIGHT,
                          max_aliases: int = MAX_YAML_ALIASES) -> tuple[Any, Any]:
    """(composed node or None, constructed data) with the caps of load_yaml_safely; for callers that
    also need line numbers from the node marks (kb lint)."""
    import yaml

    loader_cls = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
    if text.count("*") > max_aliases:  # cheap upper bound on alias events before parsing
        aliases = sum(1 for ev in yaml.parse(text, Loader=loader_cls) if isinstance(ev, yaml.AliasEvent))
        if aliases > max_aliases:
            raise yaml_bomb_error()(f"more than {max_aliases:,} YAML aliases")
    loader = loader_cls(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise yaml_bomb_error()("nested too deeply") from None
        if node is None:
            return None, None
        _weigh(node, max_weight)
        try:
            return node, loader.construct_document(node)
        except RecursionError:
            raise yaml_bomb_error()("nested too deeply") from None
    finally:
        loader.dispose()


# ---------------------------------------------------------------------------- JSON

def json_depth_ok(obj: Any, max_depth: int) -> bool:
    """True when obj nests at most max_depth containers deep (iterative walk)."""
    stack = [(obj, 1)]
    while stack:
        cur, d = stack.pop()
        if isinstance(cur, (dict, list)):
            if d > max_depth:
                return False
            stack.extend((v, d + 1) for v in (cur.values() if isinstance(cur, dict) else cur))
    return True


def load_json_checked(text: str, expected: type | tuple[type, ...] = dict, what: str = "JSON document",
                      max_depth: int = MAX_JSON_DEPTH) -> Any:
    """json.loads with a depth limit and the top-level type checked; InputError (one line) otherwise."""
    try:
        obj = json.loads(text)
    except RecursionError:
        raise InputError(f"{what}: nested more than {max_depth} levels deep") from None
    except ValueError as exc:
        raise InputError(f"{what}: not valid JSON ({exc})") from None
    if not json_depth_ok(obj, max_depth):
        raise InputError(f"{what}: nested more than {max_depth} levels deep")
    if not isinstance(obj, expected):
        names = " or ".join(t.__name__ for t in (expected if isinstance(expected, tuple) else (expected,)))
        want = {"dict": "an object", "list": "an array"}.get(names, names)
        raise InputError(f"{what}: expected {want} at the top level, got {_json_type(obj)}")
    return obj


def _json_type(obj: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(obj), "a number")


def load_json_file(path: str | os.PathLike[str], expected: type | tuple[type, ...] = dict, what: str = "",
                   limit: int = DEFAULT_LIMIT, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """read_text_bounded + load_json_checked; errors name the file."""
    label = f"{what} {os.fspath(path)}".strip()
    return load_json_checked(read_text_bounded(path, limit, what), expected, label, max_depth)


# ---------------------------------------------------------------------------- output

def check_output_path(path: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str] | None] = ()) -> None:
    """InputError when writing `path` would destroy an input, go through a symlink to a regular file,
    or replace something that is not a regular file. Call it BEFORE the run, so a bad --junit fails fast."""
    p = os.fspath(path)
    if not p:
        raise InputError("output file name is empty")
    try:
        lst = os.lstat(p)
    except FileNotFoundError:
        lst = None
    except OSError as exc:
        raise InputError(f"cannot write {p}: {exc.strerror or exc}") from None
    if lst is not None and stat.S_ISLNK(lst.st_mode):
        try:
            target = os.stat(p)
        except OSError:
            raise InputError(f"refusing to write {p}: it is a symlink (dangling or looping)") from None
        if stat.S_ISREG(target.st_mode) or stat.S_ISDIR(target.st_mode):
            raise InputError(f"refusing to write {p}: it is a symlink to {os.path.realpath(p)}; "
                             "name the file itself")
        return  # /dev/stdout -> /proc/self/fd/1 and the like: a stream, written in place
    if lst is not None and stat.S_ISDIR(lst.st_mode):
        raise InputError(f"cannot write {p}: it is a directory")
    for inp in inputs:
        if not inp or inp == "-":
            continue
        try:
            same = os.path.samefile(p, inp)
        except OSError:
            continue
        if same:
            raise InputError(f"refusing to write {p}: it is also an input of this run ({os.fspath(inp)})")


def write_output_atomically(path: str | os.PathLike[str], text: str,
                            inputs: Iterable[str | os.PathLike[str] | None] = ()) -> None:
    """Write text to path: never an input (same inode), never through a symlink to a file, and
    atomically (temp file in the same directory, then os.replace). A character device or FIFO
    (e.g. /dev/stdout) is written in place. InputError (one line) on any failure."""
    p = os.fspath(path)
    inputs = list(inputs)
    check_output_path(p, inputs)
    data = text.encode("utf-8")
    try:
        st = os.stat(p)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        try:
            fd = os.open(p, os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)
        except OSError as exc:
            raise InputError(f"cannot write {p}: {exc.strerror or exc}") from None
        return
    parent = os.path.dirname(os.path.abspath(p))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(p)}.", suffix=".tmp", dir=parent)
        try:
            _write_all(fd, data)
            mode = stat.S_IMODE(st.st_mode) if st is not None else (0o666 & ~_umask())
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.replace(tmp, p)
        tmp = None
    except OSError as exc:
        if exc.errno == errno.EISDIR:
            raise InputError(f"cannot write {p}: it is a directory") from None
        raise InputError(f"cannot write {p}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _umask() -> int:
    old = os.umask(0o022)
    os.umask(old)
    return old


# ---------------------------------------------------------------------------- partial reads

class CountingLines:
    """Iterate a binary stream's lines, counting them; a read error (a truncated or corrupt .gz,
    an I/O error) ends the iteration and is kept in `.error` instead of discarding what was read.

        reader = CountingLines(gzip.GzipFile(fileobj=fh))
        for line in reader: ...
        if reader.error: note it and make the exit status non-ok (reader.partial_note(path))
    """

    def __init__(self, stream: Any) -> None:
        self.stream, self.lines, self.bytes, self.error = stream, 0, 0, ""

    def __iter__(self) -> Any:
        import zlib

        try:
            for line in self.stream:
                self.lines += 1
                self.bytes += len(line)
                yield line
        except EOFError as exc:  # gzip: "Compressed file ended before the end-of-stream marker was reached"
            self.error = f"truncated stream ({exc})"
        except (OSError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
            self.error = f"unreadable stream ({getattr(exc, 'strerror', None) or exc})"

    def partial_note(self, label: str) -> str:
        """'train.log.gz: truncated .gz: read 49,859 lines of a truncated stream (...)' or ''."""
        if not self.error:
            return ""
        kind = "truncated .gz" if label.endswith(".gz") and self.error.startswith("truncated") else "partial read"
        return f"{label}: {kind}: read {self.lines:,} lines before the {self.error}; results are partial"


def walk_errors(top: str) -> tuple[list[str], list[str]]:
    """(regular files under top, sorted; errors) — an unreadable directory is an error, not silence
    (os.walk drops them unless told). FIFOs, sockets and devices are skipped (they may block)."""
    files: list[str] = []
    errors: list[str] = []

    def onerror(exc: OSError) -> None:
        errors.append(f"{exc.filename}: cannot read directory ({exc.strerror or exc})")

    for dirpath, dirnames, filenames in os.walk(top, onerror=onerror):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            try:
                if stat.S_ISREG(os.stat(path).st_mode):
                    files.append(path)
            except OSError as exc:
                errors.append(f"{path}: {exc.strerror or exc}")
    return files, errors
