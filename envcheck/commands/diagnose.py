"""`envcheck diagnose PATH... | -`: scan error output and logs, name the matching kb pitfalls."""
from __future__ import annotations

import argparse

EPILOG = """\
PATH may be a file, a directory (searched recursively), a gzip file (detected by its magic
bytes, e.g. rotated *.log.gz) or '-' for standard input (paste a traceback, end with Ctrl-D).
With no PATH the CANN log directory is scanned: $ASCEND_PROCESS_LOG_PATH, else ~/ascend/log.
Binary files are skipped with a note; lines longer than --max-line bytes are cut; a pasted
(small) input has its hard-wrapped lines joined first.

Each entry says how it was found: matched (a kb pattern), code (an error code the dictionary or
the entry links to it; `envcheck explain CODE` says what a code means), versions (the versions the
input states, e.g. "torch 2.12.0" / "torch_npu 2.8.0.post1" / "CANN 8.0.RC1" or a pip list, fail a
compatibility check against the matrix, as `envcheck matrix check` would; shown with why), message
(an error line torch_npu, op-plugin, vllm-ascend, HCCL or MindSpore prints, which the message catalogue links to the
entry) or likely
(closest to the error lines when nothing specific matched). Errors rank above warnings, known-harmless warnings
are marked benign and come last, and how-to entries never above a diagnosis. Given several ranks
(a directory of per-rank logs or plog folders, or one log with [rankN]: prefixes) it names the
rank that failed first and the ranks that only timed out waiting for it.

Exit status: 1 a kb entry matched, or an error code or error line was found (a problem was
found), 0 nothing matched, 2 usage or input error (missing path, a FIFO or device, bad flag) or
an input that could not be read to its end (truncated .gz, unreadable directory: what was read
is still reported).
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from envcheck.commands import _options as opt

    opt.report(p, select=False)
    p.epilog = EPILOG
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("paths", nargs="*", metavar="PATH", help="files, directories, *.gz, or - for stdin")
    p.add_argument("--kb", metavar="DIR", default=None, help="use another kb directory (default: the shipped kb)")
    p.add_argument("--max-hits", type=int, default=3, metavar="N", help="matching lines shown per entry (default 3)")
    p.add_argument("--time-budget", type=float, default=300.0, metavar="SEC",
                   help="stop scanning after SEC seconds and report what was found (default 300)")
    p.add_argument("--max-line", type=int, default=64 * 1024, metavar="BYTES",
                   help="cut lines longer than this (default 65536)")
    p.add_argument("--engine", choices=("auto", "re2", "re"), default="auto",
                   help="regex engine: re2 (fast, linear time; default when installed) or Python re")


def run(args: argparse.Namespace) -> int:
    from envcheck.commands._output import emit
    from envcheck.plan.stated import diagnose_report

    result = diagnose_report(list(args.paths), kb_dir=args.kb, engine=args.engine, max_hits=args.max_hits,
                      max_line=args.max_line, time_budget=args.time_budget)
    return emit(result, args)
