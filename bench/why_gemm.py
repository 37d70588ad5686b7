"""Launch the GEMM `best` kernel and cuBLAS once each at 4096^3 and 1024^3 (run under ncu with the
SpeedOfLight, Occupancy, LaunchStats, WarpStateStats and shared-memory sections): what bounds each.

    ncu --section ... --csv python3 -m bench.why_gemm      (bench/device_run8.sh)
    python -m bench.why_gemm --record NCU_CSV DATE          -> data/h200_gemm_why.json
"""
from __future__ import annotations

import numpy as np


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
    import json
    from pathlib import Path
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
    json.dump(doc, open(Path(__file__).resolve().parent.parent / "data" / "h200_gemm_why.json", "w"), indent=1)


if __name__ == "__main__":
    import sys
    if sys.argv[1:2] == ["--record"]:
        record(sys.argv[2], sys.argv[3])
    else:
        main()
