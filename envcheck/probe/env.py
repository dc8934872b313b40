"""The environment variables that matter on an Ascend machine, with secrets redacted."""
from __future__ import annotations

from collections.abc import Mapping

from envcheck.redact import redact_env

PREFIXES = ("ASCEND_", "HCCL_", "ATB_", "TORCH_NPU_", "PYTORCH_NPU_")
NAMES = (
    "WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK",
    "MASTER_ADDR", "MASTER_PORT", "LD_LIBRARY_PATH", "PYTHONPATH", "PATH", "TOOLCHAIN_HOME",
    "TORCH_DEVICE_BACKEND_AUTOLOAD", "PYTORCH_NPU_ALLOC_CONF", "RANK_TABLE_FILE", "RANK_ID",
    "RANK_SIZE", "DEVICE_ID", "GLOO_SOCKET_IFNAME", "OMP_NUM_THREADS", "LD_PRELOAD",
)


def probe(environ: Mapping[str, str]) -> dict[str, str]:
    """Relevant variables only (sorted); secret-named ones masked, credential-looking values masked."""
    picked = {k: v for k, v in environ.items() if k in NAMES or k.startswith(PREFIXES)}
    return dict(sorted(redact_env(picked).items()))
