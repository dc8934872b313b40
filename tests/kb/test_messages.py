"""The message catalogue (envcheck/kb/messages.yaml) and its use by diagnose (issue 11)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from envcheck.kb import messages as msgs
from envcheck.kb.diagnose import CONFIDENCES, diagnose
from envcheck.kb.entries import load_kb
from envcheck.kb.messages import (
    MessageBookError,
    chunks,
    key_words,
    load_messages,
    lookup,
    parse,
)
from envcheck.kb.taxonomy import CATEGORY_IDS

REPOS = {"Ascend/pytorch", "Ascend/op-plugin", "vllm-project/vllm-ascend", "hicann/hccl", "hicann/hcomm",
         "mindspore-ai/mindspore", "hicann/runtime", "Ascend/torchair"}


def _book(*records: dict, repo: str = "Ascend/pytorch") -> msgs.MessageBook:
    return parse({"schema": 1, "sources": {"t": {"repo": repo, "commit": "0" * 40, "messages": list(records)}}})


def _rec(template: str, category: str = "out-of-memory", **kw: object) -> dict:
    return {"template": template, "origin": "torch_npu/csrc/x.cpp", "category": category, "level": "error", **kw}


# --------------------------------------------------------------------------------------------- the shipped data

def test_catalogue_loads_with_a_category_and_a_pinned_origin_for_every_record():
    book = load_messages()
    assert len(book) > 1000
    for sid, src in book.sources.items():
        assert src["repo"] in REPOS, sid
        assert re.fullmatch(r"[0-9a-f]{40}", src["commit"]), sid
    for m in book.messages:
        assert m.category in CATEGORY_IDS, m.template
        assert m.level in msgs.LEVELS
        repo, _, commit = m.source.partition("@")
        assert repo in REPOS and re.fullmatch(r"[0-9a-f]{40}", commit)
        assert m.origin and not m.origin.startswith("/") and "{}" not in m.origin
        assert sum(len(c) for c in m.chunks) >= 20, m.template  # the script's floor on literal text


def test_every_named_kb_entry_exists():
    ids = {e.id for e in load_kb().entries}
    named = {e for m in load_messages().messages for e in m.entries}
    assert named, "the catalogue names no kb entry at all"
    assert named <= ids, sorted(named - ids)


def test_catalogue_stays_modest_and_every_template_is_indexed():
    path = msgs.MESSAGES_PATH
    assert path.stat().st_size < 1_500_000
    book = load_messages()
    indexed = {i for ids in book.index.values() for i in ids}
    assert indexed == set(range(len(book)))
    # a line costs a look-up per word plus the templates of its words' buckets: the buckets stay small
    assert max(len(v) for v in book.index.values()) <= 50


def test_malformed_catalogue_is_refused():
    with pytest.raises(MessageBookError):
        parse({"schema": 1, "sources": {"t": {"repo": "Ascend/pytorch", "commit": "0" * 40,
                                              "messages": [_rec("NPU out of memory while allocating", "no-such")]}}})
    with pytest.raises(MessageBookError):
        parse({"schema": 2, "sources": {}})
    with pytest.raises(MessageBookError):
        parse({"schema": 1, "sources": {"t": {"repo": "Ascend/pytorch", "messages": []}}})


# --------------------------------------------------------------------------------------------- template matching

def test_chunks_split_at_every_placeholder_spelling():
    assert chunks("a {} b {name} c {:>8} d %s e %d f %lu g %.2f h") == ("a", "b", "c", "d", "e", "f", "g", "h")
    assert chunks("{}only {} words{}") == ("only", "words")


def test_key_words_skip_words_glued_to_a_placeholder():
    # "ret" and "ms" may be glued to the inserted value ("ret7", "500ms"): no key
    assert key_words("Failed to empty queue, ret{} after {}ms waiting") == ["Failed", "empty", "queue", "after",
                                                                              "waiting"]


@pytest.mark.parametrize("prefix", [
    "",
    "[ERROR] 2025-03-26-17:01:03 (PID:159, Device:0, RankID:-1) ",
    "E           RuntimeError: ",
    "[rank3]: ",
    "(VllmWorker rank=0 pid=51715) ERROR 08-04 12:34:15 [multiproc_executor.py:546] ",
    "[W compiler_depend.ts:51] Warning: ",
])
def test_a_line_matches_its_template_whatever_the_prefix_and_values(prefix):
    book = _book(_rec("Failed to find function %s, maybe you cann version is too low, please upgrade it",
                      "version-mismatch"))
    hits = book.lookup(prefix + "Failed to find function HcclGetCommName, maybe you cann version is too low, "
                                "please upgrade it")
    assert [h.message.category for h in hits] == ["version-mismatch"]


def test_a_different_message_does_not_match():
    book = _book(_rec("NPU out of memory. Tried to allocate {} (NPU {}; {} total capacity"),
                 _rec("Failed to find function {}, maybe you cann version is too low", "version-mismatch"))
    assert book.lookup("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79 GiB total capacity") == []
    assert book.lookup("Failed to find module foo, maybe your python version is too low") == []
    # the chunks must come in order
    assert book.lookup("total capacity 5 GiB; NPU out of memory. Tried to allocate 1 GiB (NPU 0;") == []


def test_a_line_cut_short_matches_only_after_enough_literal_text():
    book = _book(_rec("CAUTION: The operator '{}' is not currently supported on the NPU backend and will fall back "
                      "to run on the CPU.", "cpu-fallback"))
    # hard-wrapped paste (tests/data/field-corpus/b-005.yaml, a DEV excerpt): the line stops mid-word
    cut = "Warning: CAUTION: The operator 'aten::isin.Tensor_Tensor_out' is not currently supported on the NPU b"
    assert [h.message.category for h in book.lookup(cut)] == ["cpu-fallback"]
    assert book.lookup("CAUTION: The operator 'x' is not curr") == []  # too little of it
    assert book.lookup("CAUTION: The operator 'x' is not currently supported on the NPU backend, see") == []


def test_the_most_specific_template_comes_first():
    book = _book(_rec("NPU out of memory. Tried to allocate {}"),
                 _rec("NPU out of memory. Tried to allocate more than 1EB memory.", "device-runtime-error"))
    hits = book.lookup("RuntimeError: NPU out of memory. Tried to allocate more than 1EB memory.")
    assert [h.message.category for h in hits] == ["device-runtime-error", "out-of-memory"]


# --------------------------------------------------------------------------------------------- real lines

@pytest.mark.parametrize("line, category", [
    # shared/research/error-catalogue.md OM-01 (threads xingchensong/TouchNet#100, sgl-project/sglang#29838):
    # torch_npu 2.1's spelling "PyTorch) If" and the current "PyTorch).If"
    ("RuntimeError: NPU out of memory. Tried to allocate 5.03 GiB (NPU 3; 60.96 GiB total capacity; 49.47 GiB "
     "already allocated; 49.47 GiB current active; 1.32 GiB free; 57.55 GiB reserved in total by PyTorch) If "
     "reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.", "out-of-memory"),
    ("torch.OutOfMemoryError: NPU out of memory. Tried to allocate 72.00 MiB (NPU 0; 61.27 GiB total capacity; "
     "56.05 GiB already allocated; 56.05 GiB current active; 5.04 MiB free; 58.39 GiB reserved in total by "
     "PyTorch).If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.",
     "out-of-memory"),
    # error-catalogue.md CF-01 (hiyouga/LlamaFactory#4135)
    ("[rank1]:[W VariableFallbackKernel.cpp:51] Warning: CAUTION: The operator 'aten::isin.Tensor_Tensor_out' is "
     "not currently supported on the NPU backend and will fall back to run on the CPU. This may have performance "
     "implications. (function npu_cpu_fallback)", "cpu-fallback"),
    # error-catalogue.md VM-04 (strings of libtorch_npu.so 2.13.0)
    ("Failed to find function dcmi_init,  maybe your hdk version is too low, please upgrade it.", "version-mismatch"),
    # error-catalogue.md HT-05 (ProcessGroupHCCL.cpp)
    ("[Rank 3] Watchdog caught collective operation timeout: WorkHCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1, "
     "NumelOut=1, Timeout(ms)=1800000) ran for 1800021 milliseconds before timing out.", "hccl-timeout"),
    # error-catalogue.md HT-04 (HCCL user guide hcclug_000025): HCOMM's task-exception handler
    ("[ERROR] HCCL(858209,all_reduce_test):2025-12-10-19:52:32.589.097 [task_exception_handler.cc:27] [858274]"
     "[TaskExecStage][Timeout][HOST]Task run failed, base information is streamID:[1740], taskID[23], "
     "tag[AllReduce_127.0.0.1%enp_60000_0_1765367469951573], AlgType(level 0-1-2):[fullmesh-ring-NHR].",
     "hccl-timeout"),
    # error-catalogue.md HI-01: HCOMM's socket manager, a link set-up timeout (not a running collective's)
    ("[ERROR] HCCL(137309,all_reduce_test):2025-12-24-16:19:45.416.014 [hccl_socket_manager.cc:813] [137400]"
     "[Wait][LinkEstablish]wait socket establish timeout, role[0] rank[0] timeout[120 s]", "hccl-init"),
    # error-catalogue.md OM-06 (MindSpore "CANN Common Error Analysis", EE9999): MindSpore 1.x's HBM allocation
    ("[EXCEPTION] DEVICE(170414,fffe397fa1e0,python):2021-09-13-15:29:07.465.388 [mindspore/ccsrc/runtime/device/"
     "ascend/ascend_memory_manager.cc:62] MallocDeviceMemory] Malloc device memory failed, size[32212254720], "
     "ret[207001], Device 6 may be other processes occupying this card, check as: ps -ef|grep python",
     "out-of-memory"),
    # error-catalogue.md OM-08: MindSpore's graph-scheduler actors
    ("RuntimeError: Device(id:0) memory isn't enough and alloc failed, kernel name: Default/network-WithLossCell/"
     "MatMul-op1, alloc size: 1073741824B.", "out-of-memory"),
    # the CANN runtime (hicann/runtime v8.5.0 davinci_kernel_task.cc): tests/data/diagnose/mined/hist-torch.yaml
    # (Ascend/torchair docs/zh/appendix/cases/superkernel_cases.md)
    ("[ERROR] RUNTIME(1567697,python3):2026-03-28-11:32:18.888.239 [davinci_kernel_task.cc:1639]1568661 "
     "PrintErrorInfoForDavinciTask:[DFX_INFO]Aicore kernel execute failed, device_id=0, stream_id=70, "
     "report_stream_id=73, task_id=0, flip_num=0, fault kernel_name=te_superkernel_911c4c5214b52a01ea224923a6130b1ff"
     "609f8f8759f8dc118fe65b846e4573e, fault kernel info ext=none, program id=1, hash=9430089888170931922.",
     "device-runtime-error"),
    # ACL (hicann/runtime src/acl/aclrt_impl acl.cpp / device.cpp): tests/data/field-corpus/d-008.yaml (DEV)
    ("get device count failed, runtime result = 207004.[FUNC:ReportCallError][FILE:log_inner.cpp][LINE:161]",
     "device-unavailable"),
    ("open device 0 failed, runtime result = 107001.[FUNC:ReportCallError][FILE:log_inner.cpp][LINE:161]",
     "device-unavailable"),
    # TorchAir's GE converters (Ascend/torchair fced8842 python/torchair/_ge_concrete_graph/ge_converter/aten/gru.py
    # raises this; its docs/zh/appendix/cases/graph_failed_cases.md quotes "torch.xxx ge_converter is not
    # implemented!"): an op name the catalogue never saw matches too, the op name being a placeholder
    ("NotImplementedError: torch.ops.aten.gru.input ge_converter is not implemented!", "op-unsupported"),
    ("NotImplementedError: torch.ops.aten.no_such_op.default ge_converter is not implemented!", "op-unsupported"),
    # tests/data/field-corpus/b-001.yaml (DEV)
    ("Error:RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.96 GiB total capacity; 55.91 GiB "
     "already allocated; 55.91 GiB current active; 1.80 GiB free; 58.73 GiB reserved in total by PyTorch) If "
     "reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.", "out-of-memory"),
])
def test_real_lines_get_the_category_of_the_code_that_prints_them(line, category):
    hits = lookup(line)
    assert hits and hits[0].message.category == category


def test_torch_npu_wrappers_around_any_failed_call_make_no_claim():
    # the code after "error code is" says what failed (the error-code dictionary reads it), not the wrapper
    line = ("RuntimeError: init:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:292 NPU function error: "
            "aclrtGetDeviceCount(&device_count), error code is 207004")
    assert lookup(line) == []


# --------------------------------------------------------------------------------------------- diagnose

def test_message_is_a_confidence():
    assert "message" in CONFIDENCES


def test_a_known_message_names_its_entries_when_no_pattern_matches(tmp_path: Path, monkeypatch):
    entry = next(e for e in load_kb().entries if e.category == "out-of-memory")
    book = _book(_rec("Quokka allocator gave up on segment {} after {} retries", "out-of-memory",
                      entries=[entry.id]))
    monkeypatch.setattr(msgs, "load_messages", lambda path=None: book)
    log = tmp_path / "train.log"
    log.write_text("step 1 loss 2.3\nRuntimeError: Quokka allocator gave up on segment 7 after 3 retries\n",
                   encoding="utf-8")
    r = diagnose([str(log)])
    got = [m for m in r.matches if m.confidence == "message"]
    assert [m.id for m in got] == [entry.id]
    assert got[0].lines[0]["line"] == 2
    assert r.matches[0].id == entry.id  # above what the search fallback proposes
    from envcheck.render.text import render_diagnose
    assert "by known message" in render_diagnose(r)


def test_a_known_message_favours_its_category_in_the_fallback(tmp_path: Path, monkeypatch):
    line = "RuntimeError: Quokka allocator gave up on segment 7 after 3 retries"
    log = tmp_path / "train.log"
    log.write_text(line + "\n", encoding="utf-8")
    monkeypatch.setattr(msgs, "load_messages", lambda path=None: _book())
    plain = diagnose([str(log)])
    assert plain.matches and all(m.confidence == "likely" for m in plain.matches)
    # the runner-up's category, named by a message the line is an instance of, takes the lead
    target = next(m.category for m in plain.matches if m.category != plain.matches[0].category)
    monkeypatch.setattr(msgs, "load_messages",
                        lambda path=None: _book(_rec("Quokka allocator gave up on segment {} after {} retries",
                                                     target)))
    hinted = diagnose([str(log)])
    assert hinted.matches[0].category == target


def test_a_specific_pattern_match_leaves_messages_out(tmp_path: Path):
    # the DEV excerpt b-007's line: kb entry fork-npu-reinit's pattern matches it, so no `message` match is added
    log = tmp_path / "x.log"
    log.write_text("RuntimeError: Cannot re-initialize NPU in forked subprocess. To use NPU with multiprocessing, "
                   "you must use the 'spawn' start method\n", encoding="utf-8")
    r = diagnose([str(log)])
    assert r.matches[0].id == "fork-npu-reinit" and r.matches[0].confidence == "matched"
    assert all(m.confidence != "message" for m in r.matches)


# --------------------------------------------------------------------------------------------- the generator

def _script():
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "scripts" / "extract_messages.py"
    spec = importlib.util.spec_from_file_location("extract_messages", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generator_reads_cpp_message_macros():
    x = _script()
    src = '''
    #define TORCH_NPU_WARN(...) do {} while (0)
    TORCH_CHECK(ret == ACL_SUCCESS, "Failed to empty NPU task queue, ret:", ret, PTA_ERROR(ErrCode::INTERNAL));
    TORCH_CHECK((output_size.size() == 2), "adaptive_avg_pool2d: output size must be 2." + OPS_ERROR(ErrCode::PARAM));
    ASCEND_LOGE("Custom hand fail! name=%s, ret=%d", cur_paras->opType, ret);  // a comment, "quoted"
    TORCH_NPU_WARN_ONCE("The oprator of ", op, " is executed, Currently High Accuracy");
    auto retmsg = std::string("NPU out of memory. Tried to allocate ") + format_size(n) + " (NPU " +
        std::to_string(device) + "; total capacity)";
    '''
    got = [(x.normalise(m), level) for m, level, _ in x.cpp_messages(src)]
    assert ("NPU out of memory. Tried to allocate {} (NPU {}; total capacity)", "error") in \
        [(g.lstrip("{}"), lv) for g, lv in got]
    assert ("Failed to empty NPU task queue, ret:{}", "error") in got
    assert ("adaptive_avg_pool2d: output size must be 2.", "error") in got
    assert ("Custom hand fail! name={}, ret={}", "error") in got
    assert ("The oprator of {} is executed, Currently High Accuracy", "warning") in got
    assert len(got) == 5  # not the #define


def test_generator_reads_hccl_printf_logs_and_mindspore_log_streams():
    x = _script()
    src = '''
    HCCL_ERROR("[%s]errNo[0x%016llx] wait socket establish timeout, role[%u] rank[%u] timeout[%lld s]", __func__,
        HCCL_ERROR_CODE(HCCL_E_TIMEOUT), role, rank, timeout);
    HCCL_RUN_WARNING("[NicPlugin] dlopen %s failed: %s.", path.c_str(), dlerror());
    HCCL_INFO("an info line is no message %s", x);
    CHK_PRT_RET(ret != 0, HCCL_WARNING("[Parse]HCCL_BUFFSIZE[%s] is invalid", s), HCCL_E_PARA);
    '''
    got = {(x.normalise(m), level) for m, level, _ in x.cpp_messages(src)}
    assert got == {("[{}]errNo[0x{}] wait socket establish timeout, role[{}] rank[{}] timeout[{} s]", "error"),
                   ("[NicPlugin] dlopen {} failed: {}.", "warning"),
                   ("[Parse]HCCL_BUFFSIZE[{}] is invalid", "warning")}
    src = '''
    MS_LOG(EXCEPTION) << "Malloc device memory failed, size[" << size << "], ret[" << ret << "], "
                      << "Device " << id << " may be other processes occupying this card, check as: ps -ef|grep python";
    MS_EXCEPTION(DeviceProcessError) << "Call rtSetDevice, ret[" << static_cast<int>(ret) << "]";
    MS_LOG(WARNING) << "Out of Memory. Request memory size: " << size << std::endl << "Memory Statistic:" << s;
    MS_LOG(INFO) << "not a message: info level";
    MS_LOG(EXCEPTION) << "Ascend kernel runtime initialization failed." << "#dmsg#Framework Error Message:#dmsg#" << e;
    '''
    got = {(x.normalise(m), level) for m, level, _ in x.ms_messages(src)}
    assert got == {("Malloc device memory failed, size[{}], ret[{}], Device {} may be other processes occupying this "
                    "card, check as: ps -ef|grep python", "error"),
                   ("Call rtSetDevice, ret[{}]", "error"),
                   ("Out of Memory. Request memory size: {}", "warning"),
                   ("Ascend kernel runtime initialization failed.", "error")}


def test_generator_categorises_hccl_and_mindspore_by_their_subsystems():
    x = _script()
    # a timeout in HCOMM's link set-up is the connect timeout (hccl-init), not re-claimed as hccl-timeout
    assert x.categorise("hcomm", "src/legacy/ascend910/framework/common/src/topo/topoinfo_exchange_agent.cc",
                        "[{}][{}] topo exchange agent get socket timeout! timeout[{} s]") == "hccl-init"
    assert x.categorise("hcomm", "src/legacy/ascend910/common/debug/profiling/task_exception_handler.cc",
                        "[TaskExceptionHandler]Task run failed, base information is {}") == "hccl-timeout"
    assert x.categorise("hcomm", "src/legacy/ascend910/framework/common/src/topo/topoinfo_ranktableParser.cc",
                        "[{}][{}]errNo[0x{}] Load ranktable file[{}] failed") == "rank-config"
    # the op entrances and algorithms print every kind of failure: no claim unless the message states one
    assert x.categorise("hcomm", "src/legacy/ascend910/framework/op_base/src/op_base.cc",
                        "[HcclCommInitRootInfo]errNo[0x{}] init communicator failed") is None
    assert x.categorise("hcomm", "src/legacy/ascend910/framework/op_base/src/op_base.cc",
                        "[{}] NPU out of memory while allocating the CCL buffer") == "out-of-memory"
    assert x.categorise("hccl", "src/ops/all_reduce/executor/x.cc", "[AllReduce] slice num[{}] is wrong") is None
    assert x.categorise("hccl", "src/common/alg_env_config.cc",
                        "HCCL_DETERMINISTIC is set to [{}], which is incorrect") == "hccl-init"
    assert x.categorise("mindspore", "mindspore/ccsrc/plugin/device/ascend/hal/device/ascend_memory_adapter.cc",
                        "rtMalloc mem size[{}] fail, ret[{}]") == "out-of-memory"
    assert x.categorise("mindspore", "mindspore/ccsrc/plugin/device/ascend/hal/hccl_adapter/hccl_adapter.cc",
                        "Init hccl graph adapter failed.") == "hccl-init"
    assert x.categorise("mindspore", "mindspore/ccsrc/plugin/device/ascend/hal/device/ascend_kernel_runtime.cc",
                        "Call rtSetDevice, ret[{}]") is None
    assert x.categorise("mindspore", "mindspore/ccsrc/runtime/device/ascend/ascend_memory_manager.cc",
                        "Malloc device memory failed, size[{}], ret[{}]") == "out-of-memory"
    assert x.SKIP_PATH.search("mindspore/ccsrc/runtime/device/gpu/gpu_memory_manager.cc")


def test_generator_reads_python_raises_warnings_and_logger_calls():
    x = _script()
    src = '''
import warnings
def f(device, n):
    if n:
        raise RuntimeError(f"Cannot re-initialize NPU {device} in forked subprocess." + pta_error(ErrCode.UNAVAIL))
    warnings.warn("torch_npu.npu.memory_cached has been renamed to %s" % n)
    logger.warning("HCCL communicator for group %s could not be created after %d tries", n, 3)
    logger.info("not a message: info level")
    raise ValueError(msg)
'''
    got = {(x.normalise(m), level) for m, level, _ in x.py_messages(src)}
    assert got == {("Cannot re-initialize NPU {} in forked subprocess.", "error"),
                   ("torch_npu.npu.memory_cached has been renamed to {}", "warning"),
                   ("HCCL communicator for group {} could not be created after {} tries", "warning")}


def test_generator_categorises_by_origin_then_by_what_the_message_states():
    x = _script()
    assert x.categorise("torch_npu", "torch_npu/csrc/core/npu/NPUCachingAllocator.cpp",
                        "Could not find pool of id {} in the graph pools") == "out-of-memory"
    assert x.categorise("torch_npu", "torch_npu/csrc/distributed/ProcessGroupHCCL.cpp",
                        "HCCL communicator could not be created for group {}") == "hccl-init"
    assert x.categorise("torch_npu", "torch_npu/csrc/distributed/ProcessGroupHCCL.cpp",
                        "Watchdog caught collective operation timeout: {}") == "hccl-timeout"
    assert x.categorise("op_plugin", "op_plugin/ops/opapi/AddKernelNpuOpApi.cpp",
                        "the op will be executed on CPU because {}") == "cpu-fallback"
    assert x.categorise("torch_npu", "torch_npu/_inductor/codegen/triton.py", "some inductor message here") is None
    assert not x.distinctive("Expected all tensors to be on the same device, but found {} and {}")
    assert not x.distinctive("invalid value {}")
    assert not x.distinctive("{}:{}:{} NPU function error: {}, error code is {}")
    assert x.distinctive("Failed to find function {}, maybe you cann version is too low")


def test_generator_reads_the_cann_runtime_log_macros():
    x = _script()
    src = '''
    #define ERROR_RETURN(ERRCODE, format, ...) COND_RETURN_ERROR((ERRCODE) != RT_ERROR_NONE, ERRCODE, format)
    RT_LOG(RT_LOG_ERROR, "Task exception! device_id=%u, stream_id=%d, task_id=%" PRIu64 ".", dev, sid, tid);
    RT_LOG(RT_LOG_WARNING, "[drv api] halMemAlloc failed:size=%" PRIu64 "(bytes), drvRetCode=%d.", size, ret);
    RT_LOG(RT_LOG_INFO, "an info line is no message, stream_id=%d", sid);
    COND_RETURN_ERROR_MSG_INNER(error != RT_ERROR_NONE, error, "Failed to create slave stream, retCode=%#x.", error);
    ACL_LOG_INNER_ERROR("[Check][Item]TensorDatasetDeserializes alloc failed");
    RT_LOG_OUTER_MSG(RT_AICPU_TIMEOUT_ERROR, "Aicpu kernel execute failed, device_id=%u", dev);
    RT_LOG_OUTER_MSG_IMPL(ErrorCode::EE1023, "Alloc Stream resource", "Too many streams are created");
    COND_RETURN_WITH_NOLOG(ptr == nullptr, RT_ERROR_INVALID_VALUE);
    '''
    got = {(x.normalise(m), level) for m, level, _ in x.rt_messages(src)}
    assert got == {("Task exception! device_id={}, stream_id={}, task_id={}.", "error"),
                   ("[drv api] halMemAlloc failed:size={}(bytes), drvRetCode={}.", "warning"),
                   ("Failed to create slave stream, retCode={}.", "error"),
                   ("[Check][Item]TensorDatasetDeserializes alloc failed", "error"),
                   ("Aicpu kernel execute failed, device_id={}", "error")}
    # the other sources are read without them: their records stay as they were
    assert not list(x.cpp_messages(src.replace("#define", "")))


def test_generator_categorises_the_cann_runtime_conservatively():
    x = _script()
    # the execution engines and the device's error reports: execution errors, at HEAD and in v8.5.0's layout
    assert x.categorise("runtime", "src/runtime/core/src/engine/hwts/hwts_engine.cc",
                        "Task exception! device_id={}, stream_id={}, task_id={}") == "device-runtime-error"
    assert x.categorise("runtime", "src/runtime/feature/src/device/device_error_proc.cc",
                        "Get sdma mte error=0x{}, cqeStatus=0x{}.") == "device-runtime-error"
    # the rest claims only what the message states
    assert x.categorise("runtime", "src/runtime/core/src/stream/stream.cc",
                        "Alloc sq cq failed, stream_id={}, retCode={}.") is None
    assert x.categorise("runtime", "src/runtime/core/src/kernel/kernel.cc", "Add kernel failed, retCode={}.") is None
    assert x.categorise("runtime", "src/runtime/driver/npu_driver_mem.cc",
                        "Call driver api halMemAlloc failed, drvRetCode={}, size={}(bytes).") == "out-of-memory"
    assert x.categorise("runtime", "src/runtime/driver/npu_driver_mem.cc",
                        "Call driver api halMemAdvise failed, drvRetCode={}, drvDevId={}.") is None
    assert x.categorise("runtime", "src/runtime/driver/npu_driver.cc",
                        "Call driver api halDeviceOpen failed, drvRetCode={}, drvDevId={}.") == "device-unavailable"
    assert x.categorise("runtime", "src/runtime/core/src/task/task_manager.cc",
                        "Task execution failed, device_id={}, stream_id={}") == "device-runtime-error"
    # an HCCL AI CPU task's error is a link's or a peer's: not claimed as the device's
    assert x.categorise("runtime", "src/runtime/core/src/task/task_info/notify_task.cc",
                        "hccl aicpu task error is link error, device_id={}, stream_id={}") is None
    # the runtime's keywords are its own: another source's message is not re-claimed by them
    assert x.categorise("torch_npu", "torch_npu/_inductor/x.py", "Task execution failed, device_id={}") is None


def test_a_generic_runtime_line_is_no_message():
    # the runtime's wrappers print "... failed, retCode=..." for any failed call: no template claims such a line
    assert lookup("[ERROR] RUNTIME(1234,python):2025-01-01-00:00:00.000.000 [stream.cc:1093] 1234 GetError: "
                  "report error") == []
    assert lookup("rtStreamSynchronize failed, retCode=0x7150050") == []


def test_generator_reads_torchair_log_streams_and_makes_its_op_names_placeholders():
    x = _script()
    src = '''
    TNG_LOG(ERROR) << "The dim size of Ascend GE graph NetOutput: [" << d << "] is not equal to FX graph NetOutput";
    TNG_LOG(DEBUG) << "FX graph NetOutput shapes is : " << s;
    '''
    got = {(x.normalise(m), level) for m, level, _ in x.ms_messages(src, x.TNG_STREAM)}
    assert got == {("The dim size of Ascend GE graph NetOutput: [{}] is not equal to FX graph NetOutput", "error")}
    assert not list(x.ms_messages(src))  # MindSpore's streams are another macro
    line = "When pad is Tensor, torch.ops.aten.constant_pad_nd.default ge_converter is not implemented!"
    want = "When pad is Tensor, torch.ops.aten.{} ge_converter is not implemented!"
    assert x.OP_NAME.sub(r"torch.ops.\1.{}", line) == want
    assert x.categorise("torchair", "python/torchair/_ge_concrete_graph/ge_converter/aten/gru.py",
                        "torch.ops.aten.{} ge_converter is not implemented!") == "op-unsupported"
    # the collective converters advise on patching collectives; graph capture and caching say nothing definite
    assert x.categorise("torchair", "python/torchair/_ge_concrete_graph/ge_converter/experimental/hcom_allgather.py",
                        "When you enable torch.compile or use the cache_compile feature, use the patch_for_hcom "
                        "interface") is None
    assert x.categorise("torchair", "python/torchair/_acl_concrete_graph/acl_graph.py",
                        "Invalid graph pool handle type, got value={}, type={}") is None


def test_a_generic_torchair_line_is_no_message():
    assert lookup("NotImplementedError: ge_converter is not implemented") == []
