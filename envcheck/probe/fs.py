"""Read the filesystem side of a machine from a sysroot: path resolution, guarded reads, key=value files.

Every path a probe handles is a *machine path* (``/usr/local/Ascend/...``). `Root` maps it onto
the directory given with ``--root`` and resolves symlinks itself, so an absolute link target
(``cann -> /usr/local/Ascend/cann-8.5.0``) stays inside the sysroot and a link loop is
reported as ELOOP instead of being followed forever.
"""
from __future__ import annotations

import errno
import os
import re
import stat

MAX_HOPS = 40
MAX_BYTES = 256 * 1024


class ProbeError(Exception):
    """A file exists but could not be read or made sense of (becomes a Facts.probe_errors entry)."""


class Root:
    """A sysroot. ``errors`` collects what could not be read, keyed ``file:<path>`` or ``<area>:<what>``."""

    def __init__(self, root: str = "/") -> None:
        self.root = os.path.abspath(root)
        self.errors: dict[str, str] = {}

    # ---- paths -----------------------------------------------------------------------
    def host(self, path: str) -> str:
        """The host path of a machine path (no symlink resolution)."""
        path = "/" + path.lstrip("/")
        return path if self.root == "/" else self.root + path

    def resolve(self, path: str) -> str:
        """Machine path with every symlink resolved inside the root; missing tails are kept as is.

        Raises OSError(ELOOP) on a symlink loop.
        """
        parts: list[str] = [p for p in path.split("/") if p]
        parts.reverse()
        cur = "/"
        hops = 0
        while parts:
            part = parts.pop()
            if part == ".":
                continue
            if part == "..":
                cur = os.path.dirname(cur) or "/"
                continue
            nxt = cur.rstrip("/") + "/" + part
            try:
                st = os.lstat(self.host(nxt))
            except OSError:
                rest = "/".join(reversed(parts))
                return os.path.normpath(nxt + ("/" + rest if rest else ""))
            if stat.S_ISLNK(st.st_mode):
                hops += 1
                if hops > MAX_HOPS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)
                target = os.readlink(self.host(nxt))
                if target.startswith("/"):
                    cur = "/"
                parts.extend(reversed([p for p in target.split("/") if p]))
            else:
                cur = nxt
        return cur

    def real(self, path: str, area: str = "path") -> str | None:
        """Resolved machine path if it exists, else None; a loop is recorded as a probe error."""
        try:
            rp = self.resolve(path)
        except OSError as exc:
            loop = exc.errno == errno.ELOOP
            self.errors[f"{area}:{path}"] = f"{exc.strerror or exc} (symlink loop)" if loop else str(exc)
            return None
        return rp if os.path.lexists(self.host(rp)) else None

    def isdir(self, path: str) -> bool:
        rp = self._quiet(path)
        return rp is not None and os.path.isdir(self.host(rp))

    def isfile(self, path: str) -> bool:
        rp = self._quiet(path)
        return rp is not None and os.path.isfile(self.host(rp))

    def exists(self, path: str) -> bool:
        rp = self._quiet(path)
        return rp is not None and os.path.lexists(self.host(rp))

    def _quiet(self, path: str) -> str | None:
        try:
            return self.resolve(path)
        except OSError:
            return None

    def listdir(self, path: str) -> list[str]:
        """Sorted names in a directory; [] when absent; an unreadable directory is recorded."""
        rp = self.real(path, "dir")
        if rp is None:
            return []
        try:
            return sorted(os.listdir(self.host(rp)))
        except NotADirectoryError:
            return []
        except OSError as exc:
            self.errors[f"dir:{path}"] = exc.strerror or str(exc)
            return []

    # ---- reading ---------------------------------------------------------------------
    def read_text(self, path: str, kind: str = "file") -> str | None:
        """Text of a file, or None when it does not exist.

        A file that exists but cannot be used (loop, directory, permission, binary, not UTF-8)
        is recorded under ``<kind>:<path>`` and None is returned. CRLF line ends are accepted.
        """
        try:
            rp = self.resolve(path)
        except OSError as exc:
            self.errors[f"{kind}:{path}"] = f"{exc.strerror or exc} (symlink loop)"
            return None
        hp = self.host(rp)
        if not os.path.lexists(hp):
            return None
        try:
            data = read_head(hp, MAX_BYTES + 1)
        except IsADirectoryError:
            self.errors[f"{kind}:{path}"] = "is a directory, expected a file"
            return None
        except ProbeError as exc:
            self.errors[f"{kind}:{path}"] = str(exc)
            return None
        except OSError as exc:
            self.errors[f"{kind}:{path}"] = exc.strerror or str(exc)
            return None
        try:
            return decode(data)
        except ProbeError as exc:
            self.errors[f"{kind}:{path}"] = str(exc)
            return None

    def note(self, key: str, why: str) -> None:
        self.errors[key] = why


def read_head(host_path: str, limit: int) -> bytes:
    """At most `limit` bytes of a regular file. Opened O_NONBLOCK and type-checked on the open
    descriptor, so a named pipe or a device planted as a version file never blocks the probe."""
    fd = os.open(host_path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        if not stat.S_ISREG(st.st_mode):
            what = ("a named pipe" if stat.S_ISFIFO(st.st_mode) else "a character device" if stat.S_ISCHR(st.st_mode)
                    else "a block device" if stat.S_ISBLK(st.st_mode) else "a socket")
            raise ProbeError(f"is {what}, expected a regular file")
        chunks, got = [], 0
        while got < limit:
            chunk = os.read(fd, limit - got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def decode(data: bytes) -> str:
    """Bytes of a small text file → str; binary or non-UTF-8 content raises ProbeError."""
    if len(data) > MAX_BYTES:
        raise ProbeError(f"larger than {MAX_BYTES // 1024} KiB, not a version file")
    if b"\x00" in data:
        raise ProbeError("binary content (NUL bytes), expected KEY=VALUE text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProbeError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


_KV = re.compile(r"^\s*([A-Za-z_][\w\- .]*?)\s*=\s*(.*?)\s*$")
_KC = re.compile(r"^\s*([A-Za-z][\w\- ./]*?)\s*:\s*(.*?)\s*$")


def parse_kv(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines (keys kept as written; later duplicates lose; quotes stripped)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        m = _KV.match(line)
        if m and m.group(1) not in out:
            out[m.group(1)] = _unquote(m.group(2))
    return out


def parse_colon(text: str) -> dict[str, str]:
    """``Key : Value`` lines (NNAL / MindIE / npu-smi -t style); split on the first colon."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = _KC.match(line)
        if m and m.group(1) not in out:
            out[m.group(1)] = m.group(2)
    return out


def _unquote(v: str) -> str:
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        return v[1:-1]
    return v


def first(d: dict[str, str], *keys: str) -> tuple[str | None, str | None]:
    """(key, value) of the first key present with a non-empty value."""
    for k in keys:
        v = d.get(k)
        if v:
            return k, v
    return None, None
