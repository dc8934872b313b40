"""envcheck.kb.claims: the versions a pasted report states, in many spellings, and what is no version."""
from __future__ import annotations

import time

import pytest

from envcheck.kb.claims import HEAD_BYTES, line_claims, stated_versions

# spellings (written for this test)
SPELLINGS = [
    ("python： 3.11", [("python", "3.11")]),
    ("pytorch：2.1.0", [("torch", "2.1.0")]),
    ("torch-npu：2.1.0", [("torch_npu", "2.1.0")]),
    ("torchnpu 2.1.0", [("torch_npu", "2.1.0")]),
    ("PyTorch version: 2.1.0", [("torch", "2.1.0")]),
    ("torch版本：2.4.0", [("torch", "2.4.0")]),
    ("torch-npu    2.1.0.post3", [("torch_npu", "2.1.0.post3")]),  # pip list columns
    ("torch                    2.1.0+cpu", [("torch", "2.1.0+cpu")]),
    ("torch==2.8.0", [("torch", "2.8.0")]),
    ("pip install torch_npu==2.1.0.post3", [("torch_npu", "2.1.0.post3")]),
    ("ERROR: torch-npu 2.1.0.post3 requires torch==2.1.0, but you have torch 2.3.1",
     [("torch_npu", "2.1.0.post3"), ("torch", "2.1.0"), ("torch", "2.3.1")]),
    ("| torch | 2.1.0 |", [("torch", "2.1.0")]),
    ("| torch_npu | 2.5.1.post1.dev20250528 |", [("torch_npu", "2.5.1.post1.dev20250528")]),
    ("torch_npu-2.1.0.post3-cp310-cp310-manylinux_2_17_aarch64.whl",
     [("torch_npu", "2.1.0.post3"), ("python", "3.10")]),
    ("CANN 8.0.RC1", [("cann", "8.0.RC1")]),
    ("cann版本 8.0.0", [("cann", "8.0.0")]),
    ("CANN版本：8.1.RC1", [("cann", "8.1.RC1")]),
    ("Ascend-cann-toolkit_8.0.RC2_linux-aarch64.run", [("cann", "8.0.RC2"), ("arch", "aarch64")]),
    ("Ascend-cann-kernels-910b_8.0.RC3_linux.run", [("cann", "8.0.RC3")]),
    ("CANN: 8.2.RC1.alpha003", [("cann", "8.2.RC1.alpha003")]),
    ("driver 24.1.rc2", [("driver", "24.1.rc2")]),
    ("NPU driver version: 23.0.3", [("driver", "23.0.3")]),
    ("驱动版本：23.0.3", [("driver", "23.0.3")]),
    ("firmware 7.5.0.1.129", [("firmware", "7.5.0.1.129")]),
    ("固件版本: 7.3.0.1.231", [("firmware", "7.3.0.1.231")]),
    ("mindspore 2.3.0", [("mindspore", "2.3.0")]),
    ("MindSpore版本: mindspore=2.6.0", [("mindspore", "2.6.0")]),
    ("Python 3.10.12 (main, Nov 20 2023, 13:17:27) [GCC 11.4.0] on linux", [("python", "3.10.12")]),
    ("$ python3.9 -m pip list", [("python", "3.9")]),
    ("910B3", [("chip", "910B3")]),
    ("NPU型号: Ascend910B4", [("chip", "910B4")]),
    ("on an Atlas 300I Pro (310P3)", [("chip", "310P3")]),
    ("uname -m: x86_64", [("arch", "x86_64")]),
    # a traceback's paths: the interpreter's site-packages states Python; torch/ and torch_npu/ state nothing
    ('  File "/usr/local/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1501, in _call_impl',
     [("python", "3.10")]),
    ('  File "/root/miniconda3/lib/python3.9/site-packages/torch_npu/__init__.py", line 12, in <module>',
     [("python", "3.9")]),
    ("/usr/local/python3.7.5/lib/python3.7/site-packages/torch_npu-1.11.0.dist-info", [("python", "3.7")]),
]

# real lines, verbatim
REAL = [
    # flagos-ai/sglang-plugin-FL#14 (tests/data/field-corpus/d-001.yaml, dev)
    ("torch  2.12.0+cpu  (auto-upgraded by pip)", [("torch", "2.12.0+cpu")]),
    ("torch_npu  2.8.0.post1  (highest stable for Ascend)", [("torch_npu", "2.8.0.post1")]),
    ("SGLang 0.5.11 → requires torch >= 2.12", []),  # a range is no version
    # PaddlePaddle/PaddleOCR#13977 (c-022, dev)
    ("cann 8.0.1", [("cann", "8.0.1")]),
    ("docker 24.0.1", []),
    # PaddlePaddle/Paddle#68107 (c-023, dev)
    ("CANN：7.0.1", [("cann", "7.0.1")]),
    # a CANN package's name as the label (mindspore-ai/mindspore#236, i-003, dev)
    ("mindspore=2.0.0，Ascend-cann-nnae/nnrt/toolkit=5.0.4。", [("cann", "5.0.4"), ("mindspore", "2.0.0")]),
    ("Ascend-cann-toolkit 8.0.RC1", [("cann", "8.0.RC1")]),
    ("Ascend-cann-kernels-910b: 8.1.RC1", [("cann", "8.1.RC1")]),
    ("NPU:  昇腾910A", [("chip", "910A")]),
    # ultralytics/ultralytics#13269 (a-008, dev)
    ("Ultralytics YOLOv8.2.26 🚀 Python-3.8.10 torch-2.2.0 Ascend NPU:5 (Ascend910ProB, 32768MiB)",
     [("torch", "2.2.0"), ("python", "3.8.10"), ("chip", "910ProB")]),
    # vllm-project/vllm-ascend#1621 (f-002, dev): an image tag
    ("Vllm-ascend image: 0.8.5rc1-torch_npu2.5.1-cann8.1.rc1-python3.10-oe2203lts",
     [("torch_npu", "2.5.1"), ("cann", "8.1.rc1"), ("python", "3.10")]),
    # hiyouga/LlamaFactory#5763 (e-006, dev)
    ("    torch-npu 2.1.0.post3 depends on torch==2.1.0+cpu", [("torch_npu", "2.1.0.post3"), ("torch", "2.1.0+cpu")]),
    # PaddlePaddle/Paddle#34371 (c-001, dev): a process name and a timestamp are no versions
    ("[ERROR] GE(37326,python3.7):2021-07-26-14:21:54.716.918 [/home/jenkins/agent/workspace/Compile_GraphEngine", []),
    # npu-smi banners and table rows (/work/shared/research/samples/npu-smi-info-910b2c-24.1.rc2.2-16npu.txt,
    # npu-smi-info-310p3-25.2.0.txt): npu-smi reports the driver's version
    ("| npu-smi 24.1.rc2.2               Version: 24.1.rc2.2                                           |",
     [("driver", "24.1.rc2.2")]),
    ("| npu-smi 25.2.0                                   Version: 25.2.0                                       |",
     [("driver", "25.2.0")]),
    ("| 0     910B2C              | OK            | 93.1        55                0    / 0             |",
     [("chip", "910B2C")]),
]

NEGATIVES = [
    "CUDA 12.1",
    "cuda 11.8 / cudnn 8.9",
    "torch>=2.1.0",
    "torch<2.3,>=2.1",
    "torchvision 0.16.0",
    "torchaudio==2.1.0",
    "transformers 4.49.0",
    "nvidia driver 535.104.05",
    "Ascend Extension for PyTorch 6.0.rc1",
    "export LD_LIBRARY_PATH=/usr/local/Ascend/ascend-toolkit/latest/lib64:$LD_LIBRARY_PATH",
    "2024-05-12 10:11:12.123 torch.distributed INFO step 2.5",
    "libtorch_npu.so: undefined symbol: _ZN3c1010Dispatcher",
    "python 38 workers started",
    "Epoch 2.0.1 finished",
    "port 9100",
]


@pytest.mark.parametrize(("line", "want"), SPELLINGS + REAL, ids=lambda x: x[:40] if isinstance(x, str) else "")
def test_line_claims(line, want):
    assert line_claims(line) == want


@pytest.mark.parametrize("line", NEGATIVES)
def test_no_version_where_none_is_stated(line):
    assert line_claims(line) == []


def test_claims_keep_the_line_they_came_from():
    text = "我的环境:\n  python： 3.11\n  pytorch：2.1.0\n  torch-npu：2.1.0\nImportError: ...\n"
    got = stated_versions(text)
    assert set(got) == {"python", "torch", "torch_npu"}
    c = got["torch_npu"]
    assert (c.version, c.line, c.text, c.ambiguous) == ("2.1.0", 4, "torch-npu：2.1.0", False)


def test_one_version_spelled_twice_is_one_claim():
    # DeepLink-org/dlinfer#183 (b-009, dev): "python 3.11.10" then "python 3.11"; the fuller spelling is kept
    got = stated_versions("在python 3.11.10中执行import dlinfer会报错:\n且我看预编译包不支持python 3.11\n")
    assert got["python"].version == "3.11.10" and not got["python"].ambiguous
    got = stated_versions("torch 2.2\n...\ntorch==2.2.0\ntorch 2.2.0+cpu\n")
    assert got["torch"].version == "2.2.0" and not got["torch"].ambiguous


def test_two_versions_of_one_component_are_ambiguous():
    text = "torch 2.1.0\ntorch_npu 2.1.0.post3\n$ pip install sglang\n...\ntorch 2.12.0+cpu  (auto-upgraded by pip)\n"
    got = stated_versions(text)
    t = got["torch"]
    assert t.ambiguous and t.version == "2.1.0" and [o[:2] for o in t.others] == [("2.12.0+cpu", 5)]
    assert not got["torch_npu"].ambiguous
    # modelscope/ms-swift#7948 (e-030, dev): two packages pinning two torches
    got = stated_versions("安装操作发现vllm 0.11.0依赖torch==2.8.0，而vllm-ascend 0.11.0rc3依赖torch==2.7.1，"
                          "版本冲突根本安装不了。")
    assert got["torch"].ambiguous and {got["torch"].version, got["torch"].others[0][0]} == {"2.8.0", "2.7.1"}
    assert stated_versions("torch 2.1\ntorch 2.12.0\n")["torch"].ambiguous  # 2.12 is not a spelling of 2.1


def test_only_the_head_is_read():
    filler = "step 1 loss 0.1\n" * (HEAD_BYTES // 16 + 10)
    assert stated_versions(filler + "torch 2.1.0\n") == {}
    assert stated_versions("torch 2.1.0\n" + filler)["torch"].line == 1


def test_hostile_head_parses_fast():
    lines = ["torch " * 300, "torch_npu" + " 2." * 500, "python:" * 400, "cann " + "8.0." * 400 + "x",
             "|" * 1900 + " torch 2.1.0", "9" * 1999, "910B" * 400]
    text = "\n".join(lines * 40)[:HEAD_BYTES]
    t = time.perf_counter()
    stated_versions(text)
    assert time.perf_counter() - t < 2.0


def test_a_required_version_yields_to_the_installed_one():
    # pip's conflict message, verbatim from a public README (find_string "which is incompatible.")
    got = stated_versions("vllm 0.6.6 requires torch==2.5.1, but you have torch 2.2.0a0+git8ac9b20 which is "
                          "incompatible.\n")
    assert got["torch"].version == "2.2.0a0+git8ac9b20" and not got["torch"].ambiguous
    got = stated_versions("ERROR: torch-npu 2.1.0.post3 requires torch==2.1.0, but you have torch 2.3.1\n")
    assert (got["torch"].version, got["torch_npu"].version) == ("2.3.1", "2.1.0.post3")
    # only a requirement stated: it is what there is (flagos-ai/sglang-plugin-FL#14 style "requires torch==")
    assert stated_versions("sglang 0.5.11 requires torch==2.12.0\n")["torch"].version == "2.12.0"
