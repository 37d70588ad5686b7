"""Launch the GEMM `best` kernel and cuBLAS once each at 4096^3 and 1024^3 (run under ncu with the
SpeedOfLight, Occupancy, LaunchStats, WarpStateStats and shared-memory sections): what bounds each.

    ncu --section ... --csv python3 -m bench.why_gemm      (bench/device_run8.sh)
    python -m bench.why_gemm --record NCU_CSV DATE          -> data/h200_gemm_why.json
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent.parent / "data"


STALL_KERNELS = ("g64p8x4k32a", "i64p8x4k32a", "i128p8k16a")    # best, best interleaved, 128x128 of 8x8
STALLS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle", "long_scoreboard",
          "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction", "not_selected", "selected",
          "short_scoreboard", "sleeping", "tex_throttle", "wait")
STALL_METRICS = [f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in STALLS] + [
    "smsp__issue_active.avg.pct_of_peak_sustained_active", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smsp__inst_executed_op_shared_ld.sum", "smsp__warps_active.avg.per_cycle_active", "gpu__time_duration.sum",
    "launch__registers_per_thread", "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem"]


def launch_4096(modules) -> None:
    """Run each compiled GEMM module (an iterable, built lazily), then cuBLAS, once each at 4096^3 on fresh
    inputs: what ncu profiles."""
    import torch
    import tvm
    from kernels.ops import OPS
    torch.backends.cuda.matmul.allow_tf32 = False
    s = {"M": 4096, "N": 4096, "K": 4096}
    xs = OPS["gemm"].random_inputs(s, np.random.default_rng(0))
    dev = tvm.cuda(0)
    args = [tvm.runtime.tensor(x, dev) for x in xs] + [tvm.runtime.tensor(np.zeros((4096, 4096), "float32"), dev)]
    for mod in modules:
        mod["main"](*args)
        dev.sync()
    a, b = (torch.from_numpy(x).cuda() for x in xs)
    torch.matmul(a, b)
    torch.cuda.synchronize()


def stalls(names=STALL_KERNELS) -> None:
    """Launch GEMM candidates (bench/tuning.py names) and cuBLAS once each at 4096^3 (under ncu --metrics
    STALL_METRICS)."""
    from kernels import build
    from kernels.knobs import resolve
    from .tuning import CANDIDATES
    s = {"M": 4096, "N": 4096, "K": 4096}
    launch_4096(build.compiled("gemm", tuple(s.items()), resolve("gemm", "cuda", s, None, CANDIDATES["gemm"][n]),
                               "cuda")[1] for n in names)
    print("launched", *names, "and cuBLAS at 4096^3", flush=True)


def main() -> None:
    import torch
    import tvm
    from kernels import build
    from kernels.knobs import preset
    from kernels.ops import OPS
    torch.backends.cuda.matmul.allow_tf32 = False
    for n in (4096, 1024):
        s = {"M": n, "N": n, "K": n}
        xs = OPS["gemm"].random_inputs(s, np.random.default_rng(0))
        _, mod, _ = build.compiled("gemm", tuple(s.items()), preset("gemm", "cuda", "best", s), "cuda")
        dev = tvm.cuda(0)
        args = [tvm.runtime.tensor(x, dev) for x in xs] + [tvm.runtime.tensor(np.zeros((n, n), "float32"), dev)]
        mod["main"](*args)
        dev.sync()
        a, b = (torch.from_numpy(x).cuda() for x in xs)
        torch.matmul(a, b)
        torch.cuda.synchronize()
        print(f"launched best and cuBLAS at {n}^3", flush=True)


KEEP = ("Duration", "Compute (SM) Throughput", "Memory Throughput", "Achieved Occupancy", "Theoretical Occupancy",
        "Registers Per Thread", "Block Size", "Grid Size", "Waves Per SM", "Warp Cycles Per Issued Instruction",
        "Block Limit Registers", "Block Limit Shared Mem")


def record(ncu_csv: str, date: str) -> None:
    from .ncu_data import rows
    kernels: dict = {}
    for r in rows(open(ncu_csv).read()):
        kernels.setdefault(int(r["ID"]), {"kernel": r["Kernel Name"]})[r["Metric Name"]] = \
            r["Metric Value"].replace(",", "")
    out = []
    for i, k in sorted(kernels.items()):
        n = 4096 if i < 2 else 1024                  # launch order of main(): best, cuBLAS at 4096, then 1024
        out.append({"shape": {"M": n, "N": n, "K": n}, "who": "best" if "main_kernel" in k["kernel"] else "cuBLAS",
                    "kernel": k["kernel"], **{m: float(k[m]) for m in KEEP if m in k}})
    doc = {"device": "NVIDIA H200", "date": date, "command": "bash bench/device_run8.sh (ncu --clock-control none "
           "--section SpeedOfLight,Occupancy,LaunchStats,WarpStateStats python3 -m bench.why_gemm)",
           "units": "Duration ns; throughputs and occupancy % of peak", "kernels": out}
    json.dump(doc, open(DATA / "h200_gemm_why.json", "w"), indent=1)


def _launched(csv: str, command: str) -> list[dict]:
    """One entry per kernel of an ncu csv over stalls()'s launches, named in launch order (the candidates the
    command gave after --stalls, or bench.kmajor's after --launch, then cuBLAS)."""
    from .ncu_data import rows
    named = re.search(r"--(?:stalls|launch) ([\w,-]+)", command)
    names = named.group(1).split(",") if named else list(STALL_KERNELS)
    kernels: dict = {}
    for r in rows(open(csv).read()):
        kernels.setdefault(int(r["ID"]), {"kernel": r["Kernel Name"]})[r["Metric Name"]] = \
            float(r["Metric Value"].replace(",", ""))
    return [{"who": names[i] if i < len(names) else "cuBLAS", **k} for i, k in sorted(kernels.items())]


def record_stalls(runs: list[tuple[str, str, str]]) -> None:
    """(ncu csv, date, command) per device run -> appended to data/h200_gemm_stalls.json.
        python -m bench.why_gemm --record-stalls NCU_CSV DATE COMMAND"""
    path = DATA / "h200_gemm_stalls.json"
    out = json.load(open(path))["kernels"] if path.exists() else []
    for csv, date, command in runs:
        out += [{"who": k.pop("who"), "date": date, "command": command, **k} for k in _launched(csv, command)]
    doc = {"device": "NVIDIA H200", "shape": {"M": 4096, "N": 4096, "K": 4096},
           "units": "stall reasons: warps stalled per issued instruction; pct: % of peak; time: ns",
           "metrics": STALL_METRICS, "kernels": out}
    json.dump(doc, open(path, "w"), indent=1)


def _num(x: str) -> float:
    """An ncu export's number ("1,234", or empty for none)."""
    return float(x.replace(",", "") or 0)


def pc_sampling(csv_text: str) -> list[dict]:
    """Per kernel of an ncu source-page export (ncu -i REP --page source --csv --print-source sass): the
    warp-state samples of its longest loop (the backward branch spanning the most FFMAs) by opcode, and the
    instructions with the most dispatch-stall samples."""
    import csv
    import io
    from collections import Counter, defaultdict
    out = []
    for part in re.split(r'^"Kernel Name",', csv_text, flags=re.M)[1:]:
        name, body = part.split("\n", 1)
        rows = list(csv.DictReader(io.StringIO(body)))
        ops = [(r["Source"].split() or ["?"]) for r in rows]
        ops = [[w for w in o if not w.startswith("@")] or ["?"] for o in ops]
        opcode = [o[0].split(".")[0] for o in ops]
        addr = [int(r["Address"], 16) for r in rows]
        loops = []
        for i, o in enumerate(ops):
            m = re.search(r"0x([0-9a-f]+)", " ".join(o[1:])) if opcode[i] == "BRA" else None
            j = addr.index(int(m.group(1), 16)) if m and int(m.group(1), 16) in addr else i
            if j < i:                               # a backward branch: the loop [j, i]
                loops.append((sum(opcode[k] == "FFMA" for k in range(j, i + 1)), j, i))
        _, j, i = max(loops)
        reasons = [c for c in rows[0] if c.startswith("stall_") and not c.endswith("(Not Issued)")]
        by_op: dict = defaultdict(Counter)
        count = Counter(opcode[j:i + 1])
        for k in range(j, i + 1):
            for c in reasons:
                by_op[c][opcode[k]] += _num(rows[k][c])
        total = {c: sum(v.values()) for c, v in by_op.items()}
        top = sorted(range(j, i + 1), key=lambda k: -_num(rows[k]["stall_dispatch"]))[:12]
        out.append({"kernel": name.strip('",'), "loop_instructions": i - j + 1, "loop_opcodes": dict(count.most_common()),
                    "loop_samples": {c: int(v) for c, v in total.items() if v},
                    "dispatch_share_by_opcode": {o: round(v / max(total["stall_dispatch"], 1), 4)
                                                 for o, v in by_op["stall_dispatch"].most_common(8)},
                    "dispatch_per_instruction_by_opcode": {o: round(v / count[o], 1)
                                                           for o, v in by_op["stall_dispatch"].most_common(8)},
                    "top_dispatch_instructions": [{"offset": addr[k] - addr[j], "sass": rows[k]["Source"].strip(),
                                                   "dispatch_samples": int(_num(rows[k]["stall_dispatch"]))}
                                                  for k in top]})
    return out


def record_pc_sampling(csv: str, date: str, command: str) -> None:
    """Where best's and cuBLAS's warps stall in their k loops, by opcode (bench/device_run24.sh) ->
    data/h200_gemm_pc_sampling.json.     python -m bench.why_gemm --record-pc-sampling SRC_CSV DATE COMMAND"""
    doc = {"device": "NVIDIA H200", "shape": {"M": 4096, "N": 4096, "K": 4096}, "date": date, "command": command,
           "units": "PC-sampling samples (Nsight Compute SourceCounters) summed over the loop's instructions",
           "kernels": pc_sampling(open(csv).read())}
    json.dump(doc, open(DATA / "h200_gemm_pc_sampling.json", "w"), indent=1)


def record_l2(csv: str, date: str, command: str) -> None:
    """The L2 hit rate and DRAM reads of best and its block groupings (bench/device_run18.sh) ->
    data/h200_gemm_l2.json.     python -m bench.why_gemm --record-l2 NCU_CSV DATE COMMAND"""
    doc = {"device": "NVIDIA H200", "shape": {"M": 4096, "N": 4096, "K": 4096}, "date": date, "command": command,
           "units": "hit rate %, DRAM bytes, time ns", "kernels": _launched(csv, command)}
    json.dump(doc, open(DATA / "h200_gemm_l2.json", "w"), indent=1)


if __name__ == "__main__":
    import sys
    if sys.argv[1:2] == ["--record"]:
        record(sys.argv[2], sys.argv[3])
    elif sys.argv[1:2] == ["--record-l2"]:
        record_l2(*sys.argv[2:5])
    elif sys.argv[1:2] == ["--record-pc-sampling"]:
        record_pc_sampling(*sys.argv[2:5])
    elif sys.argv[1:2] == ["--record-stalls"]:
        record_stalls([tuple(sys.argv[2:5])])
    elif sys.argv[1:2] == ["--stalls"]:
        stalls(*(sys.argv[2:3] and [sys.argv[2].split(",")]))
    elif sys.argv[1:2] == ["--stall-metrics"]:
        print(",".join(STALL_METRICS))
    else:
        main()
