"""Small collectives for envcheck's own data: an all-gather of JSON documents (no pickle, no numpy).

torch's all_gather_object pickles (a peer could hand us any object) and needs numpy to decode;
a training image may lack numpy and envcheck only ships plain data, so JSON bytes in a uint8 tensor.
"""
from __future__ import annotations

import json
from typing import Any


def all_gather_json(obj: Any, device: Any = None) -> list[Any]:
    """Every rank's `obj` (JSON-serialisable), in rank order, over the default process group."""
    import torch
    import torch.distributed as dist

    dev = device if device is not None else torch.device("cpu")
    data = json.dumps(obj, separators=(",", ":"), default=str).encode()
    world = dist.get_world_size()
    size = torch.tensor([len(data)], dtype=torch.int64, device=dev)
    sizes = [torch.zeros_like(size) for _ in range(world)]
    dist.all_gather(sizes, size)
    longest = max(int(s.item()) for s in sizes)
    buf = torch.zeros(longest, dtype=torch.uint8)
    buf[: len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    buf = buf.to(dev)
    out = [torch.empty(longest, dtype=torch.uint8, device=dev) for _ in range(world)]
    dist.all_gather(out, buf)
    return [json.loads(bytes(t[: int(s.item())].cpu().tolist())) for t, s in zip(out, sizes)]
