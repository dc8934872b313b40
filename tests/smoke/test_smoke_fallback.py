"""CPU-fallback wordings (error-catalogue §3.1 / CF-01..CF-06) are found and name the operator."""
from __future__ import annotations

import pytest

from envcheck.smoke.fallback import scan

CF01 = [
    ("[W compiler_depend.ts:51] Warning: CAUTION: The operator 'aten::linalg_lstsq.out' is not currently supported "
     "on the NPU backend and will fall back to run on the CPU. This may have performance implications. "
     "(function npu_cpu_fallback)", "aten::linalg_lstsq.out"),
    ("[W compiler_depend.ts:51] Warning: CAUTION: The operator 'torchvision::nms' is not currently supported on the "
     "NPU backend and will fall back to run on the CPU. This may have performance implications. "
     "(function npu_cpu_fallback)", "torchvision::nms"),
    ("[rank1]:[W VariableFallbackKernel.cpp:51] Warning: CAUTION: The operator 'aten::isin.Tensor_Tensor_out' is not "
     "currently supported on the NPU backend and will fall back to run on the CPU. This may have performance "
     "implications. (function npu_cpu_fallback)", "aten::isin.Tensor_Tensor_out"),
    ("rank0]:[W107 21:14:04.201960667 VariableFallbackKernel.cpp:250] Warning: CAUTION: The operator "
     "'aten::_scaled_dot_product_efficient_attention' is not currently supported on the NPU backend and will fall "
     "back to run on the CPU. This may have performance implications. (function npu_cpu_fallback)",
     "aten::_scaled_dot_product_efficient_attention"),
]
OTHERS = [
    ("CAUTION: The operator aten::unfold_backward is currently not supported on the NPU backend. Now this operator "
     "will fallback to run on the CPU and may have performance implications.",
     "aten::unfold_backward", "kernel_fallback"),
    ("CAUTION: The operator aten::_masked_softmax is currently not supported on the NPU backend.Now this operator "
     "will fallback to run on the CPU and may have performance implications. Please try to update your CANN version.",
     "aten::_masked_softmax", "kernel_fallback"),
    ("CPU fallback is allowed because TORCH_NPU_FALLBACK_CPU_DISABLE=0. Since the NPU interface does not support "
     "operator 'aten::_sparse_csr_sum.dim_dtype', the operator will fall back to CPU.",
     "aten::_sparse_csr_sum.dim_dtype", "managed_fallback"),
    ("The operator 'aten::isin.Tensor_Tensor_out' would execute its main computation on CPU through dispatcher "
     "backend fallback because no kernel is registered for the NPU PrivateUse1 backend, but CPU fallback is "
     "disabled by TORCH_NPU_FALLBACK_CPU_DISABLE=1.", "aten::isin.Tensor_Tensor_out", "fallback_disabled"),
    ('The operator aten::as_strided appears to be a view operator, but it has no implementation for the backend '
     '"npu". View operators don\'t support falling back to run on the CPU, since the tensor\'s storage cannot be '
     'shared across devices.', "aten::as_strided", "view_op_fallback"),
]


@pytest.mark.parametrize("line,op", CF01)
def test_npu_cpu_fallback_variants(line, op):
    (fb,) = scan("some noise\n" + line + "\nmore noise")
    assert fb.op == op and fb.kind == "npu_cpu_fallback" and fb.line == line.strip()


@pytest.mark.parametrize("line,op,kind", OTHERS)
def test_other_fallback_wordings(line, op, kind):
    (fb,) = scan(line)
    assert (fb.op, fb.kind) == (op, kind)


def test_first_occurrence_per_operator_in_order():
    text = "\n".join([CF01[2][0], OTHERS[0][0], CF01[2][0], CF01[0][0]])
    assert [f.op for f in scan(text)] == ["aten::isin.Tensor_Tensor_out", "aten::unfold_backward",
                                          "aten::linalg_lstsq.out"]


@pytest.mark.parametrize("line", [
    "Warning: Device do not support double dtype now, dtype cast replace with float.",
    "RuntimeError: Expected all tensors to be on the same device. Expected NPU tensor, please check whether the "
    "input tensor device is correct.",
    "[W compiler_depend.ts:51] Warning: something else entirely (function foo)",
    "",
])
def test_no_false_hits(line):
    assert scan(line) == []


def test_smoke_children_see_fallback_warnings_whichever_name_silences_them(monkeypatch):
    # torch_npu up to 2.12.0 reads TORCH_NPU_DISABLED_WARNING, 2.13.0 TORCH_NPU_WARNING_DISABLE first: a user who
    # set either must not make the smoke suite blind to CPU fallbacks
    from envcheck.smoke.suite import _env

    monkeypatch.setenv("TORCH_NPU_DISABLED_WARNING", "1")
    monkeypatch.setenv("TORCH_NPU_WARNING_DISABLE", "1")
    monkeypatch.setenv("RANK", "3")
    env = _env(None, 5)
    assert "TORCH_NPU_DISABLED_WARNING" not in env
    assert "TORCH_NPU_WARNING_DISABLE" not in env
    assert "RANK" not in env and env["ENVCHECK_SMOKE_FD"] == "5"
