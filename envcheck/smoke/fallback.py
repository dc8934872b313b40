"""Find CPU-fallback warnings in captured stderr and name the operators that fell back.

The wordings (shared/research/error-catalogue.md §3.1, CF-01..CF-06) are printed by C++ straight to
stderr, not through Python `warnings`, once per operator and (in recent torch_npu) only on rank 0
or without RANK, so the smoke worker captures fd 2 and scans it here:

- torch_npu's boxed fallback ``npu_cpu_fallback`` (and the MPS template it copies):
  ``CAUTION: The operator 'aten::isin.Tensor_Tensor_out' is not currently supported on the NPU
  backend and will fall back to run on the CPU. This may have performance implications.``
- kernel-internal fallbacks: ``CAUTION: The operator aten::unfold_backward is currently not
  supported on the NPU backend. Now this operator will fallback to run on the CPU ...``
- managed fallback: ``... Since the NPU interface does not support operator '<op>', the operator
  will fall back to CPU.``
- strict mode (TORCH_NPU_FALLBACK_CPU_DISABLE=1): ``The operator '<op>' would execute its main
  computation on CPU through dispatcher backend fallback because no kernel is registered for the
  NPU PrivateUse1 backend ...``
- PyTorch core's PrivateUse1 view-op refusal (at::native::cpu_fallback): ``The operator <op>
  appears to be a view operator, but it has no implementation for the backend "npu"``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

PATTERNS = (
    ("npu_cpu_fallback", re.compile(
        r"The operator '([^']+)' is not currently supported on the (\w+) backend "
        r"and will fall back to run on the CPU")),
    ("kernel_fallback", re.compile(
        r"CAUTION: The operator (aten::[\w.]+)(?:, [\w:.]+)*(?: and [\w:.]+)? is currently not supported on the "
        r"(\w+) backend\. ?Now this operator will fallback to run on the CPU")),
    ("managed_fallback", re.compile(
        r"Since the (\w+) interface does not support operator '([^']+)', the operator will fall back to CPU")),
    ("fallback_disabled", re.compile(
        r"The operator '([^']+)' would execute its main computation on CPU through dispatcher backend fallback")),
    ("view_op_fallback", re.compile(
        r"The operator ([\w:.]+) appears to be a view operator, but it has no implementation for the backend "
        r"\"(\w+)\"")),
)


@dataclass(frozen=True)
class Fallback:
    """One operator that fell back to the CPU, with the line that said so."""

    op: str
    kind: str
    line: str


def scan(text: str) -> list[Fallback]:
    """Every fallback announced in `text`, first occurrence per operator, in order."""
    found: dict[str, Fallback] = {}
    for line in text.splitlines():
        for kind, rx in PATTERNS:
            m = rx.search(line)
            if not m:
                continue
            op = m.group(2) if kind == "managed_fallback" else m.group(1)
            found.setdefault(op, Fallback(op, kind, line.strip()))
    return list(found.values())
