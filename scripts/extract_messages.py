#!/usr/bin/env python3
"""Extract the error and warning messages of torch_npu, op-plugin, vllm-ascend, HCCL / HCOMM, MindSpore's Ascend
backend, the CANN runtime / ACL and TorchAir into envcheck/kb/messages.yaml.

Usage (needs local bare git mirrors; reads the refs named below, never builds or runs their code; not run by
tests):

    PYTHONPATH=$PWD python scripts/extract_messages.py [--mirrors /work/.mirror] [--out envcheck/kb/messages.yaml]
    PYTHONPATH=$PWD python scripts/extract_messages.py --relink   # after a kb change: no mirrors needed

Mirrors are ``<mirrors>/<owner>+<name>/repo`` (bare; MIRRORED_AT names forks holding the history of a repository
too big to mirror here). For each source repo at each of its refs (HEAD, or a pinned commit or tag) it reads:

* C++ (``.cpp .h .hpp .cc``): the message arguments of TORCH_CHECK / TORCH_CHECK_WITH / AT_ERROR /
  TORCH_NPU_WARN(_ONCE) / TORCH_WARN(_ONCE) / ASCEND_LOGE / ASCEND_LOGW, and a message built into a variable
  named *msg* / *message* first (the allocator's "NPU out of memory" is). c10::str-style arguments are
  concatenated (string literals are text, any other expression is a ``{}`` placeholder); the printf format of
  ASCEND_LOG* and of HCCL's HCCL_ERROR / HCCL_WARNING / HCCL_RUN_WARNING (src/common/log.h) has its conversions
  (%s, %d, %016llx, ...) turned into ``{}``; PTA_ERROR(...) / OPS_ERROR(...) and the like are dropped (they append
  torch_npu's ``ERRxxxxx`` code line, which the error-code dictionary reads). MindSpore's log streams
  (``MS_LOG(EXCEPTION|ERROR|WARNING) << ...;``, ``MS_EXCEPTION(XxxError) << ...;``): each ``<<`` operand that is
  only string literals is text, any other a placeholder; its ``#dmsg#`` / ``#umsg#`` section markers end the line.
  TorchAir's ``TNG_LOG(ERROR|WARNING) << ...;`` likewise. The CANN runtime's and ACL's log and check-and-return
  macros (RT_MACROS: the first all-literal argument is the printf format), only for its own sources
  (RT_SOURCES), so that the older sources' records stay as they were.
* Python: ``raise XxxError(msg)``, ``warnings.warn(msg)`` and ``<logger>.error/warning/warn/exception/critical
  (msg)`` where msg is a literal, an f-string, ``"..." % x``, ``"...".format(x)`` or a ``+`` of those.

A template keeps only the message's first line (what a log shows on the error line), whitespace-collapsed and
cut at MAX_TEMPLATE characters. Category: by ORIGIN (the ORIGINS table below: the file that prints a message
says which subsystem failed), then KEYWORDS overrides where the message itself states another category
unambiguously ("out of memory", "will be executed on CPU", a timeout in the communicator). Decision on what is
left out: a message whose origin maps to no category and that no keyword claims is dropped (a catalogue record
always makes a category claim); so is a message too short or too generic to identify anything (fewer than
MIN_LITERAL literal characters or MIN_WORDS distinctive words once placeholders are removed, or one of the
GENERIC messages many causes share), and one with no whole word to index it by. Duplicates (the same template
printed from several files, as op-plugin's opapi and aclops copies do) are kept once, at the first origin.

`entries` names the kb entries that treat a message: an entry whose pattern matches the template (placeholders
filled with a sample value), or one of whose pattern examples or Symptom lines is an instance of the template.
When those entries share one category it replaces the origin's (the kb's diagnosis of that very message is more
specific); when they span several, the message is too general to name an entry and keeps none.
"""
from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from itertools import chain
from pathlib import Path

import yaml

from envcheck.kb.messages import chunks, key_words
from envcheck.kb.taxonomy import CATEGORY_IDS

MAX_TEMPLATE = 240
MIN_LITERAL = 20
MIN_WORDS = 3
STOP = frozenset("""a an the is are was were be been to of in on for at by with from and or not no but if it its this
that these those as into than then so can cannot could should must may will would has have had do does did got get
expected expect value values tensor tensors input inputs output outputs type types dtype size sizes shape shapes dim
dims argument arguments param params parameter parameters only all any one two which when while use used using
please support supported supports unsupported invalid valid error failed fail true false none null other current
equal greater less than number num must now also""".split())
# messages many different causes print: kept out (they would claim a category they do not identify)
# (searched in the literal text, chunks joined by spaces): the same-device check PyTorch and torch_npu both make,
# bare "unsupported dtype" / "invalid argument" lines, and torch_npu's wrappers around any failed ACL / aclnn /
# HCCL call ("NPU function error: <call>, error code is <n>"), whose error code, not the wrapper, says what failed
GENERIC = re.compile(r"^(Expected all tensors to be on the same device|Unsupported (data ?type|dtype)|Invalid argument|"
                     r"not implemented|Not implemented|Internal error|Unknown error)|"
                     r"\b[A-Z]+ function error: ,? ?(FORCE STOP )?,? ?error code is|NPU warning, error code is", re.I)

# source id -> (owner/name, path prefixes read, refs: HEAD and older releases). op-plugin is a submodule of
# Ascend/pytorch, mirrored on its own. Messages change between releases (torch_npu 2.1.0's OOM line reads
# "by PyTorch) If reserved", HEAD's "by PyTorch).If reserved"), and users run old releases, so the releases the
# field reports mostly name (torch_npu for PyTorch 2.1.0, vllm-ascend 0.7 / 0.9) are read too; an older ref
# only adds templates the newer ones lack.
SOURCES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "torch_npu": ("Ascend/pytorch", ("torch_npu/",), ("HEAD", "v7.2.0-pytorch2.1.0", "v6.0.0-pytorch2.1.0")),
    "op_plugin": ("Ascend/op-plugin", ("op_plugin/",), ("HEAD", "6.0.0")),
    "vllm_ascend": ("vllm-project/vllm-ascend", ("vllm_ascend/", "csrc/"), ("HEAD", "v0.9.1", "v0.7.3")),
    # CANN's collective library, open source since CANN 8.5 (gitcode.com/cann/hccl, on GitHub as hicann/hccl, the
    # CANN organisation's mirror): the collective operators; and HCOMM (gitcode.com/cann/hcomm), the communicator,
    # rank table, sockets, transports and task-exception reporting that HCCL's plog lines mostly come from
    "hccl": ("hicann/hccl", ("src/",), ("HEAD",)),
    "hcomm": ("hicann/hcomm", ("src/",), ("643b2bddbd67642bc063b2e93eb7522c3ba50802",)),
    # MindSpore's Ascend backend (device / kernel runtime, memory, HCCL adapter) and the runtime that drives it
    # (at HEAD: plugin/device/ascend/; MindSpore 1.x: runtime/device/ascend/ and runtime/hccl_adapter/). Read at
    # master of 2023-02-15 (2.0 development) and at v1.5.0 (2021), whose wordings users still paste
    "mindspore": ("mindspore-ai/mindspore", ("mindspore/ccsrc/plugin/device/ascend/", "mindspore/ccsrc/runtime/"),
                  ("9b65b907f96edf9a278f87e9ccab7d318aed310f", "v1.5.0")),
    # the CANN runtime and ACL (gitcode.com/cann/runtime, on GitHub as hicann/runtime; open source since CANN 8.5):
    # what a plog's RUNTIME / ASCENDCL lines and rtXxx / aclrtXxx failures say. Read at HEAD 681ef761 (2026-08-22)
    # and at the first open-source release v8.5.0 (c741ed4f, 2026-01-21; its sources lie under src/runtime/feature/
    # and it words many messages otherwise: "[drv api] halMemAlloc failed:size=..." before commit 7cd5a114
    # "Rectification error massage" made them "Call driver api halMemAlloc failed, drvRetCode=...")
    "runtime": ("hicann/runtime", ("src/runtime/", "src/acl/"), ("681ef7610df13c8128982901142a2c869ddbb53e", "v8.5.0")),
    # TorchAir, torch.compile's NPU backend (graph mode: the GE converters, the ACL graph / npugraph_ex capture
    # path, its C++ concrete graph and executors). Read at HEAD fced8842 (2026-06-01)
    "torchair": ("Ascend/torchair", ("python/torchair/", "npugraph_ex/", "torchair/"),
                 ("fced8842d149f16b587c2c867d427e4b766831ca",)),
}
# a repository whose own snapshot cannot be mirrored here is read from forks that hold its history, the first
# that has the ref (the commit read is one of the repository's own: a git commit id names its whole tree):
# hicann/hcomm's history, checked against the commits the code index holds for hicann/hcomm (2b912e7d README.md,
# 643b2bdd tp_mgr.cc); mindspore-ai/mindspore (over the size limit here) up to its master merge 9b65b907
# (i-robot !48914, 2023-02-15) in one fork and its release tags up to v1.5.0 in another
MIRRORED_AT = {"hicann/hcomm": ("libochao-huawei/hcomm",),
               "mindspore-ai/mindspore": ("hdu-cloud/mindspore", "kungfu-team/mindspore")}
# tests, docs, examples and build tooling (vllm-ascend's csrc/cmake, csrc/scripts) print nothing a user's run does
# (and MindSpore's GPU / CPU backends under runtime/: another device's messages)
SKIP_PATH = re.compile(r"(^|/)(tests?|docs?|examples?|benchmarks?|cmake|scripts)(/|$)|_test\.py$|(^|/)test_[^/]*$|"
                       r"^mindspore/ccsrc/runtime/(device/)?(gpu|cpu)/")

# (source id, path regex, category or None). First match wins. None: the subsystem says nothing definite
# (only a keyword override can give its messages a category).
ORIGINS: list[tuple[str, str, str | None]] = [
    # --- torch_npu (Ascend/pytorch) ---
    # the device / host caching allocators, their config (PYTORCH_NPU_ALLOC_CONF), memory pools and swapping:
    # what they print is about device (or pinned host) memory running out or being fragmented
    ("torch_npu", r"torch_npu/csrc/core/npu/(NPUCachingAllocator|CachingHostAllocator|NPUAllocatorConfig|"
                  r"NPUWorkspaceAllocator|NPUSwappedMemoryAllocator|MemPool|NPUBlockHandle|NPUMemorySwap)",
     "out-of-memory"),
    ("torch_npu", r"torch_npu/csrc/npu/NPUPluggableAllocator|torch_npu/csrc/aten/common/PinnedMemoryAllocator|"
                  r"torch_npu/npu/memory\.py", "out-of-memory"),
    # the CPU-fallback path: ops without an NPU kernel run on the host (CpuFallbackUtils, the fallback kernels)
    ("torch_npu", r"torch_npu/csrc/framework/utils/CpuFallbackUtils|torch_npu/csrc/aten/VariableFallbackKernel|"
                  r"torch_npu/csrc/aten/ops/\w*Fallback", "cpu-fallback"),
    # ProcessGroupHCCL, HCCL utils and loaders, the Python c10d layer: communicator creation and links
    # (timeouts are re-claimed by KEYWORDS as hccl-timeout, rank/world-size checks as rank-config)
    ("torch_npu", r"torch_npu/csrc/distributed/|torch_npu/csrc/core/npu/interface/(Hccl|Lccl)Interface|"
                  r"torch_npu/csrc/npu/DataParallelComm|torch_npu/distributed/(distributed_c10d|__init__|"
                  r"_hccl|_mode|_comm)", "hccl-init"),
    # rendezvous: MASTER_ADDR / MASTER_PORT / the TCP store and rank assignment
    ("torch_npu", r"torch_npu/distributed/(rendezvous|run|launcher)", "rank-config"),
    # a function torch_npu looks up in the installed CANN libraries is missing: the CANN is older than torch_npu
    ("torch_npu", r"torch_npu/csrc/core/npu/(interface/(Acl|Dcmi|Ml|Op|Sk)Interface|register/FunctionLoader)|"
                  r"torch_npu/csrc/core/npu/GetCANNInfo", "version-mismatch"),
    # device set-up and discovery: device count, set_device, SoC detection, affinity, aclInit (sys_ctrl)
    ("torch_npu", r"torch_npu/csrc/core/npu/(NPUFunctions|NpuVariables|sys_ctrl/|DeviceUtils|NPUAffinityController|"
                  r"GetAffinityCPUInfo|NPUInterruptAffinity|NPUPeerToPeerAccess)|"
                  r"torch_npu/npu/(__init__|utils)\.py", "device-unavailable"),
    # execution on the device: streams, the task queue, events, exceptions reported by the runtime, graphs,
    # recovery, stress detection
    ("torch_npu", r"torch_npu/csrc/core/npu/(NPUStream|NPUQueue|NPUEvent|NPUEventManager|NPUException|NPUGraph|"
                  r"NPURecovery|SecondaryStreamGuard|interface/AsyncTaskQueueInterface|impl/NPUGuardImpl)|"
                  r"torch_npu/csrc/npu/(Event|Stress_detect|Stream)|torch_npu/csrc/framework/OpParamMaker",
     "device-runtime-error"),
    # operator implementations and their argument / format checks: an input the NPU op does not accept
    ("torch_npu", r"torch_npu/csrc/aten/|torch_npu/csrc/framework/|torch_npu/csrc/core/npu/NPUFormat",
     "op-unsupported"),
    # profiler (C++ and Python): performance analysis
    ("torch_npu", r"torch_npu/csrc/profiler/|torch_npu/profiler/", "performance"),
    # automatic mixed precision / loss scaling, and silent-data-corruption detection (asd): numerics
    ("torch_npu", r"torch_npu/npu/amp/|torch_npu/asd/", "numerics"),
    # saving and loading tensors and storages
    ("torch_npu", r"torch_npu/utils/(serialization|storage)", "checkpoint"),
    # everything else (inductor / dynamo graph compilation, contrib modules, optimizers, onnx, path checks,
    # Python bindings in csrc/npu/Module.cpp that front several subsystems): no definite category
    ("torch_npu", r".", None),
    # --- op-plugin (Ascend/op-plugin): the NPU operator implementations (aclnn opapi, aclops, atb) and their
    # argument checks, and the meta (shape inference) functions
    ("op_plugin", r"op_plugin/", "op-unsupported"),
    # --- vllm-ascend ---
    # the camem device allocator used for sleep mode / KV cache
    ("vllm_ascend", r"vllm_ascend/device_allocator/", "out-of-memory"),
    # distributed: the HCCL communicators and parallel groups (the KV-transfer / KV-pool connectors are
    # bookkeeping of their own, mostly: no category unless a keyword claims one)
    ("vllm_ascend", r"vllm_ascend/distributed/(device_communicators/|parallel_state|eplb_communicator|__init__|"
                    r"utils|weight_transfer/hccl_engine)", "hccl-init"),
    # NPU custom ops, attention backends, quantization methods and kernels: a feature / shape / dtype the
    # Ascend implementation does not take
    ("vllm_ascend", r"vllm_ascend/(ops|attention|quantization)/|csrc/", "op-unsupported"),
    # the rest (platform and config checks, patches, models, workers, compilation): no definite category
    ("vllm_ascend", r".", None),
    # --- HCCL (hicann/hccl): the collective operators (algorithm selection, executors, templates) print internal
    # consistency checks of no definite category; the environment parser reads the HCCL_* variables (an invalid
    # value is the kb's EI0001 case, communicator set-up)
    ("hccl", r"src/common/alg_env_config\.", "hccl-init"),
    ("hccl", r".", None),
    # --- HCOMM (hicann/hcomm): HCCL's communicator, resources and maintenance ---
    # the rank table parsers (ranktable JSON: server_list / device_ip / rank_id ...)
    ("hcomm", r"src/legacy/ascend910/framework/common/src/topo/topoinfo_(ranktable|parse)|"
              r"src/coll_communicator_mgr/rank_graph/rank_table_info/", "rank-config"),
    # link set-up: the root-info / topology exchange between ranks, sockets, whitelists, the transport manager
    # that creates the links, and the HCCL_* environment parsers (a timeout here is the connect timeout, EI0006 /
    # EI0015, not a running collective's). The transports themselves (ibverbs, p2p, RoCE / IPC / UB memory) are
    # not claimed: they connect, and they also move the data of running collectives ("[PostSend] failed after
    # timeout", "[WaitOpFence] timeout")
    ("hcomm", r"src/legacy/ascend910/framework/common/src/topo/topoinfo_(detect|exchange)|"
              r"src/coll_communicator_mgr/rank_info_detect/|src/legacy/ascend950/framework/topo/rank_info_detect/|"
              r"src/base_comm/resources/endpoint_pairs/sockets/|src/base_comm/resources/endpoints/server_socket/|"
              r"src/legacy/ascend910/platform/resource/socket/|src/legacy/ascend950/framework/resource_manager/socket/|"
              r"src/legacy/ascend910/algorithm/impl/resource_manager/hccl_socket_manager|"
              r"src/legacy/ascend910/framework/communicator/impl/resource_manager/transport_manager|"
              r"src/legacy/ascend910/framework/common/src/config/env_config|src/legacy/ascend950/framework/env_config/|"
              r"src/legacy/ascend910/algorithm/impl/alg_env_config", "hccl-init"),
    # the task-exception handlers: a collective's task failed or timed out on the device (EI0002 notify wait,
    # "[TaskExecStage][Timeout] Task run failed", error CQE), reported with the op's stream / task / tag
    ("hcomm", r"src/legacy/ascend910/common/debug/profiling/task_exception_handler|"
              r"src/coll_communicator_mgr/dfx/taskException/|src/legacy/ascend950/framework/dfx/(aicpu/)?task_exception/|"
              r"src/legacy/ascend910/framework/device/debug/dfx/taskexception/", "hccl-timeout"),
    # the rest (algorithms, the op entrances that check arguments and create communicators alike, memory
    # registration, heartbeat (link set-up and in-run faults alike), CCU resources): no definite category
    ("hcomm", r".", None),
    # --- MindSpore's Ascend backend ---
    # the device memory adapter and pool: HBM sizing (max_device_memory) and allocation
    ("mindspore", r"mindspore/ccsrc/plugin/device/ascend/hal/device/ascend_memory_(adapter|pool)\.", "out-of-memory"),
    # (1.x: runtime/device/ascend/; its ascend_memory_manager also swaps and synchronises streams, so only its
    # "Malloc device memory failed" is claimed, by keyword)
    ("mindspore", r"mindspore/ccsrc/runtime/device/ascend/ascend_memory_(pool|adapter)\.", "out-of-memory"),
    # the HCCL adapter: loading HCCL and creating its communicators and kernel builders
    ("mindspore", r"mindspore/ccsrc/plugin/device/ascend/hal/hccl_adapter/|mindspore/ccsrc/runtime/hccl_adapter/",
     "hccl-init"),
    # the rest (the kernel runtime mixes device set-up, dumps, profiling and data-sink advice; kernels, graph
    # optimisation and the graph scheduler): no definite category
    ("mindspore", r".", None),
    # --- the CANN runtime (hicann/runtime) ---
    # the execution engines (HWTS / STARS: submitting, completing and recycling tasks, task exceptions, device
    # status during a run), the handlers of errors the device reports while running tasks (AI Core / AI CPU /
    # SDMA errors, the fast ring buffer, core timeouts) and the AI CPU timeout monitor: device execution errors
    # (at HEAD under src/runtime/core/, in v8.5.0 under src/runtime/feature/)
    ("runtime", r"src/runtime/(core|feature)/(src|inc)/engine/|src/runtime/(core|feature)/src/device/(\w+/)?"
                r"device_error_|src/runtime/(core|feature)/src/aicpu_timeout/", "device-runtime-error"),
    # the rest (the API layer and ACL check arguments of every kind; the driver wrappers call memory, device,
    # queue and IPC functions alike; streams, events, contexts and kernels also allocate resources and memory):
    # no definite category, only what RT_KEYWORDS (or KEYWORDS) finds the message itself stating
    ("runtime", r".", None),
    # --- TorchAir (Ascend/torchair) ---
    # the GE converters (one per ATen / custom op): an op, overload, dtype or argument the graph-mode conversion
    # does not take (the collective converters, hcom_*, print advice on patching collectives: not claimed)
    ("torchair", r"python/torchair/_ge_concrete_graph/ge_converter/(?!experimental/hcom_)", "op-unsupported"),
    # the rest (graph capture, caching, configuration, passes, the C++ executors): no definite category
    ("torchair", r".", None),
]
# (regex on the template, category): what a runtime / ACL message states itself, for the sources in RT_SOURCES
# only, before KEYWORDS. The driver's device-memory allocation (halMemAlloc, the runtime's DevMemAlloc*) failing
# is device memory running out (the runtime's own report of it is "rtMalloc ... driver error:out of memory",
# ErrCode 207001); opening a device, counting the devices, or the device's heartbeat being lost, is the device
# being unavailable; a task, kernel or stream failing, timing out or aborted while executing is a device runtime
# error (an HCCL AI CPU task's is not claimed: a link or a peer's memory, the kb's collective faults)
RT_KEYWORDS: list[tuple[str, str]] = [
    (r"\b(halMemAlloc|DevMemAlloc\w*|DevMalloc)\b:? ?failed|\bDevice malloc failed", "out-of-memory"),
    (r"(?i)\b(halDeviceOpen|drvDeviceOpen|DeviceOpen)\b:? ?failed|\bopen device\b.*\bfailed|"
     r"lost heartbeat|DEV_RUNNING_DOWN|\bdrvGetDevNum failed|get device count failed|"
     r"device count \{\} obtained from the driver is invalid", "device-unavailable"),
    (r"(?i)^(?!.*hccl)(?:.*\btask exception\b|.*\btask execution failed|.*\btask execute failed|"
     r".*\bkernel execute failed|.*\b(aicore|ai core|aicpu|ai cpu) (task |kernel )?(error|exception|timeout)|"
     r".*\btask timeout|.*\bin (the )?abort (state|status|mode)|.*\bstream (synchronize|sync) failed)",
     "device-runtime-error"),
]
# sources whose own ORIGINS decide timeouts: in HCCL / HCOMM a timeout in a link set-up file is the connect
# timeout (hccl-init), and a task-exception file's is already hccl-timeout, so the keyword re-claim below is off
OWN_TIMEOUTS = frozenset({"hccl", "hcomm"})

# (categories the override applies to (None: any origin), regex on the template, category): the message
# states its category itself. Applied in order; the first that matches wins.
KEYWORDS: list[tuple[frozenset[str] | None, str, str]] = [
    # (MindSpore's "Device(id:0) memory isn't enough and alloc failed", "Malloc device memory failed ... may be
    # other processes occupying this card")
    (None, r"(?i)out of (device |NPU )?memory|\bOOM\b|memory (is )?(insufficient|exhausted|not enough)|"
           r"memory isn't enough|Malloc device memory failed|Tried to allocate", "out-of-memory"),
    (None, r"(?i)(will be|is being) executed on (the )?CPU|fall(s|ing)? ?back to (the )?CPU|npu_fallback",
     "cpu-fallback"),
    (frozenset({"hccl-init", "rank-config"}), r"(?i)time(d)? ?out|timeout|watchdog|heartbeat", "hccl-timeout"),
    (frozenset({"hccl-init"}), r"RANK_TABLE|rank_table|WORLD_SIZE|world_size|MASTER_ADDR|MASTER_PORT|LOCAL_RANK",
     "rank-config"),
    (None, r"ASCEND_HOME_PATH|ASCEND_OPP_PATH|LD_LIBRARY_PATH|set_env\.sh|cannot open shared object|"
           r"libascendcl\.so|libhccl\.so", "env-not-loaded"),
    (None, r"(?i)\b(CANN|driver|firmware|torch_npu|torch|pytorch)\b( package)? version\b.*\b(mismatch|not match|"
           r"incompatible|not compatible|lower than|higher than|too (old|low)|at least|requires?)\b",
     "version-mismatch"),
    (None, r"(?i)\b(incompatible|mismatch(ed)?|not compatible|unsupported) (CANN|driver|firmware|torch_npu|torch) "
           r"version", "version-mismatch"),
    (None, r"(?i)ASCEND_RT_VISIBLE_DEVICES|no (available )?NPU device|NPU device count|invalid device (id|ordinal)",
     "device-unavailable"),
]

CPP_MACROS = re.compile(r"\b(TORCH_CHECK_WITH|TORCH_CHECK|AT_ERROR|TORCH_NPU_WARN_ONCE|TORCH_NPU_WARN|TORCH_WARN_ONCE|"
                        r"TORCH_WARN|ASCEND_LOGE|ASCEND_LOGW|HCCL_ERROR|HCCL_WARNING|HCCL_RUN_WARNING)\s*\(")
# macros whose first argument is a printf format (CANN's ASCEND_LOG*, HCCL's log.h: HCCL_ERROR(format, ...))
PRINTF_MACROS = frozenset({"ASCEND_LOGE", "ASCEND_LOGW", "HCCL_ERROR", "HCCL_WARNING", "HCCL_RUN_WARNING"})
# the CANN runtime's and ACL's log macros (hicann/runtime src/runtime/core/inc/base.hpp, common/
# error_message_manage.hpp, src/acl/common/log_inner.h): RT_LOG(level, format, ...), RT_LOG_INNER_MSG /
# RT_LOG_CALL_MSG, the check-and-return families (ERROR_RETURN(code, format, ...), COND_RETURN_ERROR(cond, code,
# format, ...), COND_RETURN_ERROR_MSG_INNER, ERROR_GOTO_MSG_INNER, DRV_ERROR_PROCESS, ...), ACL_LOG_ERROR /
# ACL_LOG_INNER_ERROR / ACL_LOG_CALL_ERROR / ACL_LOG_WARN(format, ...) and REPORT_INNER_ERROR / REPORT_CALL_ERROR
# (code, format, ...): the format is the first argument made only of string literals (PRIu64-style macros
# between them). Read only for the sources in RT_SOURCES
RT_MACROS = re.compile(r"\b(RT_LOG\w*|ACL_LOG_\w+|REPORT_(?:INNER|CALL)_ERROR|(?:COND|ERROR|DRV)_\w+|"
                       r"STREAM_REPORT_ERR_MSG)\s*\(")
# ... but not those at info / debug / event level, nor those whose literal arguments are the parameters of a
# message kept in an error-code table (RT_LOG_OUTER_MSG_IMPL(ErrorCode::EE1021, "thread", "pthread_setname_np");
# RT_LOG_OUTER_MSG(code, format, ...) itself has a format)
RT_SKIP = re.compile(r"INFO|DEBUG|EVENT|NORMAL|NOLOG|OUTER|IMPL|FUNC|PARAM|ALLOC_FAILED|CONTEXT|CAPTURE|FLUSH|"
                     r"STDOUT|NULL_PTR")
_RT_FORMAT = re.compile(r'\s*(?:(?:(?:u8|L|u|U)?"(?:[^"\\]|\\.)*"|PRI[diouxX](?:8|16|32|64|PTR|MAX))\s*)+')
RT_SOURCES = frozenset({"runtime"})
# MindSpore's log streams (mindspore/core/utils/log_adapter.h): MS_LOG(EXCEPTION) << "..." << x;,
# MS_EXCEPTION(TypeError) << ...; and MS_LOG(ERROR|WARNING) << ...
MS_STREAM = re.compile(r"\b(?:MS_LOG\((EXCEPTION|INTERNAL_EXCEPTION|ERROR|WARNING)\)|MS_EXCEPTION\((\w+)\))\s*<<")
# TorchAir's C++ log streams (torchair/include/logger.h): TNG_LOG(ERROR|WARNING) << ...; read for "torchair" only
TNG_STREAM = re.compile(r"\bTNG_LOG\((ERROR|WARNING)\)\s*<<")
# TorchAir's converters name the op they convert in each message ("torch.ops.aten.gru.input ge_converter is not
# implemented!", one file per op): the op name is a placeholder, so that the message is one template
OP_NAME = re.compile(r"\btorch\.ops\.(\w+)\.\w+(?:\.\w+)?")
OP_NAME_SOURCES = frozenset({"torchair"})
# MindSpore's message-section markers (#umsg#title#umsg#, #dmsg#title#dmsg#) start a new section of the printed message
_MS_SECTION = re.compile(r"#[ud]msg#")
_CODE_MACRO = re.compile(r"^\w+_ERROR\s*\(")  # PTA_ERROR(ErrCode::...), OPS_ERROR(...), PROF_ERROR(...)
_PRINTF = re.compile(r"%[-+#0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z|j|t|L)?[sdiuxXfFeEgGcp]")
_FMT_FIELD = re.compile(r"\{[^{}]*\}")
LOG_METHODS = {"error": "error", "exception": "error", "critical": "error", "fatal": "error",
               "warning": "warning", "warn": "warning", "warning_once": "warning", "error_once": "error"}


def git(gitdir: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={gitdir}", *args], check=True, capture_output=True,
                          text=True, errors="replace").stdout


def _rev(gitdir: Path, ref: str) -> str:
    """The commit `ref` names in the mirror, or "" when the mirror lacks it."""
    p = subprocess.run(["git", f"--git-dir={gitdir}", "rev-parse", "--verify", "-q", f"{ref}^{{commit}}"],
                       capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else ""


def read_files(gitdir: Path, commit: str, paths: list[str]) -> Iterator[tuple[str, str]]:
    """(path, text) of each file at `commit`, through one `git cat-file --batch`."""
    proc = subprocess.Popen(["git", f"--git-dir={gitdir}", "cat-file", "--batch"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    for p in paths:
        proc.stdin.write(f"{commit}:{p}\n".encode())
        proc.stdin.flush()
        header = proc.stdout.readline().split()
        if len(header) < 3:
            continue
        body = proc.stdout.read(int(header[2]))
        proc.stdout.read(1)
        yield p, body.decode("utf-8", "replace")
    proc.stdin.close()
    proc.wait()


# ------------------------------------------------------------------------------------------------ C++

def _literal_end(text: str, i: int) -> int:
    """The index just past the C/C++ string or char literal whose opening quote is at `i` (escapes skipped)."""
    q, j, n = text[i], i + 1, len(text)
    while j < n and text[j] != q:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def _call_args(text: str, start: int) -> list[str] | None:
    """The top-level arguments of the call whose '(' is at `start` (strings, chars and comments skipped)."""
    depth, i, cur, args = 0, start, [], []
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = _literal_end(text, i)
            cur.append(text[i:j])
            i = j
            continue
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
            continue
        if text.startswith("/*", i):
            i = text.find("*/", i)
            i = n if i < 0 else i + 2
            continue
        if c in "([{":
            depth += 1
            if depth > 1:
                cur.append(c)
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append("".join(cur))
                return args
            cur.append(c)
        elif c == "," and depth == 1:
            args.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    return None


_CPP_STR = re.compile(r'(?:u8|L|u|U)?"((?:[^"\\]|\\.)*)"')


def _cpp_unescape(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": " "}.get(m.group(1), m.group(1)), s)


def _cpp_arg(arg: str) -> str:
    """One c10::str argument as template text: literals kept, other expressions a placeholder."""
    arg = arg.strip()
    if not arg or _CODE_MACRO.match(arg):
        return ""
    out, last = [], 0
    for m in _CPP_STR.finditer(arg):
        between = arg[last:m.start()].strip().strip("+").strip()
        if between and not _CODE_MACRO.match(between):
            out.append("{}")
        out.append(_cpp_unescape(m.group(1)))
        last = m.end()
    tail = arg[last:].strip().strip("+").strip()
    if tail and not _CODE_MACRO.match(tail):
        out.append("{}")
    return "".join(out)


_MSG_VAR = re.compile(r"\b(?:auto|std::string|string)\s+\w*(?:msg|Msg|message|Message|err_str|errStr)\w*\s*=\s*"
                      r"(?=[^;]*\")")


def _statement(text: str, start: int) -> str:
    """The expression from `start` to the `;` that ends it (strings skipped), at most 4000 characters."""
    i, n = start, min(len(text), start + 4000)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == ";":
            return text[start:i]
        i += 1
    return ""


def cpp_messages(text: str) -> Iterator[tuple[str, str, int]]:
    """(template text, level, line) of each message macro call in a C++ file, and of each message built into a
    variable first (``auto retmsg = std::string("NPU out of memory. Tried to allocate ") + ...``, then thrown)."""
    for m in _MSG_VAR.finditer(text):
        expr = _statement(text, m.end())
        if expr:
            yield _cpp_arg(expr), "error", text.count("\n", 0, m.start()) + 1
    for m in CPP_MACROS.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if text[line_start:m.start()].lstrip().startswith("#"):
            continue  # the macro's own #define
        args = _call_args(text, m.end() - 1)
        if not args:
            continue
        name = m.group(1)
        level = "warning" if "WARN" in name or name == "ASCEND_LOGW" else "error"
        if name in PRINTF_MACROS:
            fmt = _CPP_STR.findall(args[0])
            if not fmt:
                continue
            msg = _PRINTF.sub("{}", _cpp_unescape("".join(fmt)))
        else:
            rest = args[2:] if name == "TORCH_CHECK_WITH" else args[1:] if name == "TORCH_CHECK" else args
            msg = "".join(_cpp_arg(a) for a in rest)
        yield msg, level, text.count("\n", 0, m.start()) + 1


def rt_messages(text: str) -> Iterator[tuple[str, str, int]]:
    """(template text, level, line) of each CANN runtime / ACL log macro call (RT_MACROS): its printf format
    (the first all-literal argument), conversions turned into ``{}``. A call at info / debug / event level
    (``RT_LOG(RT_LOG_INFO, ...)``) is no message."""
    for m in RT_MACROS.finditer(text):
        name = m.group(1)
        if name != "RT_LOG_OUTER_MSG" and RT_SKIP.search(name):
            continue
        line_start = text.rfind("\n", 0, m.start()) + 1
        if text[line_start:m.start()].lstrip().startswith("#"):
            continue  # a #define
        args = _call_args(text, m.end() - 1)
        if not args:
            continue
        k = next((i for i, a in enumerate(args) if _RT_FORMAT.fullmatch(a) and '"' in a), -1)
        if k < 0:
            continue
        before = " ".join(args[:k])
        if re.search(r"\b(RT_LOG_|DLOG_)(INFO|DEBUG|EVENT)\b", before):
            continue
        fmt = re.sub(r"\bPRI([diouxX])\w*", r'"ll\1"', args[k])
        msg = _PRINTF.sub("{}", _cpp_unescape("".join(_CPP_STR.findall(fmt))))
        level = "warning" if "WARN" in name or "WARN" in before else "error"
        yield msg, level, text.count("\n", 0, m.start()) + 1


def _split_shift(expr: str) -> list[str]:
    """The operands of a chain of top-level ``<<`` (strings, chars and brackets skipped)."""
    parts, cur, depth, i, n = [], [], 0, 0, len(expr)
    while i < n:
        c = expr[i]
        if c == '"' or c == "'":
            j = _literal_end(expr, i)
            cur.append(expr[i:j])
            i = j
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and expr.startswith("<<", i):
            parts.append("".join(cur))
            cur = []
            i += 2
            continue
        cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


def ms_messages(text: str, stream: re.Pattern[str] = MS_STREAM) -> Iterator[tuple[str, str, int]]:
    """(template text, level, line) of each MindSpore log stream: ``MS_LOG(EXCEPTION) << "Malloc device memory
    failed, size[" << size << "]";`` gives ``Malloc device memory failed, size[{}]``. An operand that is only
    string literals is text (``std::endl`` a line break), any other a placeholder. `stream`: another program's
    log streams of the same shape (TNG_STREAM)."""
    for m in stream.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if text[line_start:m.start()].lstrip().startswith("#"):
            continue  # inside a #define
        expr = _statement(text, m.end())
        if not expr:
            continue
        out = []
        for op in _split_shift(expr):
            op = op.strip()
            if re.fullmatch(r'(?:(?:u8|L|u|U)?"(?:[^"\\]|\\.)*"\s*)+', op):
                out.append(_cpp_unescape("".join(_CPP_STR.findall(op))))
            elif op in ("std::endl", "endl"):
                out.append("\n")
            elif op:
                out.append("{}")
        level = "warning" if m.group(1) == "WARNING" else "error"
        yield _MS_SECTION.sub("\n", "".join(out)), level, text.count("\n", 0, m.start()) + 1


# ------------------------------------------------------------------------------------------------ Python

def _py_text(node: ast.AST) -> str | None:
    """A message expression as template text, or None when it has no literal text at all."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                parts.append(v.value)
            else:
                parts.append("{}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        if _is_code_helper(node.right):  # msg + pta_error(ErrCode.PARAM): torch_npu's code suffix
            return _py_text(node.left)
        left, right = _py_text(node.left), _py_text(node.right)
        if left is None and right is None:
            return None
        return (left if left is not None else "{}") + (right if right is not None else "{}")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = _py_text(node.left)
        return None if left is None else _PRINTF.sub("{}", left)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"):
        base = _py_text(node.func.value)
        return None if base is None else _FMT_FIELD.sub("{}", base)
    return None


def _is_code_helper(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _dotted(node.func).rsplit(".", 1)[-1].lower().endswith("_error")


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return _dotted(node.value) + "." + node.attr
    if isinstance(node, ast.Call):
        return _dotted(node.func) + "()"
    return ""


def py_messages(text: str) -> Iterator[tuple[str, str, int]]:
    """(template text, level, line) of raise / warnings.warn / logger.error|warning calls in a Python file."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        call, level = None, "error"
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            name = _dotted(node.exc.func).rsplit(".", 1)[-1]
            if name.endswith(("Error", "Exception")):
                call = node.exc
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = _dotted(node.func.value).lower()
            if node.func.attr == "warn" and owner == "warnings":
                call, level = node, "warning"
            elif node.func.attr in LOG_METHODS and "log" in owner:
                call, level = node, LOG_METHODS[node.func.attr]
        if call is None or not call.args:
            continue
        msg = _py_text(call.args[0])
        if msg is not None:
            # a %-style logger call with arguments: its format's conversions are placeholders
            if isinstance(call.func, ast.Attribute) and call.func.attr in LOG_METHODS and len(call.args) > 1:
                msg = _PRINTF.sub("{}", msg)
            yield msg, level, getattr(node, "lineno", 0)


# ------------------------------------------------------------------------------------------------ records

def normalise(msg: str) -> str:
    """First non-empty line, whitespace collapsed, adjacent placeholders merged, cut at MAX_TEMPLATE."""
    first = next((ln for ln in msg.split("\n") if chunks(ln)), "")
    t = re.sub(r"\s+", " ", first).strip()
    t = re.sub(r"(\{\})(\s*\{\})+", "{}", t)
    if len(t) > MAX_TEMPLATE:
        t = t[:MAX_TEMPLATE].rsplit(" ", 1)[0]
        t = re.sub(r"\{[^}]*$", "", t).rstrip()
    return t


def distinctive(template: str) -> bool:
    lit = " ".join(chunks(template))
    words = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9_]{2,}", lit)} - STOP
    return (sum(len(c) for c in chunks(template)) >= MIN_LITERAL and len(words) >= MIN_WORDS
            and not GENERIC.search(lit) and bool([k for k in key_words(template) if k.lower() not in STOP]))


def categorise(source: str, path: str, template: str) -> str | None:
    cat: str | None = None
    for sid, rx, c in ORIGINS:
        if sid == source and re.match(rx, path):
            cat = c
            break
    if source in RT_SOURCES:
        for rx, c in RT_KEYWORDS:
            if re.search(rx, template):
                return c
    for scope, rx, c in KEYWORDS:
        if c == "hccl-timeout" and source in OWN_TIMEOUTS:
            continue
        if (scope is None or cat in scope) and re.search(rx, template):
            return c
    return cat


def kb_entries_for(records: list[dict], strict: bool = False) -> None:
    """Fill `entries`: kb entries whose pattern matches the template, or with a pattern example it matches.
    `strict` (the sources in RT_SOURCES): entries found only through an example or Symptom line that is an
    instance of the template do not overrule the template's own category when theirs differs: the example's
    cause may lie in what the program inserts (the runtime's "Aicpu kernel execute failed, ... fault
    kernel_name={}" quoted by an entry for a GetNext data-queue kernel is any AI CPU kernel's failure)."""
    from envcheck.kb.entries import load_kb
    from envcheck.kb.match import kb_matcher
    from envcheck.kb.messages import Message, MessageBook, build_index

    kb = load_kb(None)
    matcher = kb_matcher(None, "re")
    msgs = [Message(r["template"], r["origin"], r["category"], r["level"], "", (), chunks(r["template"]))
            for r in records]
    book = MessageBook({}, tuple(msgs), build_index(msgs))
    found: dict[int, set[str]] = {}
    pos = {id(m): i for i, m in enumerate(msgs)}
    for e in kb.entries:
        # the entry's pattern examples and the lines of its Symptom section (where entries quote the message)
        for ex in [x for p in e.patterns for x in p.examples] + e.section("Symptom").splitlines():
            for hit in book.lookup(ex):
                found.setdefault(pos[id(hit.message)], set()).add(e.id)
    cat_of = {e.id: e.category for e in kb.entries}
    for i, r in enumerate(records):
        sample = re.sub(r"\{\}", "1", r["template"])
        own = {rule.entry_id for rule in matcher.match_line(sample) if rule.kind == "pattern"}
        ids = found.get(i, set()) | own
        cats = {cat_of[x] for x in ids}
        if strict and not own and cats != {r["category"]}:
            continue
        if len(cats) == 1:
            # the kb's diagnosis of this very message is more specific than its subsystem (a torch_npu
            # device-init message that fork-npu-reinit files under data-pipeline)
            r["entries"] = sorted(ids)
            r["category"] = cats.pop()
        # entries of several categories: the message is too general to name one (it stays, by its origin)


def extract(mirrors: Path) -> dict:
    out: dict = {"schema": 1, "sources": {}}
    seen: set[tuple[str, ...]] = set()  # templates by their literal chunks: "x" and "x{}" are one
    for sid, (repo, prefixes, refs) in SOURCES.items():
        gitdirs = [mirrors / m.replace("/", "+") / "repo" for m in MIRRORED_AT.get(repo, (repo,))]
        gitdirs = [g for g in gitdirs if g.is_dir()]
        if not gitdirs:
            print(f"skipped {repo}: no mirror under {mirrors}", file=sys.stderr)
            continue
        for ref in refs:
            gitdir, commit = next(((g, c) for g in gitdirs if (c := _rev(g, ref))), (gitdirs[0], ""))
            if not commit:
                print(f"skipped {repo} {ref}: in no mirror", file=sys.stderr)
                continue
            paths = [p for p in git(gitdir, "ls-tree", "-r", "--name-only", commit).splitlines()
                     if p.startswith(prefixes) and not SKIP_PATH.search(p)
                     and p.endswith((".py", ".cpp", ".h", ".hpp", ".cc"))]
            records: list[dict] = []
            for path, text in read_files(gitdir, commit, paths):
                found = (py_messages(text) if path.endswith(".py") else
                         chain(cpp_messages(text), ms_messages(text), rt_messages(text) if sid in RT_SOURCES else (),
                               ms_messages(text, TNG_STREAM) if sid == "torchair" else ()))
                for raw, level, _line in found:
                    t = normalise(raw)
                    if sid in OP_NAME_SOURCES:
                        t = OP_NAME.sub(r"torch.ops.\1.{}", t)
                    if not t or chunks(t) in seen or not distinctive(t):
                        continue
                    cat = categorise(sid, path, t)
                    if cat is None:
                        continue
                    assert cat in CATEGORY_IDS, cat
                    seen.add(chunks(t))
                    records.append({"template": t, "origin": path, "category": cat, "level": level})
            kb_entries_for(records, strict=sid in RT_SOURCES)
            key = sid if ref == refs[0] else f"{sid} {ref}"
            out["sources"][key] = {"repo": repo, "commit": commit, "ref": ref, "messages": records}
            counts = Counter(r["category"] for r in records)
            print(f"{repo}@{commit[:12]} ({ref}): {len(records)} templates {dict(counts.most_common())}",
                  file=sys.stderr)
    return out


HEADER = """\
# Message catalogue for `envcheck diagnose` (loaded by envcheck/kb/messages.py). GENERATED by
# scripts/extract_messages.py from the named repositories at the named commits: do not edit by hand.
# template: the message's literal text, {} where the program inserts a value (first line only);
# origin: the file that prints it; category: taxonomy id of that subsystem (or stated by the message);
# entries: kb entries that treat it; level: error or warning.
"""


def relink(path: Path) -> dict:
    """The catalogue at `path` with each record's category and `entries` derived again from the current kb, as
    `extract` would derive them from the same templates: for a kb change, without the mirrors. The templates
    and commits stay as they are (the source code did not change)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    for key, src in data["sources"].items():
        sid = key.split(" ")[0]
        records = src["messages"]
        for r in records:
            r.pop("entries", None)
            cat = categorise(sid, r["origin"], r["template"])
            assert cat is not None, (key, r["template"])
            r["category"] = cat
        kb_entries_for(records, strict=sid in RT_SOURCES)
    return data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirrors", default="/work/.mirror", type=Path)
    ap.add_argument("--out", default=Path(__file__).resolve().parents[1] / "envcheck/kb/messages.yaml", type=Path)
    ap.add_argument("--relink", action="store_true",
                    help="keep the templates in --out and only derive categories and entries again from the kb "
                         "(after a kb change; needs no mirrors)")
    a = ap.parse_args(argv)
    data = relink(a.out) if a.relink else extract(a.mirrors)
    body = yaml.dump(data, sort_keys=False, allow_unicode=True, width=1 << 16, default_flow_style=None)
    a.out.write_text(HEADER + body, encoding="utf-8")
    print(f"wrote {a.out} ({a.out.stat().st_size:,} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
