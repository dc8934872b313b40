"""Built-in operator cases: the basics plus the migration risks of the field report.

Every case builds its inputs on the CPU with a fixed seed, rounds them to the test dtype, runs the
operator on the device, and computes the reference in float64 on the CPU from the same rounded
values, so the error measured is the device's arithmetic, not the input rounding. torch is imported
inside the functions: this module is imported only in the smoke worker.
"""
from __future__ import annotations

from typing import Any

from envcheck.smoke.registry import register

HALF = ("float32", "float16", "bfloat16")


def _t(dtype: Any) -> Any:
    """torch dtype from a torch dtype, its name, or None (float32)."""
    import torch

    return dtype if isinstance(dtype, torch.dtype) else getattr(torch, dtype or "float32")


def _rand(*shape: int, dtype: Any = "float32", seed: int = 0) -> tuple[Any, Any]:
    """(cpu tensor in dtype, the same values in float64)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=torch.float64).to(_t(dtype))
    return x, x.double()


@register("matmul", dtypes=HALF, quick=("float32",))
def matmul(d: Any, dtype: Any) -> tuple[Any, Any]:
    a, a64 = _rand(64, 48, dtype=dtype, seed=1)
    b, b64 = _rand(48, 32, dtype=dtype, seed=2)
    return a.to(d.torch_device) @ b.to(d.torch_device), a64 @ b64


@register("conv2d")
def conv2d(d: Any, dtype: Any) -> tuple[Any, Any]:
    import torch.nn.functional as F

    x, x64 = _rand(2, 3, 16, 16, seed=3)
    w, w64 = _rand(4, 3, 3, 3, seed=4)
    dev = d.torch_device
    return F.conv2d(x.to(dev), w.to(dev), padding=1), F.conv2d(x64, w64, padding=1)


@register("layer_norm", quick=True)
def layer_norm(d: Any, dtype: Any) -> tuple[Any, Any]:
    import torch.nn.functional as F

    x, x64 = _rand(8, 32, seed=5)
    w, w64 = _rand(32, seed=6)
    b, b64 = _rand(32, seed=7)
    dev = d.torch_device
    return F.layer_norm(x.to(dev), (32,), w.to(dev), b.to(dev)), F.layer_norm(x64, (32,), w64, b64)


@register("softmax", quick=True)
def softmax(d: Any, dtype: Any) -> tuple[Any, Any]:
    x, x64 = _rand(8, 40, seed=8)
    return x.to(d.torch_device).softmax(-1), x64.softmax(-1)


@register("gelu")
def gelu(d: Any, dtype: Any) -> tuple[Any, Any]:
    import torch.nn.functional as F

    x, x64 = _rand(16, 32, seed=9)
    return F.gelu(x.to(d.torch_device)), F.gelu(x64)


@register("embedding")
def embedding(d: Any, dtype: Any) -> tuple[Any, Any]:
    import torch
    import torch.nn.functional as F

    w, w64 = _rand(50, 16, seed=10)
    idx = torch.tensor([[0, 3, 49, 3], [7, 7, 1, 0]])
    return F.embedding(idx.to(d.torch_device), w.to(d.torch_device)), F.embedding(idx, w64)


@register("cross_entropy_backward", quick=True)
def cross_entropy_backward(d: Any, dtype: Any) -> tuple[Any, Any]:
    import torch
    import torch.nn.functional as F

    x, x64 = _rand(8, 5, seed=11)
    target = torch.tensor([0, 1, 2, 3, 4, 0, 1, 2])
    out = []
    for logits, tgt in ((x.to(d.torch_device), target.to(d.torch_device)), (x64, target)):
        logits = logits.clone().requires_grad_(True)
        loss = F.cross_entropy(logits, tgt)
        loss.backward()
        out.append((loss.detach(), logits.grad))
    return out[0], out[1]


def _linear_pair(d: Any, seed: int) -> tuple[Any, Any, Any, Any]:
    """The same small Linear on the device (float32) and on the CPU (float64), plus data."""
    import torch

    torch.manual_seed(seed)
    cpu = torch.nn.Linear(16, 4)
    dev = torch.nn.Linear(16, 4).to(d.torch_device)
    dev.load_state_dict(cpu.state_dict())
    x, x64 = _rand(8, 16, seed=seed + 1)
    return dev, cpu.double(), x, x64


@register("optimizer_step")
def optimizer_step(d: Any, dtype: Any) -> tuple[Any, Any]:
    import torch

    dev, ref, x, x64 = _linear_pair(d, 12)
    for model, inp in ((dev, x.to(d.torch_device)), (ref, x64)):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, foreach=False)
        for _ in range(3):
            opt.zero_grad()
            model(inp).pow(2).mean().backward()
            opt.step()
    return (dev.weight.detach(), dev.bias.detach()), (ref.weight.detach(), ref.bias.detach())


@register("amp_grad_scaler", tol=5e-2)
def amp_grad_scaler(d: Any, dtype: Any) -> tuple[Any, Any]:
    """autocast forward + GradScaler step with the device's amp API; the loss is kept in fp32."""
    import torch

    dev, ref, x, x64 = _linear_pair(d, 14)
    scaler = d.grad_scaler(init_scale=2.0 ** 10)
    opt = torch.optim.SGD(dev.parameters(), lr=0.1)
    with d.autocast():
        out = dev(x.to(d.torch_device))
    loss = out.float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    ref(x64).pow(2).mean().backward()
    ref_opt.step()
    return (dev.weight.detach(), dev.bias.detach()), (ref.weight.detach(), ref.bias.detach())


@register("index_put_", quick=True)
def index_put_(d: Any, dtype: Any) -> tuple[Any, Any]:
    import torch

    rows, cols = torch.tensor([0, 2, 5, 2]), torch.tensor([1, 3, 0, 3])  # (2, 3) twice: accumulate
    v, v64 = _rand(4, seed=15)
    dev = d.torch_device
    got = torch.zeros(6, 4, device=dev).index_put_((rows.to(dev), cols.to(dev)), v.to(dev), accumulate=True)
    want = torch.zeros(6, 4, dtype=torch.float64).index_put_((rows, cols), v64, accumulate=True)
    return got, want


@register("scatter_")
def scatter_(d: Any, dtype: Any) -> tuple[Any, Any]:
    import torch

    index = torch.tensor([[0, 1, 2, 0, 4], [4, 3, 2, 1, 0]])
    src, src64 = _rand(2, 5, seed=16)
    dev = d.torch_device
    got = (torch.zeros(2, 5, device=dev).scatter_(1, index.to(dev), src.to(dev)),
           torch.zeros(2, 5, device=dev).scatter_add_(1, index.to(dev), src.to(dev)))
    want = (torch.zeros(2, 5, dtype=torch.float64).scatter_(1, index, src64),
            torch.zeros(2, 5, dtype=torch.float64).scatter_add_(1, index, src64))
    return got, want


@register("masked_fill")
def masked_fill(d: Any, dtype: Any) -> tuple[Any, Any]:
    x, x64 = _rand(6, 7, seed=17)
    mask = x64 > 0.3
    return x.to(d.torch_device).masked_fill(mask.to(d.torch_device), -1e4), x64.masked_fill(mask, -1e4)


@register("advanced_indexing")
def advanced_indexing(d: Any, dtype: Any) -> tuple[Any, Any]:
    import torch

    x, x64 = _rand(6, 5, seed=18)
    rows, cols = torch.tensor([5, 0, 3]), torch.tensor([4, 4, 1])
    outs = []
    for t, r, c in ((x.to(d.torch_device), rows.to(d.torch_device), cols.to(d.torch_device)), (x64, rows, cols)):
        picked = t[r, c]                      # gather by index pairs
        sliced = t[r][:, c]                   # fancy rows then fancy columns
        masked = t[t > 0]                     # boolean mask: data-dependent shape
        cleared = t.clone()
        cleared[t < 0] = 0                    # boolean-mask assignment (index_put_ underneath)
        outs.append((picked, sliced, masked, cleared))
    return outs[0], outs[1]


def _square_function() -> Any:
    import torch

    class Square(torch.autograd.Function):
        """A custom autograd.Function like the ones migrated models carry (here in plain ops)."""

        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    return Square


@register("custom_autograd_function")
def custom_autograd_function(d: Any, dtype: Any) -> tuple[Any, Any]:
    square = _square_function()
    x, x64 = _rand(5, 3, seed=19)
    out = []
    for t in (x.to(d.torch_device), x64):
        t = t.clone().requires_grad_(True)
        y = square.apply(t)
        y.sum().backward()
        out.append((y.detach(), t.grad))
    return out[0], out[1]


from envcheck.smoke import parity as _parity  # noqa: E402,F401  (registers the parity run last)
