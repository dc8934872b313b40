"""Real torch, real messages: a custom operator under torch.compile fails the way users report it, diagnose names
kb/op-unsupported/custom-op-no-fake-impl-in-graph-mode, and the entry's fix (a fake implementation) makes it compile.

The torch 2.13 CPU build raises the same dynamo errors as torch with torch_npu: fake-tensor tracing happens before any
backend (eager here, TorchAir's npu_backend on Ascend) sees the graph."""
from __future__ import annotations

import subprocess
import sys

import pytest

from envcheck.kb.diagnose import diagnose

pytest.importorskip("torch")

PROGRAM = r'''
import sys, traceback, warnings
warnings.simplefilter("ignore")
import torch

for case in ("no_fake", "cpu_meta", "fixed"):
    lib = torch.library.Library("envchk_" + case, "DEF")
    lib.define("my_op(Tensor x) -> Tensor")
    lib.impl("my_op", lambda x: x * 2, "CPU")
    if case == "cpu_meta":      # a Meta kernel that builds a real (CPU) tensor
        lib.impl("my_op", lambda x: torch.zeros(x.shape[0]), "Meta")
    elif case == "fixed":       # what the entry's Fix says: shape and dtype only, on the input's (fake) device
        torch.library.register_fake("envchk_fixed::my_op", lambda x: x.new_empty(x.shape), lib=lib)
    op = getattr(torch.ops, "envchk_" + case).my_op
    print("=== " + case, flush=True)
    try:
        out = torch.compile(lambda x: op(x) + 1, backend="eager", fullgraph=True)(torch.ones(3))
        print("COMPILED", out.tolist(), flush=True)
    except Exception:
        traceback.print_exc(file=sys.stdout)
'''


@pytest.fixture(scope="module")
def runs() -> dict[str, str]:
    p = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    parts = p.stdout.split("=== ")[1:]
    return {part.split("\n", 1)[0]: part.split("\n", 1)[1] for part in parts}


@pytest.mark.parametrize("case", ["no_fake", "cpu_meta"])
def test_a_custom_op_without_a_proper_fake_impl_is_named(tmp_path, runs, case):
    assert "Traceback (most recent call last)" in runs[case], runs[case]
    log = tmp_path / f"{case}.log"
    log.write_text(runs[case], encoding="utf-8")
    r = diagnose([str(log)])
    assert r.matches and r.matches[0].id == "custom-op-no-fake-impl-in-graph-mode", [m.id for m in r.matches]
    assert r.matches[0].confidence == "matched"


def test_the_entrys_fix_compiles(runs):
    assert runs["fixed"].startswith("COMPILED [3.0, 3.0, 3.0]"), runs["fixed"]
