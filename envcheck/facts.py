"""Typed facts: one frozen dataclass per section of `Facts` (system, python, cann, driver, npu, ranktable,
netdev, host, container), with the records inside them (a CANN install, an NPU device, a device NIC...).

The probe still produces plain dicts and a report stores them as JSON; these classes are the typed
reading of that JSON, and they round-trip it:

* ``Section.from_dict(d)`` reads a section dict. It never raises on content:
  - a key the class does not declare (written by a newer envcheck, or by hand) is kept in ``extra``;
  - a declared key whose value has the wrong type (``"count": "8"``) leaves the typed attribute at
    None, keeps the raw value in ``extra`` and adds one line to ``problems``
    (``npu.count: expected an integer, got str '8'``);
  - ``None`` for any value means "absent / not installed / unknown", as in the probe.
  ``from_dict`` of something that is not a mapping gives an empty section with one problem.
* ``to_dict()`` gives back the same dict (same keys, same order, same values, extra keys included)
  for everything ``from_dict`` read. A section built in code (not read) emits its fields that are
  not None, in declaration order, then ``extra``.
* Every section and record is also a read-only ``Mapping`` over exactly the keys ``to_dict()`` emits,
  whose values are the ``to_dict()`` values (lists and dicts, as the probe wrote them), so code that
  reads ``facts.npu.get("chip")`` or ``inst["version"]`` keeps working while it moves to attributes
  (``facts.npu.chip``). ``len()`` counts those keys, so an empty section is falsy, as ``{}`` was.

Two records of one class are equal when their ``to_dict()`` are equal (and a record equals a dict
with the same items, as a Mapping does). Records are frozen; the dicts inside
``extra`` and the ``Any`` fields (``RankTableFacts.doc``) are copied on the way in and out, so the
record cannot be changed through them.
"""
from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, TypeVar

from envcheck.versions import canonical_name

__all__ = [
    "Record", "SystemFacts", "PythonFacts", "CannFacts", "CannInstall", "CannComponent", "CannPackage",
    "VersionCfg", "CannEnvironment", "EnvPath", "LdEntry", "DriverFacts", "NpuFacts", "NpuDevice",
    "NpuProcess", "RankTableFacts", "NetdevFacts", "NetdevDevice", "LinkChange", "HostFacts",
    "ContainerFacts", "SECTIONS",
]


# ---- value kinds: how one JSON value is checked, read and written back ---------------------------

class _WrongType(Exception):
    def __init__(self, where: str, expected: str, got: object) -> None:
        shown = repr(got)
        shown = shown if len(shown) <= 40 else shown[:40] + "..."
        super().__init__(f"{where}: expected {expected}, got {type(got).__name__} {shown}")


class _Kind:
    """One JSON value kind. `load` returns the typed value or raises _WrongType; `dump` inverts it."""

    expected = "a value"

    def load(self, value: Any, where: str, problems: list[str]) -> Any:
        raise NotImplementedError

    def dump(self, value: Any) -> Any:
        return value


class _Scalar(_Kind):
    def __init__(self, expected: str, *types: type) -> None:
        self.expected, self.types = expected, types

    def load(self, value: Any, where: str, problems: list[str]) -> Any:
        if isinstance(value, bool) and bool not in self.types:  # JSON true is not the number 1
            raise _WrongType(where, self.expected, value)
        if not isinstance(value, self.types):
            raise _WrongType(where, self.expected, value)
        return value


class _Json(_Kind):
    """Any JSON value of the given container type, kept as is (deep-copied in and out)."""

    def __init__(self, expected: str, *types: type) -> None:
        self.expected, self.types = expected, types

    def load(self, value: Any, where: str, problems: list[str]) -> Any:
        if self.types and not isinstance(value, self.types):
            raise _WrongType(where, self.expected, value)
        return copy.deepcopy(value)

    def dump(self, value: Any) -> Any:
        return copy.deepcopy(value)


class _Opt(_Kind):
    """The inner kind, or null (inside lists and dicts; a section's own fields always accept null)."""

    def __init__(self, inner: _Kind) -> None:
        self.inner, self.expected = inner, f"{inner.expected} or null"

    def load(self, value: Any, where: str, problems: list[str]) -> Any:
        return None if value is None else self.inner.load(value, where, problems)

    def dump(self, value: Any) -> Any:
        return None if value is None else self.inner.dump(value)


class _List(_Kind):
    """A JSON array, read as a tuple; one wrong item makes the whole array wrong (kept raw)."""

    def __init__(self, item: _Kind) -> None:
        self.item, self.expected = item, "a list"

    def load(self, value: Any, where: str, problems: list[str]) -> Any:
        if not isinstance(value, list):
            raise _WrongType(where, self.expected, value)
        inner: list[str] = []
        out = tuple(self.item.load(x, f"{where}[{i}]", inner) for i, x in enumerate(value))
        problems.extend(inner)
        return out

    def dump(self, value: Any) -> Any:
        return [self.item.dump(x) for x in value]


class _Dict(_Kind):
    """A JSON object with free keys (package names, interface names...), values of one kind."""

    def __init__(self, value: _Kind) -> None:
        self.value, self.expected = value, "an object"

    def load(self, value: Any, where: str, problems: list[str]) -> Any:
        if not isinstance(value, dict):
            raise _WrongType(where, self.expected, value)
        inner: list[str] = []
        out = {k: self.value.load(v, f"{where}.{k}", inner) for k, v in value.items()}
        problems.extend(inner)
        return out

    def dump(self, value: Any) -> Any:
        return {k: self.value.dump(v) for k, v in value.items()}


class _Rec(_Kind):
    """A nested record (read tolerantly: its own problems are reported, the record is kept)."""

    def __init__(self, cls: type[Record]) -> None:
        self.cls, self.expected = cls, "an object"

    def load(self, value: Any, where: str, problems: list[str]) -> Any:
        if not isinstance(value, Mapping):
            raise _WrongType(where, self.expected, value)
        rec = self.cls.from_dict(value, where)
        problems.extend(rec.problems)
        return rec

    def dump(self, value: Any) -> Any:
        return value.to_dict()


STR = _Scalar("a string", str)
INT = _Scalar("an integer", int)
NUM = _Scalar("a number", int, float)
BOOL = _Scalar("true or false", bool)
OBJECT = _Json("an object", dict)


def _f(kind: _Kind) -> Any:
    """A declared field: None by default (absent), read and written with `kind`."""
    return field(default=None, metadata={"kind": kind})


# ---- the base record ---------------------------------------------------------------------------

R = TypeVar("R", bound="Record")
_DECLARED: dict[type, dict[str, _Kind]] = {}


@dataclass(frozen=True, eq=False)
class Record(Mapping[str, Any]):
    """Base of every section and record: tolerant `from_dict`, exact `to_dict`, read-only Mapping view.

    Construct with keywords. `extra` holds keys the class does not declare (and wrong-typed values of
    declared keys), `problems` what `from_dict` could not read, `key_order` the keys as read (None
    when built in code)."""

    SECTION: ClassVar[str] = ""
    """Name used in problem messages (``npu``, ``cann.installs[0]``)."""

    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    problems: tuple[str, ...] = field(default=(), repr=False)
    key_order: tuple[str, ...] | None = field(default=None, repr=False)

    # -- reading / writing ------------------------------------------------------------------------
    @classmethod
    def declared(cls) -> dict[str, _Kind]:
        """{JSON key: kind} of the fields this class declares, in declaration order."""
        got = _DECLARED.get(cls)
        if got is None:
            got = {f.name: f.metadata["kind"] for f in fields(cls) if "kind" in f.metadata}
            _DECLARED[cls] = got
        return got

    @classmethod
    def from_dict(cls: type[R], d: Any, where: str | None = None) -> R:
        """Read a section dict (see the module docstring for what happens to unknown or wrong values)."""
        where = where or cls.SECTION or cls.__name__
        if d is None:
            return cls()
        if not isinstance(d, Mapping):
            return cls(problems=(f"{where}: expected an object, got {type(d).__name__}",), key_order=())
        decl = cls.declared()
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        problems: list[str] = []
        for key, value in d.items():
            kind = decl.get(key)
            if kind is None:
                extra[key] = copy.deepcopy(value)
            elif value is not None:
                try:
                    values[key] = kind.load(value, f"{where}.{key}", problems)
                except _WrongType as exc:
                    problems.append(str(exc))
                    extra[key] = copy.deepcopy(value)
        return cls(**values, extra=extra, problems=tuple(problems), key_order=tuple(d))

    def to_dict(self) -> dict[str, Any]:
        """The section as the probe wrote it (exactly, for a section read with `from_dict`)."""
        decl = self.declared()
        out: dict[str, Any] = {}
        for key in self._emitted(decl):
            if key in self.extra:
                out[key] = copy.deepcopy(self.extra[key])
            else:
                value = getattr(self, key)
                out[key] = None if value is None else decl[key].dump(value)
        return out

    def _emitted(self, decl: Mapping[str, _Kind]) -> list[str]:
        """Keys to_dict writes: those read (in order), then fields set in code, then extra keys."""
        keys = list(self.key_order or ())
        seen = set(keys)
        for name in decl:
            if name not in seen and getattr(self, name) is not None:
                keys.append(name)
                seen.add(name)
        keys.extend(k for k in self.extra if k not in seen)
        return keys

    # -- Mapping: the dict view old readers use ----------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        decl = self.declared()
        if key in self.extra:
            return copy.deepcopy(self.extra[key])
        if key in decl and key in self._emitted(decl):
            value = getattr(self, key)
            return None if value is None else decl[key].dump(value)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._emitted(self.declared()))

    def __len__(self) -> int:
        return len(self._emitted(self.declared()))

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self._emitted(self.declared())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Record):
            return type(self) is type(other) and self.to_dict() == other.to_dict()
        if isinstance(other, Mapping):  # as a Mapping does: equal to a dict with the same items
            return self.to_dict() == dict(other)
        return NotImplemented
    # defining __eq__ leaves __hash__ None: records compare by content, and the content holds dicts


# ---- system / python ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class SystemFacts(Record):
    """probe/system.py. Host-level values are None when the root is not ``/`` and no fixture says."""

    SECTION: ClassVar[str] = "system"
    os: str | None = _f(STR)
    distro: str | None = _f(STR)
    kernel: str | None = _f(STR)
    arch: str | None = _f(STR)
    glibc: str | None = _f(STR)
    hostname: str | None = _f(STR)
    cpu_count: int | None = _f(INT)
    shm_bytes: int | None = _f(INT)
    interfaces: dict[str, tuple[str, ...]] | None = _f(_Dict(_List(STR)))
    """{interface name: [IPv4 and IPv6 addresses]}"""
    cpu_model: str | None = _f(STR)
    mem_total_bytes: int | None = _f(INT)
    numa_nodes: int | None = _f(INT)
    open_files_limit: int | None = _f(INT)
    """-1 = unlimited"""
    memlock_limit: int | None = _f(INT)
    """-1 = unlimited"""


@dataclass(frozen=True, eq=False)
class PythonFacts(Record):
    """probe/pyenv.py: the target interpreter and the versions of the distributions envcheck asks about."""

    SECTION: ClassVar[str] = "python"
    executable: str | None = _f(STR)
    version: str | None = _f(STR)
    implementation: str | None = _f(STR)
    packages: dict[str, str | None] | None = _f(_Dict(_Opt(STR)))
    """{distribution: version, or None when not installed}"""
    package_files: dict[str, str] | None = _f(_Dict(STR))
    """{distribution: where its metadata was read}"""
    torch_npu_requires: str | None = _f(STR)
    """torch_npu's own torch requirement (``torch==2.1.0``)"""
    requested: str | None = _f(STR)
    """the --python path as given"""

    def package(self, name: str) -> str | None:
        """Installed version of a distribution (PEP 503 name match; None = absent)."""
        want = canonical_name(name)
        return next((v for k, v in (self.packages or {}).items() if canonical_name(k) == want), None)


# ---- cann --------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class CannComponent(Record):
    """One component's version.info: the release it belongs to, its internal version, the file."""

    version: str | None = _f(STR)
    internal: str | None = _f(STR)
    source: str | None = _f(STR)


@dataclass(frozen=True, eq=False)
class CannPackage(Record):
    """A kernels / ops package or an NNAL (ATB) package of an install."""

    name: str | None = _f(STR)
    version: str | None = _f(STR)
    source: str | None = _f(STR)
    build: str | None = _f(STR)


@dataclass(frozen=True, eq=False)
class VersionCfg(Record):
    """version.cfg: {source, running {component: release}, installed {component: [release, ...]}}."""

    source: str | None = _f(STR)
    running: dict[str, str] | None = _f(_Dict(STR))
    installed: dict[str, tuple[str, ...]] | None = _f(_Dict(_List(STR)))


@dataclass(frozen=True, eq=False)
class CannInstall(Record):
    """One toolkit install (probe/cann.py read_install)."""

    home: str | None = _f(STR)
    realpath: str | None = _f(STR)
    version: str | None = _f(STR)
    source: str | None = _f(STR)
    """the file the version was read from"""
    found_via: str | None = _f(STR)
    layout: str | None = _f(STR)
    """``classic`` or ``8.5+``"""
    latest: bool | None = _f(BOOL)
    arch: str | None = _f(STR)
    set_env: str | None = _f(STR)
    lib64: str | None = _f(STR)
    components: dict[str, CannComponent] | None = _f(_Dict(_Rec(CannComponent)))
    version_cfg: VersionCfg | None = _f(_Rec(VersionCfg))
    kernels: tuple[CannPackage, ...] | None = _f(_List(_Rec(CannPackage)))
    nnal: tuple[CannPackage, ...] | None = _f(_List(_Rec(CannPackage)))


@dataclass(frozen=True, eq=False)
class EnvPath(Record):
    """What one CANN variable points at, resolved inside the root."""

    value: str | None = _f(STR)
    realpath: str | None = _f(STR)
    exists: bool | None = _f(BOOL)
    lib64: str | None = _f(STR)


@dataclass(frozen=True, eq=False)
class LdEntry(Record):
    """One LD_LIBRARY_PATH entry."""

    path: str | None = _f(STR)
    realpath: str | None = _f(STR)
    exists: bool | None = _f(BOOL)


@dataclass(frozen=True, eq=False)
class CannEnvironment(Record):
    """probe/cann.py env_paths: the CANN variables, LD_LIBRARY_PATH, and where libascendcl / libhccl load from."""

    vars: dict[str, EnvPath] | None = _f(_Dict(_Rec(EnvPath)))
    ld_library_path: tuple[LdEntry, ...] | None = _f(_List(_Rec(LdEntry)))
    libs: dict[str, str | None] | None = _f(_Dict(_Opt(STR)))


@dataclass(frozen=True, eq=False)
class CannFacts(Record):
    """Every install found, which one is active (an index into installs) and the environment."""

    SECTION: ClassVar[str] = "cann"
    installs: tuple[CannInstall, ...] | None = _f(_List(_Rec(CannInstall)))
    active: int | None = _f(INT)
    environment: CannEnvironment | None = _f(_Rec(CannEnvironment))

    def active_install(self) -> CannInstall | None:
        installs = self.installs or ()
        if self.active is None or not 0 <= self.active < len(installs):
            return None
        return installs[self.active]


# ---- driver / npu ------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class DriverFacts(Record):
    """probe/driver.py: driver and firmware versions and the files they came from."""

    SECTION: ClassVar[str] = "driver"
    install_path: str | None = _f(STR)
    install_info: str | None = _f(STR)
    present: bool | None = _f(BOOL)
    version: str | None = _f(STR)
    version_source: str | None = _f(STR)
    firmware_version: str | None = _f(STR)
    firmware_source: str | None = _f(STR)
    firmware_package_version: str | None = _f(STR)
    tools: dict[str, bool] | None = _f(_Dict(BOOL))


@dataclass(frozen=True, eq=False)
class NpuDevice(Record):
    """One chip row pair of `npu-smi info` (probe/npu.py _row1 + _row2)."""

    id: int | None = _f(INT)
    name: str | None = _f(STR)
    health: str | None = _f(STR)
    power_w: float | None = _f(NUM)
    temp_c: float | None = _f(NUM)
    chip_id: int | None = _f(INT)
    phy_id: int | None = _f(INT)
    """A3: the physical chip id (what hccn_tool -i takes)"""
    device_id: int | None = _f(INT)
    """310P: the logical device id"""
    bus_id: str | None = _f(STR)
    aicore_pct: float | None = _f(NUM)
    memory_used_mb: int | None = _f(INT)
    memory_total_mb: int | None = _f(INT)
    hbm_used_mb: int | None = _f(INT)
    hbm_total_mb: int | None = _f(INT)
    logic_id: int | None = _f(INT)


@dataclass(frozen=True, eq=False)
class NpuProcess(Record):
    """One row of npu-smi's process table."""

    device: int | None = _f(INT)
    chip: int | None = _f(INT)
    pid: int | None = _f(INT)
    name: str | None = _f(STR)
    memory_mb: float | None = _f(NUM)


@dataclass(frozen=True, eq=False)
class NpuFacts(Record):
    """probe/npu.py: `npu-smi info` (whether it ran, what it said) and /dev/davinci*."""

    SECTION: ClassVar[str] = "npu"
    available: bool | None = _f(BOOL)
    path: str | None = _f(STR)
    version: str | None = _f(STR)
    tool_version: str | None = _f(STR)
    chip: str | None = _f(STR)
    count: int | None = _f(INT)
    npu_count: int | None = _f(INT)
    devices: tuple[NpuDevice, ...] | None = _f(_List(_Rec(NpuDevice)))
    processes: tuple[NpuProcess, ...] | None = _f(_List(_Rec(NpuProcess)))
    error: str | None = _f(STR)
    rc: int | None = _f(INT)
    timed_out: bool | None = _f(BOOL)
    seconds: float | None = _f(NUM)
    dcmi_code: int | None = _f(INT)
    dev_davinci: tuple[int, ...] | None = _f(_List(INT))


# ---- rank table / device network ---------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class RankTableFacts(Record):
    """probe/ranktable.py: the table RANK_TABLE_FILE names, {path, doc} or {path, error}; empty when unset."""

    SECTION: ClassVar[str] = "ranktable"
    path: str | None = _f(STR)
    doc: dict[str, Any] | None = _f(OBJECT)
    """the parsed JSON object, as read"""
    error: str | None = _f(STR)


@dataclass(frozen=True, eq=False)
class LinkChange(Record):
    time: str | None = _f(STR)
    state: str | None = _f(STR)


@dataclass(frozen=True, eq=False)
class NetdevDevice(Record):
    """What hccn_tool said about one device NIC (probe/hccn.py)."""

    id: int | None = _f(INT)
    link: str | None = _f(STR)
    ip: str | None = _f(STR)
    netmask: str | None = _f(STR)
    ip_missing: bool | None = _f(BOOL)
    net_health: str | None = _f(STR)
    tls_switch: int | None = _f(INT)
    tls_preconfigured: int | None = _f(INT)
    optical_present: bool | None = _f(BOOL)
    stat_time: str | None = _f(STR)
    link_up_count: int | None = _f(INT)
    link_changes: tuple[LinkChange, ...] | None = _f(_List(_Rec(LinkChange)))
    raw: dict[str, str] | None = _f(_Dict(STR))
    errors: dict[str, str] | None = _f(_Dict(STR))


@dataclass(frozen=True, eq=False)
class NetdevFacts(Record):
    """probe/hccn.py: hccn_tool per device, and /etc/hccn.conf."""

    SECTION: ClassVar[str] = "netdev"
    available: bool | None = _f(BOOL)
    tool: str | None = _f(STR)
    reason: str | None = _f(STR)
    devices: tuple[NetdevDevice, ...] | None = _f(_List(_Rec(NetdevDevice)))
    hccn_conf: dict[str, str] | None = _f(_Dict(STR))


# ---- host / container --------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class HostFacts(Record):
    """probe/host.py: host tuning read from files."""

    SECTION: ClassVar[str] = "host"
    cpu_governors: dict[str, int] | None = _f(_Dict(INT))
    """{governor: number of CPUs}"""
    thp: str | None = _f(STR)
    swap_total_bytes: int | None = _f(INT)
    kernel: str | None = _f(STR)
    npu_numa: dict[str, int | None] | None = _f(_Dict(_Opt(INT)))
    """{"npu <id>[ chip <n>]": NUMA node, None when the firmware reports no affinity}"""


@dataclass(frozen=True, eq=False)
class ContainerFacts(Record):
    """probe/container.py: is this a container, and were the devices and the driver handed in."""

    SECTION: ClassVar[str] = "container"
    in_container: bool | None = _f(BOOL)
    signals: tuple[str, ...] | None = _f(_List(STR))
    engine: str | None = _f(STR)
    davinci: tuple[int, ...] | None = _f(_List(INT))
    mgmt_devices: dict[str, bool] | None = _f(_Dict(BOOL))
    driver_dir: dict[str, bool] | None = _f(_Dict(BOOL))
    ascend_visible_devices: str | None = _f(STR)
    ascend_rt_visible_devices: str | None = _f(STR)
    ascend_runtime_options: str | None = _f(STR)


SECTIONS: dict[str, type[Record]] = {
    "system": SystemFacts, "python": PythonFacts, "cann": CannFacts, "driver": DriverFacts, "npu": NpuFacts,
    "ranktable": RankTableFacts, "netdev": NetdevFacts, "host": HostFacts, "container": ContainerFacts,
}
"""Facts field name -> its section class (`env` stays a plain {name: value} dict of strings)."""
