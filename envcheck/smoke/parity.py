"""Parity run: a tiny Transformer block trained ~20 steps from one seed on the device and on the CPU.

The field report's rule "compare the loss curves before you trust a migration" as one smoke test:
both runs start from the same weights and see the same batches, so their float32 loss curves must
agree step by step within a tolerance (on cpu-vs-cpu they are identical).
"""
from __future__ import annotations

from typing import Any

from envcheck.smoke.registry import register

STEPS = 20
VOCAB, DIM, HEADS, SEQ, BATCH = 32, 32, 4, 16, 8
PARITY_TOL = 2e-2
"""Max |device - cpu| / max(|cpu|, 1e-3) per step."""


def _model() -> Any:
    import torch

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = torch.nn.Embedding(VOCAB, DIM)
            self.layer = torch.nn.TransformerEncoderLayer(DIM, HEADS, dim_feedforward=2 * DIM, dropout=0.0,
                                                          batch_first=True)
            self.head = torch.nn.Linear(DIM, VOCAB)

        def forward(self, tokens: Any) -> Any:
            return self.head(self.layer(self.emb(tokens)))

    return Block()


def _batches(seed: int) -> list[Any]:
    """Counting sequences (t, t+1, t+2, ... mod VOCAB) from random starts: learnable in a few steps,
    so the curve goes down and a device that trains differently shows up."""
    import torch

    g = torch.Generator().manual_seed(seed)
    ramp = torch.arange(SEQ + 1)
    return [(torch.randint(0, VOCAB, (BATCH, 1), generator=g) + ramp) % VOCAB for _ in range(STEPS)]


def train_curve(model: Any, device: Any, batches: list[Any]) -> list[float]:
    """Train `model` on `device` over `batches` (next-token loss); return the loss of every step."""
    import torch
    import torch.nn.functional as F

    model = model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, foreach=False)
    losses = []
    for b in batches:
        b = b.to(device)
        logits = model(b[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), b[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach().cpu()))
    return losses


@register("transformer_parity", kind="parity", tol=PARITY_TOL)
def transformer_parity(d: Any, dtype: Any) -> tuple[list[float], list[float]]:
    """(device losses, cpu losses) from identical weights and batches."""
    import copy

    import torch

    torch.manual_seed(0)
    base = _model()
    batches = _batches(1)
    dev_losses = train_curve(copy.deepcopy(base), d.torch_device, batches)
    cpu_losses = train_curve(copy.deepcopy(base), torch.device("cpu"), batches)
    return dev_losses, cpu_losses


def compare_curves(dev: list[float], cpu: list[float], tol: float = PARITY_TOL) -> tuple[bool, float, int]:
    """(within tolerance, worst relative difference, step of the worst difference)."""
    worst, at = 0.0, -1
    for i, (a, b) in enumerate(zip(dev, cpu)):
        diff = abs(a - b) / max(abs(b), 1e-3)
        if diff != diff:  # NaN on either side
            return False, float("nan"), i
        if diff > worst:
            worst, at = diff, i
    return len(dev) == len(cpu) and worst <= tol, worst, at
