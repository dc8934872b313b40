"""Find every CANN toolkit install under a root and read its versions, kernels and NNAL packages.

Probe order (shared/research/ascend-artifacts.md §8): $ASCEND_HOME_PATH, $ASCEND_TOOLKIT_HOME,
Toolkit_InstallPath of /etc/Ascend/ascend_cann_install.info, then /usr/local/Ascend/{cann,
ascend-toolkit/latest, cann-*, ascend-toolkit/<release>} and the same under ~/Ascend. Nothing is
sourced or executed; every version carries the file it came from.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from envcheck.probe.fs import Root, first, parse_colon, parse_kv
from envcheck.versions import lenient_key

BASES = ("/usr/local/Ascend",)
ARCHES = ("aarch64-linux", "x86_64-linux", "arm64-linux")
CLASSIC_COMPONENTS = ("runtime", "compiler", "hccl", "opp", "toolkit", "opp_kernel")
# 8.5+: share/info/<pkg>/version.info; the runtime's own legacy-name map (research §2.7).
SHARE_INFO = {
    "runtime": ("runtime",),
    "compiler": ("bisheng-compiler", "bisheng_compiler"),
    "hccl": ("hccl",),
    "toolkit": ("oam-tools", "oam_tools"),
    "opp": ("ops-legacy", "ops_legacy"),
}
_CFG = re.compile(r"^(?P<comp>[a-z_]+?)_(?P<kind>running|upgrade|installed)_version=(?P<v>(\[[^\]]*\])+)\s*$")
_CFG_ENTRY = re.compile(r"\[([^:\]]*):([^\]]*)\]")
_RELEASE_DIR = re.compile(r"^\d+\.\d+")


def probe(fs: Root, env: Mapping[str, str]) -> dict[str, Any]:
    """Facts.cann: {"installs": [...], "active": index or None}."""
    installs: list[dict[str, Any]] = []
    by_id: dict[str, int] = {}
    latest_ids: list[str] = []
    env_id: str | None = None
    for path, source in candidates(fs, env):
        ident = identity(fs, path)
        if ident is None:
            continue
        if source.startswith("$ASCEND_HOME_PATH") and env_id is None:
            env_id = ident
        if path.rstrip("/").endswith(("/ascend-toolkit/latest", "/Ascend/cann")):
            latest_ids.append(ident)
        if ident in by_id:
            continue
        by_id[ident] = len(installs)
        installs.append(read_install(fs, path, ident, source, env))
    for ident in latest_ids:
        installs[by_id[ident]]["latest"] = True
    return {"installs": installs, "active": _active(installs, by_id, env_id, latest_ids)}


def candidates(fs: Root, env: Mapping[str, str]) -> list[tuple[str, str]]:
    """(machine path, why it was looked at) in probe order; duplicates removed later by identity."""
    out: list[tuple[str, str]] = []
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        if env.get(var):
            out.append((env[var], f"${var}"))
    bases = list(BASES)
    home = env.get("HOME")
    if home and home != "/":
        bases.append(home.rstrip("/") + "/Ascend")
    info_files = ["/etc/Ascend/ascend_cann_install.info"] + [b + "/ascend_cann_install.info" for b in bases[1:]]
    for info in info_files:
        text = fs.read_text(info)
        if text:
            p = parse_kv(text).get("Toolkit_InstallPath")
            if p:
                p = p.rstrip("/")
                out.append((p + "/latest" if p.endswith("/ascend-toolkit") else p, info))
    for base in bases:
        out.append((base + "/cann", base + "/cann"))
        out.append((base + "/ascend-toolkit/latest", base + "/ascend-toolkit/latest"))
        for name in sorted(fs.listdir(base), key=lenient_key, reverse=True):
            if name.startswith("cann-"):
                out.append((f"{base}/{name}", f"{base}/cann-*"))
        for name in sorted(fs.listdir(base + "/ascend-toolkit"), key=lenient_key, reverse=True):
            if _RELEASE_DIR.match(name):
                out.append((f"{base}/ascend-toolkit/{name}", f"{base}/ascend-toolkit/<release>"))
    return out


def identity(fs: Root, path: str) -> str | None:
    """The real directory of an install: a classic `latest/` is a dir of symlinks into the release dir."""
    rp = fs.real(path, "cann")
    if rp is None or not fs.isdir(rp):
        return None
    for comp in ("runtime", "compiler", "opp"):
        link = fs.real(f"{rp}/{comp}", "cann")
        if link and link != f"{rp}/{comp}":
            return link.rsplit("/", 1)[0]
    return rp


def read_install(fs: Root, home: str, ident: str, source: str, env: Mapping[str, str]) -> dict[str, Any]:
    layout = "8.5+" if fs.isdir(ident + "/share/info") or ident.rsplit("/", 1)[-1].startswith("cann-") else "classic"
    arch_dir = next((f"{home}/{a}" for a in ARCHES if fs.isdir(f"{home}/{a}")), None)
    components = read_components(fs, home, layout)
    version, vsource = toolkit_version(fs, home, arch_dir, components)
    return {
        "home": home,
        "realpath": ident,
        "version": version,
        "source": vsource,
        "found_via": source,
        "layout": layout,
        "latest": False,
        "arch": arch_dir.rsplit("/", 1)[-1].split("-")[0] if arch_dir else None,
        "set_env": set_env_path(fs, home, ident),
        "lib64": fs.real(home.rstrip("/") + "/lib64", "cann"),
        "components": components,
        "version_cfg": version_cfg_summary(fs, home + "/version.cfg"),
        "kernels": read_kernels(fs, home, arch_dir, components),
        "nnal": read_nnal(fs, home, env),
    }


def toolkit_version(fs: Root, home: str, arch_dir: str | None,
                    components: dict[str, dict[str, Any]]) -> tuple[str | None, str | None]:
    """The release version, first hit wins (research §8 step 3); (version, file it came from)."""
    path = home + "/share/info/runtime/version.info"
    v = _kv_value(fs, path, "Version")
    if v:
        return v, path
    if arch_dir:
        path = arch_dir + "/ascend_toolkit_install.info"
        v = _kv_value(fs, path, "version")
        if v:
            return v, path
    path = home + "/version.cfg"
    cfg = read_version_cfg(fs, path)
    for comp in ("toolkit", "runtime"):
        running = cfg.get(comp, {}).get("running")
        if running:
            return running[-1][1], path
    for comp in ("runtime", "compiler", "toolkit"):
        c = components.get(comp)
        if c and c.get("version"):
            return c["version"], c["source"]
    return None, None


def read_components(fs: Root, home: str, layout: str) -> dict[str, dict[str, Any]]:
    """{name: {version (release), internal, source}} for runtime, compiler, hccl, opp, toolkit, opp_kernel."""
    out: dict[str, dict[str, Any]] = {}
    for name in CLASSIC_COMPONENTS:
        paths = [f"{home}/share/info/{pkg}/version.info" for pkg in SHARE_INFO.get(name, ())]
        paths.append(f"{home}/{name}/version.info")
        for path in paths:
            comp = read_component_file(fs, path)
            if comp:
                out[name] = comp
                break
    return out


def read_component_file(fs: Root, path: str) -> dict[str, Any] | None:
    text = fs.read_text(path)
    if text is None:
        return None
    kv = parse_kv(text)
    _, internal = first(kv, "Version", "version")
    release = kv.get("version_dir") or None
    if not internal and not release:
        fs.note(f"file:{path}", "no Version= or version_dir= line (truncated or not a version file)")
        return None
    return {"version": release or internal, "internal": internal, "source": path}


def read_version_cfg(fs: Root, path: str) -> dict[str, dict[str, list[tuple[str, str]]]]:
    """version.cfg → {component: {running|upgrade|installed: [(inner, release), ...]}}."""
    text = fs.read_text(path)
    out: dict[str, dict[str, list[tuple[str, str]]]] = {}
    if not text:
        return out
    for line in text.splitlines():
        m = _CFG.match(line.strip())
        if m:
            out.setdefault(m["comp"], {})[m["kind"]] = _CFG_ENTRY.findall(m["v"])
    if not out and text.strip():
        fs.note(f"file:{path}", "no <component>_running_version=[...] lines")
    return out


def version_cfg_summary(fs: Root, path: str) -> dict[str, Any] | None:
    """version.cfg as {source, running {comp: release}, installed {comp: [release, ...]}} (None if absent)."""
    if not fs.exists(path):
        return None
    cfg = read_version_cfg(fs, path)
    if not cfg:
        return None
    return {"source": path,
            "running": {c: k["running"][-1][1] for c, k in cfg.items() if k.get("running")},
            "installed": {c: [rel for _, rel in k["installed"]] for c, k in cfg.items() if k.get("installed")}}


def read_kernels(fs: Root, home: str, arch_dir: str | None,
                 components: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Kernels / ops packages: opp_kernel/version.info, ascend_ops_install.info, per-SoC kernel dirs."""
    out: list[dict[str, Any]] = []
    ok = components.get("opp_kernel")
    if ok:
        out.append({"name": "opp_kernel", "version": ok["version"], "source": ok["source"]})
    if arch_dir:
        path = arch_dir + "/ascend_ops_install.info"
        text = fs.read_text(path)
        if text:
            kv = parse_kv(text)
            out.append({"name": kv.get("package_name") or "ops", "version": kv.get("version"), "source": path})
    kdir = home + "/opp/built-in/op_impl/ai_core/tbe/kernel"
    for name in fs.listdir(kdir):
        if name.startswith("ascend") and fs.isdir(f"{kdir}/{name}"):
            out.append({"name": name, "version": None, "source": f"{kdir}/{name}"})
    return out


def read_nnal(fs: Root, home: str, env: Mapping[str, str]) -> list[dict[str, Any]]:
    """NNAL / ATB: $ATB_HOME_PATH/../../version.info, else <Ascend base>/nnal/atb/latest/version.info."""
    paths = []
    atb = env.get("ATB_HOME_PATH")
    if atb:
        paths.append(atb.rstrip("/") + "/../../version.info")
    base = ascend_base(home)
    if base:
        paths.append(base + "/nnal/atb/latest/version.info")
    out: list[dict[str, Any]] = []
    seen = set()
    for path in paths:
        rp = fs.real(path, "nnal")
        if rp is None or rp in seen:
            continue
        seen.add(rp)
        text = fs.read_text(path)
        if text is None:
            continue
        kv = {k.lower(): v for k, v in parse_colon(text).items()}
        version = kv.get("ascend-cann-atb")
        if not version:
            fs.note(f"file:{path}", "no 'Ascend-cann-atb : <version>' line")
            continue
        out.append({"name": "atb", "version": version, "build": kv.get("ascend-cann-atb version"),
                    "source": path})
    return out


def ascend_base(home: str) -> str | None:
    """/usr/local/Ascend for /usr/local/Ascend/ascend-toolkit/latest or /usr/local/Ascend/cann-8.5.0."""
    parts = home.rstrip("/").split("/")
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] == "Ascend":
            return "/".join(parts[: i + 1])
    return None


def set_env_path(fs: Root, home: str, ident: str) -> str | None:
    """The set_env.sh a user should source for this install (machine path), if one exists."""
    for d in (home.rstrip("/") + "/..", home, ident, ident.rsplit("/", 1)[0]):
        p = _norm(d + "/set_env.sh")
        if fs.isfile(p):
            return p
    return None


def _norm(p: str) -> str:
    import posixpath

    return posixpath.normpath(p)


def _kv_value(fs: Root, path: str, key: str) -> str | None:
    text = fs.read_text(path)
    if text is None:
        return None
    v = parse_kv(text).get(key)
    if not v:
        fs.note(f"file:{path}", f"no {key}= line (truncated or not a version file)")
    return v or None


def _active(installs: list[dict[str, Any]], by_id: dict[str, int], env_id: str | None,
            latest_ids: list[str]) -> int | None:
    if env_id is not None:
        return by_id[env_id]
    if latest_ids:
        return by_id[latest_ids[0]]
    if not installs:
        return None
    return max(range(len(installs)), key=lambda i: lenient_key(installs[i].get("version")))


ENV_PATH_VARS = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH",
                 "TOOLCHAIN_HOME", "ATB_HOME_PATH")
CANN_LIBS = ("libascendcl.so", "libhccl.so")


def env_paths(fs: Root, env: Mapping[str, str]) -> dict[str, Any]:
    """What the CANN variables and LD_LIBRARY_PATH point at, resolved inside the root (for EC201)."""
    out: dict[str, Any] = {}
    for var in ENV_PATH_VARS:
        value = env.get(var)
        if not value:
            continue
        home = fs.real(value, "env")
        exists = home is not None and fs.isdir(home)
        item: dict[str, Any] = {"value": value, "realpath": home, "exists": exists}
        if var == "ASCEND_HOME_PATH" and home is not None and exists:
            item["lib64"] = fs.real(home + "/lib64", "env")
        out[var] = item
    ld: list[dict[str, Any]] = []
    found: list[tuple[str, str]] = []  # (entry as written, resolved directory) of entries that exist
    for entry in (env.get("LD_LIBRARY_PATH") or "").split(":"):
        if entry:
            rp = fs.real(entry, "env")
            ld.append({"path": entry, "realpath": rp, "exists": rp is not None})
            if rp is not None:
                found.append((entry, rp))
    libs: dict[str, str | None] = {}
    for lib in CANN_LIBS:
        libs[lib] = next((entry.rstrip("/") + "/" + lib for entry, rp in found if fs.exists(rp + "/" + lib)), None)
    return {"vars": out, "ld_library_path": ld, "libs": libs}
