"""How much the GEMM goal ratios move between measurements: `best` and cuBLAS timed alternately, ten rounds of
seven repeats each, in one process, at 4096^3 and 1024^3.

    python3 -m bench.ratio_spread OUT_DIR     (on the GPU: bench/device_run19.sh) -> OUT_DIR/ratio_spread.json
"""
from __future__ import annotations

import json
import sys
import time

import numpy as np

ROUNDS = 10


def measure(out_dir: str) -> None:
    import tvm
    from kernels import build
    from kernels.knobs import knobs_text, preset
    from kernels.ops import OPS
    doc = {"device": build.device_name("cuda"), "versions": build.versions(),
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "command": "bash bench/device_run19.sh (python3 -m bench.ratio_spread)",
           "method": f"{ROUNDS} rounds; each round times best (TVM time_evaluator, 7 repeats of >= 10 ms) and then "
                     "the reference (7 repeats of >= 10 ms of back-to-back CUDA graph replays); ratio = reference "
                     "median / best median of the round", "shapes": []}
    for n in (4096, 1024):
        s = {"M": n, "N": n, "K": n}
        k = preset("gemm", "cuda", "best", s)
        _, mod, _ = build.compiled("gemm", tuple(s.items()), k, "cuda")
        xs = OPS["gemm"].random_inputs(s, np.random.default_rng(0))
        ref = build.reference_timer("gemm", "cuda", xs)
        dev = build._tvm_dev("cuda")
        args = [tvm.runtime.tensor(x, dev) for x in xs]
        args.append(tvm.runtime.tensor(np.zeros(OPS["gemm"].output_shape(s), "float32"), dev))
        best_ms, ref_ms = [], []
        for _ in range(ROUNDS):
            best_ms.append(float(np.median(build._time_tvm(mod, dev, args, 7))))
            ref_ms.append(float(np.median(build._time_host(ref[1], 7, ref[2]))))
        ratios = [r / b for r, b in zip(ref_ms, best_ms)]
        doc["shapes"].append({"shape": s, "knobs": knobs_text(k), "reference": ref[0], "best_ms": best_ms,
                              "ref_ms": ref_ms, "ratios": ratios, "median_ratio": float(np.median(ratios)),
                              "min_ratio": min(ratios), "max_ratio": max(ratios)})
        print(n, f"ratio median {np.median(ratios):.4f}, range {min(ratios):.4f}-{max(ratios):.4f}", flush=True)
    json.dump(doc, open(f"{out_dir}/ratio_spread.json", "w"), indent=1)


if __name__ == "__main__":
    measure(sys.argv[1])
