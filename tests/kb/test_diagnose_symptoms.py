"""Pasted reports that describe the failure in words (issue 11): described symptoms point the fallback to
their taxonomy category, Chinese words are looked up through the search glossary, and prose that only
announces the error below it is not read as the error.

The texts are written for these tests (not field-corpus excerpts), in the wordings the taxonomy names.
"""
from __future__ import annotations

import pytest

from envcheck.kb.diagnose import DiagnoseResult, diagnose, query_terms
from envcheck.kb.match import UNWRAP_MAX, symptom_lines, symptoms_of


def run(tmp_path, text: str) -> DiagnoseResult:
    p = tmp_path / "report.txt"
    p.write_text(text, encoding="utf-8")
    return diagnose([str(p)])


@pytest.mark.parametrize("text, category", [
    ("Since the upgrade every training step on the 910B is much slower than before.\n", "performance"),
    ("换了新的镜像以后，推理速度比之前慢了很多\n", "performance"),
    ("After a few hundred steps the loss becomes NaN and never recovers.\n", "numerics"),
    ("开启混合精度后 loss 突然增大，几个 epoch 后出现溢出\n", "numerics"),
    ("The NPU utilization stays at 0% and the model seems to be running on the CPU instead.\n", "cpu-fallback"),
])
def test_a_described_symptom_leads_to_its_category(tmp_path, text, category):
    r = run(tmp_path, text)
    assert r.matches, text
    assert r.matches[0].category == category and r.matches[0].confidence == "likely"
    assert r.exit_code == 1


def test_symptom_words_by_category():
    assert symptoms_of("the decode is extremely slow") == ("performance",)
    assert symptoms_of("{'loss': 0.0, 'grad_norm': nan, 'epoch': 0.01}") == ("numerics",)
    assert "cpu-fallback" in symptoms_of("slow because the model is actually running on the CPU")
    assert symptoms_of("训练时显存不足") == ("out-of-memory",)
    assert symptoms_of("pip install finished, versions: torch 2.1.0") == ()


@pytest.mark.parametrize("text, category", [
    # how users describe wrong answers (numerics), written for this test in several wordings
    ("After switching to the NPU the model output is garbled", "numerics"),
    ("the responses are repetitive nonsense on 910B", "numerics"),
    ("Logits on the NPU differ from the CUDA run by 1e-1", "numerics"),
    ("NPU 上推理结果与 GPU 不一致", "numerics"),
    ("模型生成的回答全是乱码", "numerics"),
    # memory, worded the other way round or as an amount short of what was asked
    ("the NPU memory is not enough for a 72B model", "out-of-memory"),
    ("Free memory on device (8.0/64.0 GiB) on startup is less than desired GPU memory utilization", "out-of-memory"),
    ("available HBM memory is smaller than the KV cache needs", "out-of-memory"),
    # an allocation that failed, in several wordings
    ("RuntimeError: Allocate continuous memory failed", "out-of-memory"),
    ("kernel launch: failed to allocate 2 GiB of device memory", "out-of-memory"),
    ("[ERROR] memory allocation failed for the KV blocks", "out-of-memory"),
    # saving and resuming
    ("saving the checkpoint hangs on rank 0 for 30 minutes", "checkpoint"),
    ("Loading the model weights fails after resume", "checkpoint"),
    ("多机训练时保存权重超时", "checkpoint"),
    # data loading
    ("the DataLoader hangs when num_workers > 0", "data-pipeline"),
    ("数据加载很慢，NPU 一直在等", "data-pipeline"),
    # collectives that hang
    ("training is stuck at the first allreduce on the second node", "hccl-timeout"),
    ("HCCL hangs forever after 200 steps", "hccl-timeout"),
    ("多机训练卡住不动", "hccl-timeout"),
])
def test_more_described_symptoms(text, category):
    assert category in symptoms_of(text), text


@pytest.mark.parametrize("text", [
    "the checkpoint was saved to /data/ckpt",  # no failure word
    "results: accuracy 81.2%",  # a result, not a difference
    "Loading checkpoint shards: 100%|##########| 4/4",  # a progress bar
    "allreduce bandwidth 180 GB/s",  # a measurement
    "free memory after loading the weights: 51.2 GiB",  # an amount, compared with nothing
    "ImportError: libgomp.so.1: cannot allocate memory in static TLS block",  # a loader limit, not memory
    "Allocate SQ failed",  # a queue, not memory
])
def test_neutral_statements_are_no_symptom(text):
    assert symptoms_of(text) == (), text


def test_machine_records_and_warnings_are_no_description():
    text = (b"[INFO] 2025-01-01 10:00:00 tokenizer loaded, fast path unavailable, slow path used\n"
            b"[WARNING] slow tokenizer in use\n"
            b"W0101 10:00:00.000 engine.cc:1] prefill is slow\n"
            b"the whole run is slow\n")
    got = symptom_lines(text, 0, len(text))
    assert [(line, cats) for line, _, _, cats in got] == [(3, ("performance",))]


def test_healthy_logs_stay_clean(tmp_path):
    r = run(tmp_path, "step 1 loss 2.31 tokens/s=41234\nstep 2 loss 2.30 tokens/s=41500\n")
    assert not r.matches and r.exit_code == 0


def test_symptoms_are_read_only_in_pasted_reports(tmp_path):
    big = "step 1 loss 2.31\n" * (UNWRAP_MAX // 17 + 10) + "the whole run is slow\n"
    r = run(tmp_path, big)
    assert not r.matches and r.exit_code == 0  # a big log is a machine log: its prose is not read


def test_chinese_words_are_looked_up_through_the_glossary():
    terms = dict(query_terms("训练时显存不足"))
    assert terms.get("memory") == 0.6 and terms.get("oom") == 0.6
    assert dict(query_terms("slow steps", None, ("performance",))).get("performance") == 0.8


def test_an_unknown_camel_case_identifier_is_looked_up_by_its_parts():
    postings = {"tls": [[0, 1.0]], "status": [[0, 1.0]], "inconsistent": [[0, 1.0]], "hcclcomm": [[1, 1.0]]}
    terms = dict(query_terms("Some ranks tlsStatus are inconsistent", postings))
    assert terms.get("tls") == 1.0 and terms.get("status") == 1.0 and terms.get("tlsstatus") == 1.0
    # an identifier the kb names as a whole is looked up as a whole only (its parts would dilute it)
    terms = dict(query_terms("HCCLComm init failed", postings))
    assert "hcclcomm" in terms and "hccl" not in terms and "comm" not in terms
    assert "tls" not in dict(query_terms("tlsStatus"))  # without an index: the plain tokens


def test_announcing_prose_is_not_read_as_the_error(tmp_path):
    # the announcing line names docker (container-devices-missing's word); the error itself is a
    # missing symbol in a torch_npu extension: a version mismatch
    text = ("我在 docker 容器里按照教程安装之后，执行 import 会报错:\n"
            "OSError: /opt/ext/ascend_extension.so: undefined symbol: _ZN7c10_npu3acl20AclrtPeekAtLastErrorE\n")
    r = run(tmp_path, text)
    assert r.matches and r.matches[0].category == "version-mismatch"


@pytest.mark.parametrize("text, category", [
    # reports told in words only: no error line, no symptom word; written for this test
    ("Inside the docker container npu-smi info prints nothing and torch.npu.device_count() returns 0.\n",
     "device-unavailable"),
    ("我们在容器里面看不到任何 NPU 卡，宿主机上是正常的\n", "device-unavailable"),
    ("After the first epoch the resident memory of every dataloader worker keeps climbing until the host "
     "runs out of RAM and the job is killed.\n", "out-of-memory"),
])
def test_a_report_in_words_only_gets_the_closest_entries(tmp_path, text, category):
    r = run(tmp_path, text)
    assert r.matches and r.matches[0].confidence == "likely", [m.id for m in r.matches]
    assert category in [m.category for m in r.matches[:3]], [m.id for m in r.matches]


def test_machine_records_are_no_prose():
    from envcheck.kb.match import prose_lines

    text = (b"2025-01-01 10:00:00 starting the training loop with eight devices\n"
            b"[INFO] loading the tokenizer from the local cache directory\n"
            b"W0101 10:00:00.000 engine.cc:1] waiting for all workers to report in\n"
            b">>> import torch_npu; print(torch_npu.npu.device_count())\n"
            b"| NPU | Name | Health | Power | Temp |\n"
            b"see https://gitee.com/ascend/pytorch for the installation guide\n"
            b"step 12 loss 2.31 tokens/s 41234\n"
            b"the job stops after the first checkpoint and never resumes\n")
    got = prose_lines(text, 0, len(text))
    assert [t for _, t in got] == ["the job stops after the first checkpoint and never resumes"]
