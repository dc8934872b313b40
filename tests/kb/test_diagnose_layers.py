"""Layered matching (kb patterns, error codes, ranked fallback), ranking that follows the failure,
unwrapping of hard-wrapped pastes, `explain` for error codes, and input safety (issues 11 and 14).

The texts below are the examples issue 11 lists, not field-corpus excerpts.
"""
from __future__ import annotations

import io
import os

import pytest

from envcheck.kb.diagnose import DiagnoseResult, Match, diagnose
from envcheck.kb.match import ERROR_CAP, KEEP_ERRORS, ScanResult, kb_matcher, line_severity, unwrap

DOUBLE = ("[W304 09:58:01.220133446 compiler_depend.ts:164] Warning: Warning: Device do not support double dtype "
          "now, dtype cast repalce with float. (function operator())")
EI0006 = ("EI0006: [PID: 3100] 2025-03-04-10:00:12.000.001 Getting socket times out. Reason: 1. The remote does not "
          "initiate a connect request. some NPUs did not start a task or it is abnormal.")
OOM_LINE = "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.96 GiB total capacity)"
FALLBACK = ("[W compiler_depend.ts:51] Warning: CAUTION: The operator 'aten::isin.Tensor_Tensor_out' is not currently "
            "supported on the NPU backend and will fall back to run on the CPU. This may have performance "
            "implications. (function npu_cpu_fallback)")


def run(tmp_path, text: str, name: str = "paste.log") -> DiagnoseResult:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return diagnose([str(p)])


def test_an_acl_code_alone_is_explained_not_unknown(tmp_path):
    r = run(tmp_path, "RuntimeError: copy_d2d:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:67 NPU function "
                      "error: c10_npu::acl::AclrtSynchronizeStreamWithTimeout(copy_stream), error code is 507001\n")
    assert r.unknown_codes == ()
    (c,) = r.codes
    assert (c.code, c.name, c.generic) == ("507001", "ACL_ERROR_RT_TS_ERROR", True)
    assert r.exit_code == 1 and r.stats["error_lines"] == 1


@pytest.mark.parametrize("text, entry", [
    ("(EngineCore_DP0 pid=1) ValueError: Free memory on device (8.0/64.0 GiB) on startup is less than desired "
     "GPU memory utilization (0.9, 57.6 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
     "processes.\n", "npu-out-of-memory"),
    ("{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 1e-05, 'epoch': 0.5}\n", "nan-loss-gradient-explosion"),
    ("RuntimeError: Ascend kernel runtime initialization failed\n", "driver-too-old-for-cann"),
])
def test_issue_examples_are_recognised(tmp_path, text, entry):
    r = run(tmp_path, text)
    assert r.matches and r.matches[0].id == entry and r.matches[0].confidence == "matched"


@pytest.mark.parametrize("width", [80, 100, 120])
def test_hard_wrapped_warning_is_joined(tmp_path, width):
    # an N-column terminal: the break falls anywhere, mid-word too ("... and w" / "ill fall back")
    wrapped = "\n".join(FALLBACK[i:i + width] for i in range(0, len(FALLBACK), width))
    assert wrapped.count("\n") >= 1
    r = run(tmp_path, "some output\n" + wrapped + "\nnext line\n")
    (m,) = [m for m in r.matches if m.id == "cpu-fallback-silent"]
    assert m.lines[0]["line"] == 2  # the physical line the joined sentence starts on
    assert "will fall back to run on the CPU" in m.lines[0]["text"]
    assert r.stats["lines"] == 3 + wrapped.count("\n")


def test_colour_codes_and_html_references_do_not_hide_a_failure(tmp_path):
    # a coloured terminal log saved to a file: the escape sequence glues itself to the code (`\x1b[31mEZ9999`)
    r = run(tmp_path, "step 1\n\x1b[1;31mEI0006: Getting socket times out. Reason: 1. The remote does not initiate"
                      " a connect request.\x1b[0m\nstep 2\n")
    assert r.matches[0].category == "hccl-init"
    assert "\x1b" not in r.matches[0].lines[0]["text"] and r.matches[0].lines[0]["line"] == 2
    assert [c.code for c in r.codes] == ["EI0006"]
    # a log copied from a web page or a mail: quotes as HTML character references
    r = run(tmp_path, "AttributeError: &#x27;Tensor&#x27; object has no attribute &#x27;npu&#x27;\n")
    assert r.matches[0].lines[0]["text"] == "AttributeError: 'Tensor' object has no attribute 'npu'"
    assert r.matches[0].category == "migration"
    # a reference that would decode to a newline is kept as written: line numbers stay the input's
    r = run(tmp_path, "a &#10; b\n" + FALLBACK + "\n")
    assert r.stats["lines"] == 2 and r.matches[0].lines[0]["line"] == 2


def test_json_log_records_are_read_as_their_text(tmp_path):
    """A container's JSON log (docker json-file) or a structured logger's records: the record's text is matched,
    led by the record's level; line numbers stay the input's."""
    import json

    docker = [json.dumps({"log": line + "\n", "stream": "stderr", "time": "2026-11-30T08:12:01.5Z"})
              for line in ("step 1", "\x1b[31m" + EI0006 + "\x1b[0m", "step 2")]
    r = run(tmp_path, "\n".join(docker) + "\n")
    assert r.matches[0].category == "hccl-init" and [c.code for c in r.codes] == ["EI0006"]
    assert r.matches[0].lines[0]["line"] == 2 and r.matches[0].lines[0]["text"].startswith("EI0006: [PID: 3100]")
    # a structured logger: its level makes the line an error line even when the text names none
    rec = {"level": "error", "msg": "the collective did not complete: HCCL_BUFFSIZE is smaller than the payload"}
    r = run(tmp_path, "\n".join([json.dumps({"level": "info", "msg": "start"}), json.dumps(rec)]) + "\n")
    assert r.stats["error_lines"] == 1
    # what is no log record stays as written: a metrics dict, a record whose text spans lines, a broken line
    keep = [json.dumps({"loss": 0.0, "grad_norm": float("nan")}), json.dumps({"log": "a\nb\n"}), '{"log": "x"']
    from envcheck.kb.match import json_decoded
    assert json_decoded("\n".join(keep).encode()) == "\n".join(keep).encode()
    assert json_decoded(b'{"MESSAGE": "EZ9999: Inner Error!", "PRIORITY": "3"}') == b"[ERROR] EZ9999: Inner Error!"


def test_a_big_json_log_is_decoded_block_by_block():
    """Past the paste size the JSON log is scanned in blocks: every block is decoded, not only the first."""
    import json

    from envcheck.kb.match import UNWRAP_MAX

    line = json.dumps({"log": "iteration ok, nothing to see here\n", "stream": "stdout", "time": "t"})
    n = UNWRAP_MAX // len(line) + 1000
    lines = [line] * n
    lines[n - 5] = json.dumps({"log": EI0006 + "\n", "stream": "stderr", "time": "t"})
    m = kb_matcher()
    r = ScanResult()
    m.scan_stream(io.BytesIO(("\n".join(lines) + "\n").encode()), "big.log", r, budget=60)
    hits = [h for e in r.entries.values() for h in e.first]
    assert hits and all(h.line == n - 4 and h.text.startswith("EI0006: [PID: 3100]") for h in hits)


def test_unwrap_rules():
    lines = [b"Warning: CAUTION: The operator 'torchvision::nms' is not currently supported on the NPU backend and w",
             b"ill fall back to run on the CPU.",
             b"Warning: CAUTION: The operator 'aten::isin.Tensor_Tensor_out' is not currently supported on the NPU b",
             b"ackend and will fall back to run on the CPU.",
             b"[INFO] RUNTIME(1,python3):2024-07-04-14:14:25.036.721 [stars_engine.cc:1321] task_id=1 ok........",
             b"[INFO] RUNTIME(1,python3):2024-07-04-14:14:25.036.721 [stars_engine.cc:1321] task_id=2 ok........",
             b"EZ9999: Inner Error!",
             b"RuntimeError: the worker found that the model and the tokenizer disagree about",
             b"the vocabulary size"]
    out, starts = unwrap(lines)
    # two lines of the same width broken mid-sentence: a fixed-width wrap, joined as is
    assert out[0].endswith(b"backend and will fall back to run on the CPU.")
    assert out[1].endswith(b"NPU backend and will fall back to run on the CPU.")
    assert out[2:5] == lines[4:7]  # equal-length log records stay apart
    assert out[5] == lines[7] + b" " + lines[8]  # a sentence broken at a space
    assert starts == [0, 2, 4, 5, 6, 7]
    # a log record ending in a word is not prose: the next lower-case line stays apart
    rec = [b"[INFO] RUNTIME(1,python3):2024-07-04-14:14:25.036.721 [stars_engine.cc:1321] task ok",
           b"error code is 507033"]
    assert unwrap(rec)[0] == rec
    # a loader's "path: undefined symbol" message broken after the path's colon (a tracker's wrap of a long path)
    so = [b"ImportError: /usr/local/Ascend/ascend-toolkit/latest/x86_64-linux/lib64/libtbe_adapter.so:",
          b"undefined symbol: _ZN2ge12GetErrorMsgEv"]
    assert unwrap(so)[0] == [so[0] + b" " + so[1]]


def test_unwrap_at_a_terminal_width_joins_any_cut_but_never_a_new_record():
    head = b"RuntimeError: HCCL init timed out, consider raising HCCL_CONNECT"  # padded to exactly 80 columns
    head = head + b"." * (80 - len(head))
    assert len(head) == 80
    for piece in (b"_TIMEOUT to 300 seconds", b"7048 retries", b"Set seed for `npu` device", b"`torch.npu` ok",
                  b" to 300 seconds", b" Set it in the launcher"):
        assert unwrap([head, piece])[0] == [head + piece], piece
    for record in (b"RuntimeError: second failure", b"[ERROR] RUNTIME(1,python3) failed", b"2025-01-01 10:00:00 x",
                   b"Traceback (most recent call last):", b"EI0006: Getting socket times out", b"[rank3]: boom",
                   b"E1201 10:00:00.000 x.cc:1] boom", b'File "x.py", line 3', b"Note: a new sentence",
                   b'  File "x.py", line 3', b"    raise RuntimeError(msg)", b" [ERROR] RUNTIME(1,python3) failed"):
        assert unwrap([head, record])[0] == [head, record], record
    short = b"RuntimeError: HCCL init timed out"  # not at a terminal's width: a capital starts a new line
    assert unwrap([short, b"Set seed for `npu` device"])[0] == [short, b"Set seed for `npu` device"]


def test_a_word_wrapped_paste_that_fills_a_terminal_width_keeps_its_space(tmp_path):
    # vllm-project/vllm-ascend#14631 as pasted (mined in serving.yaml): word-wrapped by the tracker, its first line
    # happens to be exactly 80 columns, and the next starts with a capital; the line after is broken at a space
    paste = ("ValueError: Free memory on device (8.0/64.0 GiB) on startup is less than desired\n"
             "GPU memory utilization (0.9, 57.6 GiB). Decrease GPU memory utilization or\n"
             "reduce GPU memory used by other processes.\n")
    assert len(paste.splitlines()[0]) == 80
    (joined,), _ = unwrap([ln.encode() for ln in paste.splitlines()])
    assert b"less than desired GPU memory utilization" in joined and b"utilization or reduce GPU" in joined
    r = run(tmp_path, paste)
    assert r.matches[0].id == "npu-out-of-memory" and r.matches[0].confidence == "matched"
    # the same 80-column line cut inside a word by a terminal, no neighbour broken at a space: joined as is
    head = b"RuntimeError: copy_d2d: AclrtSynchronizeStreamWithTimeout(copy_stream) failed in aclrtSynchronize"
    head = head[:80]
    assert len(head) == 80 and head[-1:].isalpha()
    assert unwrap([head, b"StreamWithTimeout, error code is 507001"])[0] == [
        head + b"StreamWithTimeout, error code is 507001"]
    # a neighbour that is prose broken at a space, but a break with no letter on one side: joined as is
    dot = head[:79] + b"."
    assert unwrap([dot, b"Retry with HCCL_CONNECT_TIMEOUT raised to 600 seconds and check the", b"network"])[0][0] \
        == dot + b"Retry with HCCL_CONNECT_TIMEOUT raised to 600 seconds and check the network"


def test_benign_warning_never_first_and_how_to_never_above_a_diagnosis(tmp_path):
    text = "\n".join([
        DOUBLE,
        "[rank0]: RuntimeError: ... ERR02200 DIST call hccl api failed.",
        EI0006,
        "[ERROR] HCCL(3100,python3):2025-03-04-10:00:12.000.002 [hccl_socket_manager.cc:813] [3101][Wait]"
        "[LinkEstablish]wait socket establish timeout, role[0] rank[0] timeout[120 s]",
    ]) + "\n"
    r = run(tmp_path, text)
    ids = [m.id for m in r.matches]
    assert r.matches[0].category in ("hccl-init", "rank-config") and r.matches[0].severity == "error"
    benign = [m for m in r.matches if m.severity == "benign"]
    assert benign and ids.index(benign[0].id) == len(ids) - len(benign)
    if "preflight-allreduce-selfcheck" in ids:
        assert ids.index("preflight-allreduce-selfcheck") > ids.index("hccl-connect-timeout")
    assert r.benign[0]["line"] == 1 and "harmless" in r.benign[0]["why"]


def test_benign_only_is_no_problem(tmp_path):
    r = run(tmp_path, DOUBLE + "\nstep 1 loss 2.3\n")
    assert r.exit_code == 0 and r.stats["error_lines"] == 0
    assert all(m.severity == "benign" for m in r.matches)


def test_errors_over_warnings_and_first_error_over_its_cascade(tmp_path):
    text = "\n".join([
        FALLBACK,
        "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.96 GiB total capacity)",
        "[rank0]:[E304 10:32:48.1 ProcessGroupHCCL.cpp:606] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkHCCL(SeqNum=1, OpType=ALLREDUCE) ran for 1800513 milliseconds before timing out.",
    ]) + "\n"
    r = run(tmp_path, text)
    ids = [m.id for m in r.matches]
    assert ids[0] == "npu-out-of-memory"
    assert ids.index("hccl-timeout") < ids.index("cpu-fallback-silent")  # errors, then the warning


def test_a_pattern_on_a_pasted_warning_outranks_the_guesses_drawn_from_that_warning(tmp_path):
    """A paste that is one warning line and nothing else: the search's `likely` guesses are drawn from that same line,
    so they must not outrank a kb pattern that matched it, wrapper or not (a warning used as the fallback's query
    keeps its warning severity). Checked on every pattern of the shipped kb whose first example is a warning line
    that no benign rule claims."""
    from envcheck.kb.entries import load_kb
    from envcheck.kb.match import SEV_WARNING

    on_warnings = [(e.id, p) for e in load_kb().entries for p in e.patterns
                   if p.examples and line_severity(p.examples[0]) == SEV_WARNING]
    assert len(on_warnings) >= 20 and any(p.wrapper for _, p in on_warnings)
    wrong = []
    for eid, line in ((eid, p.examples[0]) for eid, p in on_warnings):
        r = run(tmp_path, line + "\n")
        if not r.matches or r.matches[0].confidence == "likely":
            wrong.append((eid, [(m.id, m.confidence) for m in r.matches[:2]]))
    assert not wrong, wrong


def test_a_match_on_a_line_or_code_several_causes_print_is_marked_weak(tmp_path, cli):
    """A wrapper line alone, or a generic code alone, still names an entry, but the report says the evidence is weak
    (JSON `weak`, text `(matched, weak)` with a note); a specific line is not weak, and neither is its entry when the
    same paste also holds the wrapper line."""
    from envcheck.kb.entries import load_kb

    wrapper = next(p.examples[0] for e in load_kb().entries if e.id == "torch-compile-inductor-on-npu"
                   for p in e.patterns if p.wrapper)
    (m, *_) = run(tmp_path, wrapper + "\n").matches
    assert (m.id, m.confidence, m.weak) == ("torch-compile-inductor-on-npu", "matched", True)
    assert m.to_dict()["weak"] is True and Match.from_dict(m.to_dict()) == m
    (m, *_) = run(tmp_path, "EZ9999: Inner Error!\n").matches
    assert m.confidence == "code" and m.weak
    r = run(tmp_path, f"{wrapper}\n{OOM_LINE}\n")
    assert (r.matches[0].id, r.matches[0].weak) == ("npu-out-of-memory", False)
    p = tmp_path / "w.log"
    p.write_text(wrapper + "\n", encoding="utf-8")
    out = cli("diagnose", str(p), "--color", "never").out
    assert "(matched, weak)" in out and "weak: several causes print this line" in out
    assert "| matched, weak |" in cli("diagnose", str(p), "--format", "markdown").out


def test_code_and_likely_confidence(tmp_path):
    r = run(tmp_path, "[ERROR] HCCL(1,python3):2025-01-01-00:00:00.000.000 init failed\nEI0014: topo missing\n")
    assert any(m.confidence == "code" and "EI0014" in m.codes for m in r.matches)
    r = run(tmp_path, "RuntimeError: the vocabulary of the tokenizer does not match the checkpoint shards\n")
    assert r.matches and {m.confidence for m in r.matches} == {"likely"}
    assert r.exit_code == 1


def test_pta_resource_not_found_follows_the_line_that_says_what_was_missing(tmp_path):
    # ERR00008 (PTA NOT_FOUND) is what torch_npu appends to any failed look-up: with the set_env.sh hint the CANN
    # environment is not loaded; after `Failed to find function <ACL/HCCL api>` the installed CANN is older than
    # torch_npu (Ascend/pytorch torch_npu/csrc/core/npu/interface/AclInterface.cpp, HcclInterface.cpp)
    older = ("RuntimeError: Failed to find function aclrtSetOpWaitTimeout\n"
             "[ERROR] 2025-03-02-10:41:32 (PID:59450, Device:0, RankID:-1) ERR00008 PTA resource not found\n")
    r = run(tmp_path, older)
    assert r.matches[0].id == "torch-npu-cann-mismatch" and r.matches[0].confidence == "matched"
    unsourced = ("ImportError: libhccl.so: cannot open shared object file: No such file or directory. Please check "
                 "that the cann package is installed. Please run 'source set_env.sh' in the CANN installation path.\n"
                 "[ERROR] 2024-06-20-10:41:32 (PID:59450, Device:-1, RankID:-1) ERR00008 PTA resource not found\n")
    r = run(tmp_path, unsourced)
    assert r.matches[0].id == "cann-env-not-loaded"
    # the code alone still points at its usual cause, as a code (not a pattern) match
    r = run(tmp_path, "[ERROR] 2024-06-20-10:41:32 (PID:59450, Device:-1, RankID:-1) ERR00008 PTA resource not "
                      "found\n")
    assert r.matches[0].id == "cann-env-not-loaded" and r.matches[0].confidence == "code"
    # a driver function is the driver's (DcmiInterface.cpp: `maybe your hdk version is too low`), not CANN's
    r = run(tmp_path, "RuntimeError: Failed to find function dcmi_init, maybe your hdk version is too low, "
                      "please upgrade it.\n")
    assert r.matches[0].id == "driver-too-old-for-cann"


def test_an_npu_fault_id_names_the_entry_that_treats_it(tmp_path):
    # research/error-catalogue.md DR-09: the RAS line names the fault by its health-management event id
    r = run(tmp_path, "[ERROR] RUNTIME(1,python3):2025-01-01-00:00:00.000.000 [device_error_proc.cc:1]1 Fault RAS "
                      "occurs in the system: [event_id:0x80e18400] New uncorrectable ECC / other uncorrectable memory "
                      "error. For details about troubleshooting, see Health Management Error Definition.\n")
    assert r.matches[0].id == "hbm-ecc-device-fault" and r.matches[0].confidence in ("matched", "code")
    assert "0x80E18400" in r.matches[0].codes
    assert [(c.code, c.family) for c in r.codes] == [("0x80E18400", "npu_fault")] and r.unknown_codes == ()
    # the id alone (a device kernel log line, no kb pattern) is enough: confidence `code`
    r = run(tmp_path, "[klogd.c:242][583733.716915] event_id=0x80e18400\n")
    assert r.matches and r.matches[0].id == "hbm-ecc-device-fault" and r.matches[0].confidence == "code"
    # npu-smi's bare spelling of a link fault
    r = run(tmp_path, "\tHealth Status                  : Alarm\n\tError Code                     : 81078603\n")
    assert {"hccn-device-nic-down", "device-nic-link-unstable"} <= {m.id for m in r.matches}


def test_hex_addresses_are_not_codes_and_fault_ids_are_found_past_the_error_cap():
    noise = "".join(f"RuntimeError: odd {i} at 0x7ffd1234{i:04x} magic 0xdeadbeef\n" for i in range(ERROR_CAP + 50))
    r = ScanResult()
    kb_matcher().scan_stream(io.BytesIO((noise + "kernel: event_id=0x80C9800A\n").encode()), "big.log", r,
                             workers=1)
    assert list(r.codes) == ["0x80C9800A"]  # no address or magic number became a code, known or unknown
    assert "aicore-execution-timeout" in r.entries


MINDIE_OOM = ("[2025-06-01 10:00:00,123] [1234] [5678] [llm] [ERROR] [generator.py-707] : TEXT_GENERATOR_OUT_OF_MEMORY "
              "fault happened in generate_token, error code: MIE05E01000A.")


def test_a_mindie_code_is_named_with_its_meaning_and_its_oom_entry(tmp_path):
    r = run(tmp_path, MINDIE_OOM + "\n")
    (c,) = r.codes
    assert (c.code, c.family, c.name, c.category) == ("MIE05E01000A", "mindie", "TEXT_GENERATOR_OUT_OF_MEMORY",
                                                      "out-of-memory")
    assert "memory" in c.meaning and not c.generic and r.unknown_codes == ()
    assert r.matches[0].id == "npu-out-of-memory" and "MIE05E01000A" in r.matches[0].codes
    from envcheck.render import render

    text = render(r, "text")
    assert "MIE05E01000A TEXT_GENERATOR_OUT_OF_MEMORY" in text and c.meaning in text
    # atb_models' spelling of its own OOM code reaches the same entry
    r = run(tmp_path, "RuntimeError: Device out of memory during a previous asynchronous step (Execute). Error code: "
                      "MIE05E000005. Enable log: export ASCEND_GLOBAL_LOG_LEVEL=3\n")
    assert [c.code for c in r.codes] == ["MIE05E000005"] and "npu-out-of-memory" in [m.id for m in r.matches[:3]]


def test_unlisted_mindie_codes_are_unknown_only_where_printed_as_codes(tmp_path):
    r = run(tmp_path, "[2025-06-01 10:00:00.000] [llm] [ERROR] [MIE09E0000FF] something new\n"
                      "[2025-06-01 10:00:01.000] [llm] [ERROR] see MIE09E0000EE in the manual\n"
                      "[2025-06-01 10:00:02.000] [llm] [INFO] [MIE04I071120] probe ok\n")
    assert [u.code for u in r.unknown_codes] == ["MIE09E0000FF"] and r.codes == ()


def test_mindie_codes_are_found_past_the_error_cap_and_only_lines_with_mie_reach_the_extractor(monkeypatch):
    import envcheck.kb.codes as codes

    seen: list[str] = []
    orig = codes._mie_hits

    def counting(line, lineno, book):
        seen.append(line)
        return orig(line, lineno, book)

    monkeypatch.setattr(codes, "_mie_hits", counting)
    noise = "".join(f"RuntimeError: odd {i} error code: 0x{i:04x} mie\n" for i in range(ERROR_CAP + 50))
    r = ScanResult()
    kb_matcher().scan_stream(io.BytesIO((noise + "[INFO] [MIE05E01000A] oom\n").encode()), "big.log", r, workers=1)
    assert list(r.codes) == ["MIE05E01000A"] and "npu-out-of-memory" in r.entries
    assert seen == ["[INFO] [MIE05E01000A] oom"]


def test_explain_mindie_codes(cli):
    for spelling in ("MIE05E01000A", "mie05e01000a", "TEXT_GENERATOR_OUT_OF_MEMORY"):
        (c,) = cli("explain", spelling, "--json").json()["candidates"]
        assert (c["code"], c["family"], c["category"]) == ("MIE05E01000A", "mindie", "out-of-memory")
        assert "npu-out-of-memory" in c["kb"] and c["meaning"] and "MindIE-LLM" in c["source"]
    r = cli("explain", "MIE03E10000A")
    assert r.rc == 0 and "MIE03E10000A" in r.out and "generic" in r.out and "mind-cluster" in r.out
    r = cli("explain", "MIE09E0000FF")
    assert r.rc == 2 and "unknown check or error code" in r.err and "MIE05E01000A" in r.err


def test_no_known_pitfall_only_without_error_lines(tmp_path):
    r = run(tmp_path, "step 1 loss 2.31\nstep 2 loss 2.30\n")
    assert not r.matches and r.exit_code == 0 and r.stats["error_lines"] == 0
    from envcheck.render import render

    assert "no known pitfall found" in render(r, "text")
    r = run(tmp_path, "zqxj failed: qqqq wwww\n")
    assert r.exit_code == 1 and "no known pitfall" not in render(r, "text")


def test_match_round_trip_and_old_documents():
    m = Match("a", "t", "numerics", 1, 20, ({"file": "f", "line": 1, "text": "x"},), 0, "", "", "",
              confidence="likely", severity="warning", codes=("EI0006",))
    assert Match.from_dict(m.to_dict()) == m
    old = {k: v for k, v in m.to_dict().items() if k not in ("confidence", "severity", "codes")}
    assert Match.from_dict(old).confidence == "matched"


def test_codes_are_read_only_on_prefiltered_lines(monkeypatch):
    calls = []
    import envcheck.kb.codes as codes

    orig = codes.scan_line

    def counting(line, lineno=1, book=None):
        calls.append(line)
        return orig(line, lineno, book)

    monkeypatch.setattr(codes, "scan_line", counting)
    noise = "[INFO] RUNTIME(1,python3):2024-07-04-14:14:25.036.721 [stars_engine.cc:1321] task_id=%d ok\n"
    text = "".join(noise % i for i in range(2000)) + "error code is 507033\n" + "".join(noise % i for i in range(50))
    r = kb_matcher().scan_text(text)
    assert calls == ["error code is 507033"] and "507033" in r.codes


def test_error_lines_are_capped_but_patterns_still_found():
    text = "".join(f"RuntimeError: something odd {i}\n" for i in range(ERROR_CAP + 500))
    text += "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.96 GiB total capacity)\n"
    r = ScanResult()
    kb_matcher().scan_stream(io.BytesIO(text.encode()), "big.log", r, workers=1)
    assert r.error_lines == ERROR_CAP + 1 and len(r.errors) == KEEP_ERRORS  # the cap, then only kb/code lines
    assert r.entries["npu-out-of-memory"].first[0].line == ERROR_CAP + 501


@pytest.mark.parametrize("line, sev", [
    ("[ERROR] HCCL(1,python3): x", 3), ("RuntimeError: x", 3), ("[W compiler_depend.ts:51] Warning: x failed", 1),
    ("UserWarning: something is not supported", 1), ("[INFO] task failed=0", 2), ("step 3 loss 2.1", 2),
    ("Traceback (most recent call last):", 2), (DOUBLE, 0), ("E   RuntimeError: x", 3),
    # a line of CANN's error-message block is an error line though it names no error word (the code's E is its level)
    ("E89999[PID: 183646] 2026-04-01-13:43:00.810.813 (E89999):  op[RotaryPositionEmbedding], when input is BNSD", 3),
    ("(Worker_TP0 pid=135346) EZ1001: [PID: 135346] Tensor scale not implemented for DT_FLOAT16,", 3),
    ("[rank3]: E89999: op[RotaryPositionEmbedding], when input is BNSD layout and", 3),
    ("step 3 done, see E12345 in the manual", 2),
    # "err" as a word is the error's own abbreviation (hccl_test); inside a word (stderr, errno) it is not
    ("hccl interface return err ./opbase_test/hccl_allreduce_rootinfo_test.cc:135,retcode:4", 3),
    ("redirecting stderr to /tmp/out.log", 2), ("errno=0 after step 3", 2),
])
def test_line_severity(line, sev):
    assert line_severity(line) == sev


def test_explain_error_codes(cli):
    r = cli("explain", "507001")
    assert r.rc == 0 and "ACL_ERROR_RT_TS_ERROR" in r.out and "device-runtime-error" in r.out and "source:" in r.out
    r = cli("explain", "ei0006", "--json")
    d = r.json()
    assert d["kind"] == "error-code" and d["candidates"][0]["code"] == "EI0006"
    assert "hccl-connect-timeout" in d["candidates"][0]["kb"]
    r = cli("explain", "hccl:9")
    assert r.rc == 0 and "HCCL_E_TIMEOUT" in r.out
    for spelling in ("0x80e18400", "0X80E18400", "80E18400"):
        r = cli("explain", spelling, "--json")
        (c,) = r.json()["candidates"]
        assert (c["code"], c["family"], c["category"]) == ("0x80E18400", "npu_fault", "device-runtime-error")
        assert "hbm-ecc-device-fault" in c["kb"] and c["meaning"] and "mind-cluster" in c["source"]
    r = cli("explain", "0x80e18400")
    assert r.rc == 0 and "0x80E18400" in r.out and "hbm-ecc-device-fault" in r.out
    r = cli("explain", "0xdeadbeef")
    assert r.rc == 2 and "unknown check or error code" in r.err
    r = cli("explain", "EQ1234")
    assert r.rc == 2 and r.err.count("\n") == 1 and "unknown check or error code" in r.err


def test_fifo_is_a_one_line_usage_error(cli, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    r = cli("diagnose", str(fifo))
    assert r.rc == 2 and r.err.count("\n") == 1 and "named pipe" in r.err


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads any directory")
def test_unreadable_directory_is_a_note_and_not_ok(cli, tmp_path):
    (tmp_path / "ok.log").write_text("RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0)\n")
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "x.log").write_text("x\n")
    locked.chmod(0)
    try:
        r = cli("diagnose", str(tmp_path), "--json")
    finally:
        locked.chmod(0o755)
    d = r.json()
    assert r.rc == 2 and any("cannot read directory" in n for n in d["notes"])
    assert d["matches"][0]["id"] == "npu-out-of-memory"  # the readable part is still diagnosed


def test_walk_errors_become_notes_and_a_non_ok_exit(tmp_path, monkeypatch):
    # the same wiring as above, for runs as root (which reads every directory): safeio.walk_errors decides
    import envcheck.safeio as safeio

    (tmp_path / "ok.log").write_text("RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0)\n")
    real = safeio.walk_errors

    def walk(top):
        files, errors = real(top)
        return files, errors + [f"{top}/locked: cannot read directory (Permission denied)"]

    monkeypatch.setattr(safeio, "walk_errors", walk)
    r = diagnose([str(tmp_path)])
    assert r.exit_code == 2 and r.stats["incomplete_inputs"]
    assert f"{tmp_path}/locked: cannot read directory (Permission denied)" in r.notes
    assert r.matches[0].id == "npu-out-of-memory"


@pytest.mark.parametrize("line", [
    "WARNING 11-30 10:00:00 [envs.py:100] Unknown vLLM environment variable detected: VLLM_ASCEND_ENABLE_NZ",
    "Failed to import from vllm._C with ModuleNotFoundError(\"No module named 'vllm._C'\")",
])
def test_vllm_lines_every_ascend_start_prints_are_benign_and_leave_the_fallback_free(tmp_path, line):
    r = run(tmp_path, line + "\nRuntimeError: the scheduler could not place the request on any worker\n")
    assert r.benign and r.matches and r.matches[0].severity != "benign"
    assert r.matches[-1].severity == "benign" and r.matches[-1].id == "vllm-harmless-startup-logs"


def test_deepspeed_libaio_warnings_are_benign_and_leave_the_fallback_free(tmp_path):
    from envcheck.kb.match import benign_reason

    # DeepSpeed's op check warns on hosts without libaio; only NVMe offload needs the op (written for this test)
    warn = ("[WARNING]  async_io requires the dev libaio .so object and headers but these were not found.\n"
            "[WARNING]  async_io: please install the libaio-dev package with apt\n")
    r = run(tmp_path, warn + "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB\n")
    assert all(benign_reason(line) for line in warn.splitlines())
    assert r.benign and "NVMe offload" in r.benign[0]["why"]
    assert r.matches and r.matches[0].id == "npu-out-of-memory"
    assert not benign_reason("RuntimeError: Unable to JIT load the async_io op due to it not being compatible due to "
                             "hardware/software issue.")


def test_numexpr_thread_cap_line_is_benign_only_when_it_ends_the_line():
    from envcheck.kb.match import benign_reason

    # numexpr prints it without a newline (module.cpp), so the next record can be glued to it (written for this test)
    line = 'Error.  nthreads cannot be larger than environment variable "NUMEXPR_MAX_THREADS" (64)'
    assert benign_reason(line) and benign_reason(line + "\n")
    assert not benign_reason(line + "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB")


def test_a_sentence_that_names_log_levels_is_prose_not_a_record():
    # written for this test: a report that talks of INFO / WARNING lines is the writer's words, read as prose
    from envcheck.kb.match import prose_lines

    said = b"Our logs are full of INFO and WARNING lines from CANN, and the disk fills up within a day.\n"
    record = b"2025-01-01 10:00:00,123 - root - INFO - loading the model from the shared disk now\n"
    assert [t for _, t in prose_lines(said, 0, len(said))] == [said.decode().strip()]
    assert prose_lines(record, 0, len(record)) == []


def test_the_level_word_check_reads_only_a_line_head():
    # a long run of lower-case words before a level word: one pass over the head, never a search that backtracks
    # over every split of the words (a first regex for this took 13 s on 600 characters)
    from envcheck.kb.match import talks_of_levels

    assert not talks_of_levels("ab " * 20000 + ": INFO")
    assert talks_of_levels("our logs are full of INFO lines " + "ab " * 20000)
