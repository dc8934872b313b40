"""The error-code dictionary (envcheck/kb/error_codes.yaml) and the code extractor (envcheck/kb/codes.py)."""
from __future__ import annotations

import io
import re
import time

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from envcheck.kb.codes import (
    CODES_PATH,
    CodeBookError,
    extract_codes,
    iter_codes,
    load_codes,
    parse_codes,
    scan_line,
)
from envcheck.kb.entries import load_kb
from envcheck.kb.taxonomy import CATEGORY_IDS

BOOK = load_codes()
KB = load_kb()


# --- the dictionary ---------------------------------------------------------------------------------------------


def test_every_family_and_code_has_a_source():
    assert set(BOOK.families) == {"acl", "aclnn", "rt", "ge", "hccl", "torch_npu", "cann", "dcmi", "npu_fault",
                                  "mindie"}
    for fam in BOOK.families.values():
        assert fam.source.strip(), fam.id
    for c in BOOK:
        assert c.source.strip(), c
        if not c.own_source:
            assert c.source == BOOK.families[c.family].source


def test_every_code_has_a_taxonomy_category_a_name_and_a_meaning():
    bad = [(c.family, c.code, c.category) for c in BOOK if c.category not in CATEGORY_IDS]
    assert not bad
    for c in BOOK:
        assert c.name.strip() and c.meaning.strip(), c
        assert "\n" not in c.meaning, c.code


def test_entries_exist_in_the_kb():
    ids = {e.id for e in KB.entries}
    missing = [(c.code, e) for c in BOOK for e in c.entries if e not in ids]
    assert not missing


def test_every_code_a_kb_entry_lists_is_in_the_dictionary_and_points_back():
    assert not KB.errors
    absent, no_backlink = [], []
    for e in KB.entries:
        for raw in e.error_codes:
            c = BOOK.get(str(raw))
            if c is None:
                absent.append((e.id, raw))
            elif e.id not in c.entries:
                no_backlink.append((e.id, raw))
    assert not absent, f"add these codes to envcheck/kb/error_codes.yaml: {absent}"
    assert not no_backlink, f"list the entry under the code's 'entries': {no_backlink}"


def test_codes_have_the_shape_of_their_family():
    shapes = {
        "acl": (r"[1-5]\d{5}", r"ACL_ERROR_[A-Z_]+"),
        "rt": (r"[1-5]\d{5}", r"ACL_ERROR_[A-Z_]+"),
        "aclnn": (r"[1-5]\d{5}", r"ACLNN_ERR_[A-Z_]+"),
        "ge": (r"[1-5]\d{5}", r"ACL_ERROR_GE_[A-Z_]+"),
        "hccl": (r"\d{1,2}", r"HCCL_E_[A-Z_]+"),
        "torch_npu": (r"ERR\d{5}", r"(PTA|OPS|DIST|GRAPH|PROF|UNKNOWN) [A-Z_]+ \(.+\)"),
        "cann": (r"E[0-9A-Z]\d{4}", r"[A-Za-z0-9_/]+"),
        "dcmi": (r"-8\d{3}", r"DCMI_ERR_CODE_[A-Z_]+"),
        "npu_fault": (r"0x[0-9A-F]{8}", r"[^\n]{3,60}"),  # canonical 0x + 8 upper-case hex digits; a short name
        # MIE + component + level + 6 hex digits; an ErrorCode enum name or a kg-config rule's cause
        "mindie": (r"MIE\d\d[A-Z][0-9A-F]{6}", r"[A-Z][A-Z0-9_]+|[^\n]{3,120}"),
    }
    for c in BOOK:
        code_re, name_re = shapes[c.family]
        assert re.fullmatch(code_re, c.code), (c.family, c.code)
        assert re.fullmatch(name_re, c.name), (c.family, c.code, c.name)


@pytest.mark.parametrize(
    ("code", "family", "name"),
    [
        ("507001", "rt", "ACL_ERROR_RT_TS_ERROR"),
        ("107002", "rt", "ACL_ERROR_RT_CONTEXT_NULL"),
        ("507033", "rt", "ACL_ERROR_RT_DEV_SETUP_ERROR"),
        ("507899", "rt", "ACL_ERROR_RT_DRV_INTERNAL_ERROR"),
        ("500001", "acl", "ACL_ERROR_FAILURE"),
        ("148049", "acl", "ACL_ERROR_INVALID_OPP_PATH"),
        ("545002", "ge", "ACL_ERROR_GE_EXEC_LOAD_MODEL_PARTITION_FAILED"),
        ("ERR02200", "torch_npu", "DIST HCCL (call hccl api failed)"),
        ("ERR99999", "torch_npu", "UNKNOWN EXCEPT (applicaiton exception)"),
        ("EI0006", "cann", "Communication_Error_Get_Socket"),
        ("-8020", "dcmi", "DCMI_ERR_CODE_RESOURCE_OCCUPIED"),
        ("0x80E18400", "npu_fault", "HBM multi-bit ECC (with host PID)"),
        ("0x81078603", "npu_fault", "RoCE port link Up->Down"),
        ("MIE05E01000A", "mindie", "TEXT_GENERATOR_OUT_OF_MEMORY"),
        ("MIE05E000005", "mindie", "ATB_MODELS_OUT_OF_MEMORY"),
        ("MIE05E020000", "mindie", "BACKEND_CONFIG_INVALID"),
        ("MIE03E100005", "mindie", "Controller cannot find the requested resource"),
        ("MIE04E120414", "mindie", "Master heartbeat detection failure in multi-node inference"),
    ],
)
def test_spot_checks_against_the_headers(code, family, name):
    c = BOOK.get(code)
    assert c is not None and (c.family, c.name) == (family, name)


def test_lookup_is_case_insensitive_for_e_codes_and_accepts_names():
    assert BOOK.get("ei0006") is BOOK.get("EI0006") is not None
    assert BOOK.get(" EZ1001 ").code == "EZ1001"
    assert BOOK.get("err02200").code == "ERR02200"
    assert BOOK.get("acl_error_rt_ts_error").code == "507001"
    assert BOOK.get("HCCL_E_TIMEOUT").code == "9"
    assert BOOK.get("DCMI_ERR_CODE_INNER_ERR").code == "-8005"
    assert "507035" in BOOK and "EI0015" in BOOK and "599999" not in BOOK


def test_bare_small_numbers_are_hccl_only_when_asked():
    assert BOOK.get("9") is None  # ambiguous on its own
    assert BOOK.get("9", family="hccl").name == "HCCL_E_TIMEOUT"
    assert BOOK.get("hccl:7").name == "HCCL_E_UNAVAIL"
    assert [c.name for c in BOOK.candidates("9")] == ["HCCL_E_TIMEOUT"]
    assert BOOK.candidates("599999") == ()


def test_generic_marks_wrapper_codes_only():
    assert BOOK.get("507011").generic and BOOK.get("EZ9999").generic and BOOK.get("ERR00100").generic
    assert not BOOK.get("507015").generic and not BOOK.get("EI0006").generic


def test_loader_rejects_broken_data_with_one_line_errors(tmp_path):
    good = yaml.safe_load(CODES_PATH.read_text(encoding="utf-8"))
    assert len(parse_codes(good)) == len(BOOK)
    cases = {
        "no families": {"schema": 1},
        "family without source": {"families": {"hccl": {"title": "x", "codes": {}}}},
        "unknown family": {"families": {"nccl": {"source": "s", "codes": {}}}},
        "code without meaning": {"families": {"hccl": {"source": "s", "codes": {"9": {"name": "n", "category": "c"}}}}},
        "entries not a list": {"families": {"hccl": {"source": "s", "codes": {
            "9": {"name": "n", "meaning": "m", "category": "c", "entries": "hccl-timeout"}}}}},
    }
    for label, data in cases.items():
        with pytest.raises(CodeBookError) as exc:
            parse_codes(data)
        assert "\n" not in str(exc.value), label
    bad = tmp_path / "codes.yaml"
    bad.write_text("families: [\n", encoding="utf-8")
    with pytest.raises(CodeBookError, match="not valid YAML"):
        load_codes(bad)
    with pytest.raises(CodeBookError, match="cannot read"):
        load_codes(tmp_path / "absent.yaml")


# --- extraction: real lines -------------------------------------------------------------------------------------

# (line, [(code, family, known)]). Lines are verbatim from shared/research/error-catalogue.md (row id given) or
# shared/research/samples/torch-npu-import-errors.txt; a few are the issue-11 report's own examples.
REAL_LINES = [
    # issue 11
    ("RuntimeError: copy_d2d:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:64 NPU function error: "
     "AclrtSynchronizeStreamWithTimeout(copy_stream), error code is 507001", [("507001", "rt", True)]),
    # DU-05
    ("RuntimeError: Initialize:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:147 NPU function error: "
     "c10_npu::SetDevice(device_id_), error code is 107001", [("107001", "rt", True)]),
    ("EE1001: [PID: 2228607] 2025-08-06-16:15:27.377.593 The argument is invalid.Reason: Set device failed, invalid "
     "device, set drv device=100, valid device range is [0, 8)", [("EE1001", "cann", True)]),
    ("RuntimeError: Device 8 call rtSetDevice failed, ret[107001]. The details refer to 'Ascend Error Message'.",
     [("107001", "rt", True)]),
    ("        open device 100 failed, runtime result = 107001.[FUNC:ReportCallError][FILE:log_inner.cpp][LINE:161]",
     [("107001", "rt", True)]),
    # DU-06
    ("[ERROR]  acl set device 0 failed, errorCode = 507033", [("507033", "rt", True)]),
    # VM-01
    ("aclrtSetStreamFailureMode failed, ret:207000", [("207000", "rt", True)]),
    # DR-05, DR-06 (MindSpore)
    ("[ERROR] RUNTIME(16243,msame):2022-09-22-11:27:01.794.510 [api_c.cc:661]16243 rtStreamSynchronize:[EXEC][DEFAULT]"
     "ErrCode=507017, desc=[aicpu timeout], InnerCode=0x715002a", [("507017", "rt", True)]),
    ("[EXCEPTION] GE(118114,ffff4effd1e0,python):2021-09-11-16:48:31.511.063 [mindspore/ccsrc/runtime/device/ascend/"
     "ge_runtime/runtime_model.cc:233] Run] Call rt api rtStreamSynchronize failed, ret: 507011",
     [("507011", "rt", True)]),
    # DR-07
    ("[ERROR] 2025-01-15-20:59:48 (PID:6038, Device:0, RankID:-1) ERR00100 PTA call acl api failed",
     [("ERR00100", "torch_npu", True)]),
    # HT-02
    ("[W compiler_depend.ts:487] Warning: NPU warning, error code is 507048[Error]:", [("507048", "rt", True)]),
    # OM-06
    ("[EXCEPTION] DEVICE(170414,fffe397fa1e0,python):2021-09-13-15:29:07.465.388 [mindspore/ccsrc/runtime/device/"
     "ascend/ascend_memory_manager.cc:62] MallocDeviceMemory] Malloc device memory failed, size[32212254720], "
     "ret[207001], Device 6 may be other processes occupying this card, check as: ps -ef|grep python",
     [("207001", "rt", True)]),
    # HI-01: HCCL plog with ret[9]
    ("[ERROR] HCCL(137309,all_reduce_test):2025-12-24-16:19:45.416.075 [hccl_socket_manager.cc:877] [137400][Wait]"
     "[LinksEstablishCompleted] is failed. ret[9].", [("9", "hccl", True)]),
    ("EI0006: Getting socket times out. Reason: 1. The remote does not initiate a connect request. some NPUs in the "
     "cluster are abnormal.", [("EI0006", "cann", True)]),
    # HI-08 format, HCCL function error
    ("ProcessGroupHCCL.cpp:123 HCCL function error: hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, "
     "&(comm->hcclComm_)), error code is 11 ", [("11", "hccl", True)]),
    ("[ERROR] 2024-08-18-22:15:47 (PID:23232, Device:0, RankID:0) ERR02002 DIST invalid type",
     [("ERR02002", "torch_npu", True)]),
    # HT-01
    ("EI0002: [PID: 7277] 2024-11-28-11:59:30.645.648 The wait execution of the Notify register times out. Reason: "
     "The Notify register has not received the Notify record from remote rank [unknown].",
     [("EI0002", "cann", True)]),
    # EN-06
    ("RuntimeError: call aclnnArange failed, detail:EZ9999: Inner Error!", [("EZ9999", "cann", True)]),
    # DR-13, DP-04 (MindSpore double-space form, module_name=)
    ("[ERROR] RUNTIME(160186,python):2023-01-10-09:25:45.324.841 [error_message_manage.cc:49]163618 "
     "FuncErrorReason:report error module_type=3, module_name=EE8888", [("EE8888", "cann", True)]),
    ("EE9999  Task execute failed, base info: device_id=0, stream_id=2, task_id=3, flip_num=0, task_type=3."
     "[FUNC:GetError][FILE:stream.cc][LINE:1044]", [("EE9999", "cann", True)]),
    # OU-10, MindSpore docs E80000/EB0000
    ("RuntimeError: ({'errCode': 'E80012', 'op_name': 'reduce_sum_d', 'param_name': 'x', 'min_value': 0, "
     "'max_value': 8, 'real_value': 10}, 'In op, the num of dimensions of input/output[x] should be in the range of "
     "[0, 8], but actually is [10].')", [("E80012", "cann", True)]),
    ("TVMError: [EB0000] Check failed: need_nbits <= info->max_num_bits (4194304 vs. 2097152) : data_ub exceed bound "
     "of memory: local.UB !", [("EB0000", "cann", True)]),
    # VM-10
    ("E30006: 2025-11-19-11:14:58.516.606 Failed to verify the OPP", [("E30006", "cann", True)]),
    # samples/torch-npu-import-errors.txt
    ("[ERROR] 2024-06-20-10:41:32 (PID:59450, Device:-1, RankID:-1) ERR00008 PTA resource not found",
     [("ERR00008", "torch_npu", True)]),
    ("dcmi module initialize failed. ret is -8005", [("-8005", "dcmi", True)]),
    ("dcmi model initialized failed, because the device is used. ret is -8020", [("-8020", "dcmi", True)]),
    ("EH9999: Inner Error!", [("EH9999", "cann", True)]),
    ("        build op model failed, result = 500001[FUNC:ReportInnerError][FILE:log_inner.cpp][LINE:145]",
     [("500001", "acl", True)]),
    # the remaining spellings the brief names
    ("[ERROR] device 0 ERROR CODE:507899", [("507899", "rt", True)]),
    ("aclrtMalloc failed, errno 507001", [("507001", "rt", True)]),
    ("设备初始化失败，错误码：507033", [("507033", "rt", True)]),
    ("设备初始化失败，错误码为507033", [("507033", "rt", True)]),
    ("set device failed, error code: 507033", [("507033", "rt", True)]),
    ("hcclCommInitRank failed, ret = 9 (hccl)", [("9", "hccl", True)]),
    # field corpus (dev half): a known ACL code right after "failed"
    ("Call aclrtSetDevice(device->id) failed : 507033 at file /work/PaddleCustomDevice/backends/npu/runtime/runtime.cc "
     "line 430", [("507033", "rt", True)]),
    # field corpus (dev half): ONNX Runtime's CANN execution provider, `<lib> failure <code>:` (cann_call.cc)
    ("CANN failure 507013: (look for ACL_ERROR_xxx in acl. h); NPU=0 ; hostname=<host> ; "
     "expr=aclrtSynchronizeStream(GetStream(kCannStreamDefault)); ", [("507013", "rt", True)]),
    ("EZ1001: [PID: 12] 2025-06-01-10:00:00.000.000 aclnnCast: DT_BFLOAT16 is not supported",
     [("EZ1001", "cann", True)]),
    # several codes on one line, in order
    ("EI0006: link setup failed; torch_npu: ERR02200 DIST call hccl api failed, error code is 507048",
     [("EI0006", "cann", True), ("ERR02200", "torch_npu", True), ("507048", "rt", True)]),
]


@pytest.mark.parametrize(("line", "expected"), REAL_LINES, ids=[f"L{i}" for i in range(len(REAL_LINES))])
def test_extracts_every_usual_spelling(line, expected):
    hits = extract_codes(line)
    assert [(h.code, h.family, h.known) for h in hits] == expected
    for h in hits:
        assert line[h.start:h.end] == h.code
        assert h.line == 1
        assert (h.info is not None) == h.known
        if h.known:
            assert h.info.code == h.code and h.info.family == h.family


# --- extraction: things that are not codes ----------------------------------------------------------------------

NOT_CODES = [
    "2 disk failures 123456 sectors reallocated",  # "failure" only before a known ACL/runtime code
    "node failure 12 of 30",
    "2024-11-28-11:59:30.645.648 timestamp 2025-12-24-16:19:45.416.075",
    "[ERROR] 2025-06-09-06:57:54 (PID:92380, Device:0, RankID:-1)",
    "(PID: 2228607) pid=507001 tid:163618",
    "MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 HCCL_IF_BASE_PORT=60000",
    "TopoExchangeAgent: connect server[127.10.0.1 : 60000] failed",
    ("[W socket.cpp:436] [c10d] The server socket has failed to bind to [::]:29500 "
     "(errno: 98 - Address already in use)."),
    "dump info: pc start: 0x1240c46650b8, vec error info: 0xd019ddc1a, para base: 0x1240c51b1dd0.",
    "there is an aivec error exception, core id is 11, error code = 0x10, dump info",
    "Failed to open device, retCode=0x7020014, deviceId=0.[FUNC:InitRawDriver][FILE:raw_device.cc][LINE:126]",
    "[ERROR] RUNTIME(3002)model execute error, retCode=0x91, [the model stream execute failed]",
    "CANN 8.0.RC2, toolkit 8.2.RC1, torch_npu 2.1.0.post6, driver 24.1.rc2.2, firmware 7.7.0.1.231",
    "/usr/local/Ascend/ascend-toolkit/7.0.RC1/opp/built-in/op_impl/host_cpu/libops_host_cpu.so",
    "rank0]:[W107 21:14:04.201960667 VariableFallbackKernel.cpp:250] Warning: CAUTION",
    "Aicore kernel execute failed, device_id=4, stream_id=450, report_stream_id=2, task_id=442, flip_num=0",
    "fault kernel_name=RealDiv_ee98c6628030785f610b924ab1557b31_high_precision_210000000, program id=9",
    "ReportStatusFailProc:Device status failure, ret=118554641,start exception CallBack.",
    "LoadLib: ErrorNo: 1343225860(Internal errors) [INIT][DEFAULT][Invoke][DlOpen] failed.",
    "error msg: davinci_model : load task fail, return ret: 1343225860",
    "[driver interface] halMemAlloc failed: device_id=6, size=32212254720, type=2, env_type=3, drvRetCode=6!",
    "ra hdc message process failed ret(-12) phy_id(0) [HCCP]",
    "[HCCL] init ok, ret[0]",  # 0 is success
    "python train.py: step 150000, result: 150000, return 100000, ret 9",
    "    return 507001  # a line of Python source",
    "some_function ret = 9 no collective library on this line",
    "scientific 1.5E10001 and 0xE10001 and ABE10001 and E100012 and EI00061",
    "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 1e-05, 'epoch': 0.01}",
    "EQ1234 appears in prose without a code context",
    "hccl init failed: 3 of 8 ranks joined",  # after "failed" only known six-digit codes count
    "download failed: 599999 bytes received",
    "ERR0220 (four digits) and XERR02200 are not torch_npu codes",
]


@pytest.mark.parametrize("line", NOT_CODES, ids=[f"N{i}" for i in range(len(NOT_CODES))])
def test_no_false_positives(line):
    assert extract_codes(line) == []


# --- NPU fault / event ids (family npu_fault) ---------------------------------------------------------------------

DR09 = ("Fault RAS occurs in the system: [event_id:0x80e18400] New uncorrectable ECC / other uncorrectable memory "
        "error. For details about troubleshooting, see Health Management Error Definition.")
HEX_LINES = [
    # research/error-catalogue.md DR-09 (hicann/runtime EZ2001 doc)
    (DR09, ["0x80E18400"]),
    # mind-cluster ascend-faultdiag: the klogd line its tests feed, and its rule regexes' spellings
    ("[klogd.c:242][583733.716915] event_id=0x80c78008", ["0x80C78008"]),
    ("Event id=0x81078603, Node Type=0x83; Sensor Type=0xc3; event_state=3)", ["0x81078603"]),
    ("event_id:  [0x80E01801]", ["0x80E01801"]),
    # npu-smi info -t health (mind-cluster test/st_module_testcase/kg_parse/npu_info_after.txt): A4025021 is not a
    # device code in the dictionary and is left out
    ("\tError Code                     : A4025021 8C03A000 8C084E00", ["0x8C03A000", "0x8C084E00"]),
    # the MindCluster device-info ConfigMap (kubectl describe cm ... mindx-dl-deviceinfo-<node>)
    ('\\"fault_code\\":\\"A8028801,A4028801,80E18402,80E18401\\"', ["0x80E18402", "0x80E18401"]),
    ("Error Code : 81078603", ["0x81078603"]),
]


@pytest.mark.parametrize(("line", "expected"), HEX_LINES, ids=[f"H{i}" for i in range(len(HEX_LINES))])
def test_npu_fault_ids_are_read_in_every_printed_spelling(line, expected):
    hits = extract_codes(line)
    assert [h.code for h in hits] == expected
    for h in hits:
        assert h.family == "npu_fault" and h.known and h.info is BOOK.get(h.code)
        assert line[h.start:h.end].upper().removeprefix("0X") == h.code.removeprefix("0x")


HEX_NOT_CODES = [
    "segfault at 7ffd12345678 ip 0x00007f3c2a1b2c3d sp 0x7ffd12345678 error 4 in libc.so.6",
    "magic 0xdeadbeef flags 0x80000000 mask 0xFFFFFFFF",
    "pc 0x80e18400ff (a longer hex number) and x0x80e18400 and 0x80e18400_tail",
    "event_id:0x80ffffff not a listed fault",  # in the range, not in the dictionary
    "map va=0x7ffd12345678 pa=0x80e18400 size=4096",  # an address equal to a code, with no event/fault word
    "Error Code : DEADBEEF 12345678",  # bare values after the label count only when listed
    "task 80E18400 mentioned without a label",  # the bare spelling needs npu-smi's or the ConfigMap's label
    "vec error info: 0xd019ddc1a, para base: 0x1240c51b1dd0, retCode=0x7020014",
]


@pytest.mark.parametrize("line", HEX_NOT_CODES, ids=[f"X{i}" for i in range(len(HEX_NOT_CODES))])
def test_hex_values_that_are_not_listed_are_neither_codes_nor_unknown(line):
    assert extract_codes(line) == []


def test_npu_fault_lookup_accepts_any_case_and_the_bare_spelling():
    c = BOOK.get("0x80E18400")
    assert c is not None and c.family == "npu_fault" and "hbm-ecc-device-fault" in c.entries
    assert BOOK.get("0x80e18400") is BOOK.get("0X80E18400") is BOOK.get(" 80e18400 ") is c
    assert [x.code for x in BOOK.candidates("81078603")] == ["0x81078603"]  # all digits, still hex
    assert BOOK.get("0xdeadbeef") is None and BOOK.candidates("DEADBEEF") == ()


def test_npu_fault_codes_are_device_faults_with_entries_that_treat_them():
    fam = BOOK.in_family("npu_fault")
    assert len(fam) >= 150
    cats = {c.category for c in fam}
    assert {"device-runtime-error", "device-unavailable", "hccl-init"} <= cats
    assert BOOK.get("0x81078603").category == "hccl-init"
    assert "hccn-device-nic-down" in BOOK.get("0x81078603").entries
    assert "aicore-execution-timeout" in BOOK.get("0x80C9800A").entries
    assert "npu-unhealthy" in BOOK.get("0x40F84E00").entries
    # hardware faults are specific; only the 'something is misconfigured / got bad input' ones are generic
    assert not BOOK.get("0x80E18400").generic and not BOOK.get("0x81078603").generic
    # most codes say which kb entry handles them
    assert sum(1 for c in fam if c.entries) >= 0.9 * len(fam)


def test_the_prefilter_marks_every_npu_fault_spelling():
    """diagnose looks only at prefiltered lines: HEX_CODE_REGEX must cover every code the dictionary lists."""
    from envcheck.kb.match import HEX_CODE_REGEX

    rx = re.compile(HEX_CODE_REGEX)
    for c in BOOK.in_family("npu_fault"):
        bare = c.code[2:]
        for text in (f"[event_id:{c.code.lower()}]", f"Event id={c.code}", f"Error Code     : {bare}",
                     f'"fault_code":"{bare}"'):
            assert rx.search(text), (c.code, text)
    assert not rx.search("ptr 0x7ffd12345678 0xdeadbeef task 80E18400 pa=0x80e18400")


# --- MindIE codes (family mindie) -----------------------------------------------------------------------------------

# (line, [(code, known)]): the spellings MindIE's sources print (see the family's comment in error_codes.yaml)
MIE_LINES = [
    # MindIE-LLM logging_base.py ErrorCodeFormatter (its tests: `[MIE05E020000] Test error message with error code`)
    ("[2025-06-01 10:00:00,123] : [ERROR] [MIE05E020000] Test error message with error code",
     [("MIE05E020000", True)]),
    # MindIE-LLM error_code.py ErrorCodeException / generator.py
    ("TEXT_GENERATOR_OUT_OF_MEMORY fault happened in generate_token, error code: MIE05E01000A.",
     [("MIE05E01000A", True)]),
    # atb_models model.cpp
    ("RuntimeError: Device out of memory during a previous asynchronous step (Execute). Error code: MIE05E000005. "
     "Enable log: export ASCEND_GLOBAL_LOG_LEVEL=3", [("MIE05E000005", True)]),
    # atb_models model_runner.py: `Error_code: {error_code}`
    ("RuntimeError: Device out of memory (OOM) reported by PyTorch. Error_code: MIE05E000005",
     [("MIE05E000005", True)]),
    # mind-cluster mindie_parser.py: `Link from xxx to xxx failed, error code is MIE05E01001B`
    ("Link from 10.0.0.1 to 10.0.0.2 failed, error code is MIE05E01001B", [("MIE05E01001B", True)]),
    # MindIE-Motor TestNPURecoveryManager.cpp: the JSON a server reports
    ('{"errCode": "MIE05E01000A", "errorLocation": "0:0"}', [("MIE05E01000A", True)]),
    # ULOG_ERROR(..., "MIE05E040001", msg) without brackets: the code, then the submodule's bracket
    ("[2025-06-01 10:00:00.123] [1] [2] [llm] [ERROR] MIE05E040001[AddDevicesToRequest] Failed to parse device ip",
     [("MIE05E040001", True)]),
    # MindIE-LLM test_router_impl.py: `WARN:llm:[MIE04E13030A]`
    ("WARN:llm:[MIE04E13030A] Unknown execute_type 9", [("MIE04E13030A", True)]),
    # MindIE-Motor LOG_E("[%s] [ClusterClient] Read CA file failed.", GetErrorCode(...))
    ("[2025-06-01 10:00:00.123] [1] [2] [ms] [ERROR] [GrpcClusterClient.cpp:30] : [MIE03E100005] [ClusterClient] "
     "Read CA file failed.", [("MIE03E100005", True)]),
    # MindIE-SD exception.py
    ("mindiesd.utils.exception.ModelExecError: [MIE06E000005] Model exec err. out of memory", [("MIE06E000005", True)]),
    # a MindIE code next to a CANN one, in order
    ("[MIE05E000002] execute failed: EZ9999: Inner Error!", [("MIE05E000002", True), ("EZ9999", True)]),
    # codes of the right shape that the dictionary does not list, printed as codes: unknown
    ("[ERROR] [MIE09E0000FF] a component envcheck does not know", [("MIE09E0000FF", False)]),
    ("something failed, error code: MIE04E1F0A16", [("MIE04E1F0A16", False)]),
    ("MIE04C0101FF[daemon] critical", [("MIE04C0101FF", False)]),
]


@pytest.mark.parametrize(("line", "expected"), MIE_LINES, ids=[f"M{i}" for i in range(len(MIE_LINES))])
def test_mindie_codes_are_read_in_every_printed_spelling(line, expected):
    hits = extract_codes(line)
    assert [(h.code, h.known) for h in hits] == expected
    for h in hits:
        assert line[h.start:h.end] == h.code
        if h.code.startswith("MIE"):
            assert h.family == "mindie" and (h.info is BOOK.get(h.code) if h.known else h.info is None)


MIE_NOT_CODES = [
    "backend reported MIE05E0000005 in stack",  # 13 characters (a typo in MindIE-LLM's error_code.py), not a code
    "XMIE05E01000A and MIE05E01000A_x and MIE05E01000AB and 1MIE05E01000A",  # inside longer words
    "mie05e01000a MIE05E01000a MIE5E01000A MIE05E1000A MIE05501000A",  # wrong case or shape
    "MIE09E0000FF mentioned in prose, not printed as a code",  # unlisted and without a code context
    "[MIE04I071120] simulate ok and [MIE04W01010B] warning",  # unlisted info / warning levels are not failures
    "error code: MIE04W02010B",
    "MIEMIEMIE05 MIE-05E01000A MIE 05E01000A",
]


@pytest.mark.parametrize("line", MIE_NOT_CODES, ids=[f"MN{i}" for i in range(len(MIE_NOT_CODES))])
def test_mindie_lookalikes_are_neither_codes_nor_unknown(line):
    assert extract_codes(line) == []


def test_mindie_lookup_accepts_any_case_and_the_enum_names():
    c = BOOK.get("MIE05E01000A")
    assert c is not None and c.family == "mindie"
    assert BOOK.get("mie05e01000a") is BOOK.get(" MIE05E01000A ") is BOOK.get("text_generator_out_of_memory") is c
    assert [x.code for x in BOOK.candidates("MIE05E01000A")] == ["MIE05E01000A"]
    assert BOOK.get("MIE09E0000FF") is None and BOOK.candidates("MIE05E0000005") == ()


def test_mindie_codes_have_categories_entries_and_sources():
    fam = BOOK.in_family("mindie")
    assert len(fam) >= 240
    assert "mind-cluster" in BOOK.families["mindie"].source and "hiascend.com" in BOOK.families["mindie"].source
    for c in fam:
        assert c.category in CATEGORY_IDS and c.source.strip() and c.meaning.strip(), c.code
        assert c.code[5] == "E", c.code  # the dictionary lists error-level codes only
    # the OOM codes name the OOM entries; the HBM ECC code the device-memory-fault entry
    for code in ("MIE05E01000A", "MIE05E000005"):
        c = BOOK.get(code)
        assert c.category == "out-of-memory" and not c.generic and "npu-out-of-memory" in c.entries
    assert "hbm-ecc-device-fault" in BOOK.get("MIE05E01000B").entries
    # PD-disaggregation link faults are link faults; a dead multi-node peer is a timeout
    assert BOOK.get("MIE05E01001B").category == "hccl-init" and BOOK.get("MIE04E120414").category == "hccl-timeout"
    # wrappers: MS's CALL_ERROR (type 0A) codes, caught exceptions (type 00), the generic internal errors
    for code in ("MIE03E10000A", "MIE03E20000A", "MIE03E30000A", "MIE03E100500", "MIE05E010013", "MIE04E13030A"):
        assert BOOK.get(code).generic, code
    # MS (component 03) codes end in MindIE-Motor's ErrorType (LoggerDef.h): every CALL_ERROR (0A) and caught
    # EXCEPTION (00) is a wrapper, every RESOURCE_EXHAUSTED (07) a host out-of-memory
    ms = [c for c in fam if c.code.startswith("MIE03E")]
    assert len(ms) >= 150
    for c in ms:
        if c.code[-2:] in ("0A", "00"):
            assert c.generic, c.code
        if c.code[-2:] == "07":
            assert c.category == "out-of-memory", c.code
    # codes only MindIE-LLM's enum or only one repository prints carry their own source
    assert "MindIE-LLM" in BOOK.get("MIE05E01000A").source and BOOK.get("MIE05E01000A").own_source
    assert "MindIE-Motor" in BOOK.get("MIE04E071106").source
    assert not BOOK.get("MIE03E100005").own_source  # a kg-config code: the family's source


def test_the_prefilter_marks_every_mindie_spelling_and_only_lines_with_mie():
    from envcheck.kb.match import MIE_CODE_REGEX

    rx = re.compile(MIE_CODE_REGEX)
    assert MIE_CODE_REGEX.startswith("MIE")  # RE2 skips to the literal: lines without it never reach the extractor
    for c in BOOK.in_family("mindie"):
        for text in (f"[{c.code}] x", f"error code: {c.code}.", f"{c.code}[sub] x", f'"errCode": "{c.code}"'):
            assert rx.search(text), (c.code, text)
    for line, _ in MIE_LINES:
        assert rx.search(line)
    assert not rx.search("[ERROR] MindIE daemon failed, see MIE docs; code 05E01000A, mie05e01000a")


# --- unknown codes, line numbers, streaming -------------------------------------------------------------------


def test_unknown_codes_are_reported_as_unknown():
    text = "\n".join([
        "NPU function error: aclFoo, error code is 599999",
        "EQ1234: [PID: 1] something new",
        "[ERROR] 2025-01-01-00:00:00 (PID:1, Device:0, RankID:0) ERR05001 NEW invalid parameter",
        "[ERROR] HCCL(1,x):2025-01-01-00:00:00.000.000 [a.cc:1] failed. ret[27].",
        "dcmi module initialize failed. ret is -8099",
    ])
    hits = extract_codes(text)
    assert [(h.code, h.family, h.known, h.line) for h in hits] == [
        ("599999", "acl", False, 1),
        ("EQ1234", "cann", False, 2),
        ("ERR05001", "torch_npu", False, 3),
        ("27", "hccl", False, 4),
        ("-8099", "dcmi", False, 5),
    ]
    assert all(h.info is None for h in hits)


def test_weak_keywords_report_only_known_codes():
    assert [h.code for h in extract_codes("runtime result = 107001")] == ["107001"]
    assert extract_codes("runtime result = 599999") == []


def test_line_numbers_and_streaming_agree():
    text = "ok\nEI0006: timeout\nnothing 123\nerror code is 507033\r\n\nERR02200 DIST call hccl api failed\n"
    expected = [("EI0006", 2), ("507033", 4), ("ERR02200", 6)]
    assert [(h.code, h.line) for h in extract_codes(text)] == expected
    assert [(h.code, h.line) for h in iter_codes(io.StringIO(text))] == expected
    assert [(h.code, h.line) for h in iter_codes(text.splitlines(), start=10)] == [(c, n + 9) for c, n in expected]
    assert scan_line("ret[9]", 7) == []  # no HCCL context on the line
    assert [(h.code, h.line) for h in scan_line("HCCL ret[9]", 7)] == [("9", 7)]


def test_a_file_of_many_lines_is_scanned_one_line_at_a_time(tmp_path):
    p = tmp_path / "big.log"
    block = "INFO step 10 loss 2.5\n" * 200 + "EI0006: Getting socket times out.\n"
    p.write_text(block * 50, encoding="utf-8")
    with p.open(encoding="utf-8") as fh:
        hits = list(iter_codes(fh))
    assert len(hits) == 50 and {h.code for h in hits} == {"EI0006"}
    assert hits[0].line == 201 and hits[1].line == 402


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789 .:-_[]()=/,+\t", max_size=300))
def test_text_without_letters_never_yields_codes(text):
    assert extract_codes(text) == []


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["error code is ", "ret[", "errorCode = ", "ErrCode=", "错误码：", "ret: "]),
       st.integers(min_value=100000, max_value=599999))
def test_any_six_digit_code_after_a_strong_keyword_is_found(prefix, n):
    hits = extract_codes(f"call failed, {prefix}{n}]")
    assert [h.code for h in hits] == [str(n)]
    assert hits[0].known == (BOOK.get(str(n)) is not None)


# --- linear time --------------------------------------------------------------------------------------------------

ADVERSARIAL = [
    "error code " * 20000,
    "ret[" * 40000,
    "error code" + " " * 100000 + "x",
    "E1" * 60000,
    "ERR0" * 40000,
    "错误码" * 40000,
    "EI000" * 30000,
    "ret is -" * 20000,
    "9" * 150000,
    "hccl ret = 1 " * 12000,
    "0x" * 60000,
    "0x80e18400 " * 12000,
    "Error Code : " * 10000,
    "Error Code : " + "80E18400 " * 15000,
    'fault_code":"' * 10000,
    "MIE" * 50000,
    "MIE05E01000A" * 12000,
    "[MIE05E01000A] " * 10000,
    "error code: MIE09E0000FF " * 6000,
    "[MIE09E0000F" * 12000,
]


@pytest.mark.parametrize("line", ADVERSARIAL, ids=[f"A{i}" for i in range(len(ADVERSARIAL))])
def test_adversarial_lines_stay_linear(line):
    """4x the input costs roughly 4x the time. Measured as this process's CPU time (another process
    on a loaded machine does not count) and the best of three runs (a preemption inflates one run only)."""
    def cost(text: str) -> float:
        best = float("inf")
        for _ in range(3):
            t0 = time.process_time()
            scan_line(text)
            best = min(best, time.process_time() - t0)
        return best

    t_small, t_big = cost(line[: len(line) // 4]), cost(line)
    assert t_big < 2.0
    assert t_big < 12 * t_small + 0.05


def test_aclnn_return_codes_are_read_from_an_op_api_failure():
    # op-plugin's opapi wrappers print the aclnnStatus as `error code is N` (the line is written for this test)
    line = ("RuntimeError: cat:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:265 NPU function error: "
            "call aclnnCat failed, error code is 161002")
    hits = [h for h in extract_codes(line) if h.code == "161002"]
    assert hits and hits[0].info is not None and hits[0].info.family == "aclnn"
    assert hits[0].info.category == "op-unsupported" and not hits[0].info.generic
    assert BOOK.get("561000").generic and BOOK.get("ACLNN_ERR_INNER_OPP_KERNEL_PKG_NOT_FOUND").code == "561112"
