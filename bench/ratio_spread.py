"""How much the GEMM goal ratios move between measurements: `best` and cuBLAS timed alternately, ten rounds of
seven repeats each, in one process, at 4096^3 and 1024^3 (or --shapes MxNxK,...). With --variant NAME=KNOBS,
best with those knobs changed is timed in every round too, right after best, so the two can be compared round
by round.

    python3 -m bench.ratio_spread OUT_DIR [--variant NAME=KNOBS --command CMD --shapes MxNxK,... --rounds R]
        (on the GPU: bench/device_run19.sh, bench/device_run23.sh, 30, 34) -> OUT_DIR/ratio_spread.json
"""
from __future__ import annotations

import json
import sys
import time

import numpy as np

ROUNDS = 10
COMMAND = "bash bench/device_run19.sh (python3 -m bench.ratio_spread)"


def measure(out_dir: str, variant: str | None = None, command: str = COMMAND,
            shapes=((4096,) * 3, (1024,) * 3), rounds: int = ROUNDS) -> None:
    import tvm
    from kernels import build
    from kernels.knobs import knobs_text, preset, resolve
    from kernels.ops import OPS
    doc = {"device": build.device_name("cuda"), "versions": build.versions(),
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "command": command,
           "method": f"{rounds} rounds; each round times best (TVM time_evaluator, 7 repeats of >= 10 ms)"
                     f"{', then the variant (the same way)' if variant else ''} and then the reference (7 repeats "
                     "of >= 10 ms of back-to-back CUDA graph replays); ratio = reference median / best median of "
                     "the round", "shapes": []}
    vname, vknobs = variant.split("=", 1) if variant else (None, None)
    for m, n, kk in shapes:
        s = {"M": m, "N": n, "K": kk}
        k = preset("gemm", "cuda", "best", s)
        _, mod, _ = build.compiled("gemm", tuple(s.items()), k, "cuda")
        rel = build.time_module("gemm", s, mod, "cuda", 1)[2]             # verified on fresh inputs first
        xs = OPS["gemm"].random_inputs(s, np.random.default_rng(0))
        ref = build.reference_timer("gemm", "cuda", xs)
        dev = build._tvm_dev("cuda")
        args = [tvm.runtime.tensor(x, dev) for x in xs]
        args.append(tvm.runtime.tensor(np.zeros(OPS["gemm"].output_shape(s), "float32"), dev))
        if vname:
            kv = resolve("gemm", "cuda", s, "best", vknobs)
            _, vmod, _ = build.compiled("gemm", tuple(s.items()), kv, "cuda")
            vrel = build.time_module("gemm", s, vmod, "cuda", 1)[2]       # verified on fresh inputs first
        best_ms, var_ms, ref_ms = [], [], []
        for _ in range(rounds):
            best_ms.append(float(np.median(build._time_tvm(mod, dev, args, 7))))
            if vname:
                var_ms.append(float(np.median(build._time_tvm(vmod, dev, args, 7))))
            ref_ms.append(float(np.median(build._time_host(ref[1], 7, ref[2]))))
        ratios = [r / b for r, b in zip(ref_ms, best_ms)]
        row = {"shape": s, "knobs": knobs_text(k), "rel_err": rel, "ok": rel < build.TOLERANCE,
               "reference": ref[0], "best_ms": best_ms,
               "ref_ms": ref_ms, "ratios": ratios, "median_ratio": float(np.median(ratios)),
               "min_ratio": min(ratios), "max_ratio": max(ratios)}
        line = f"ratio median {np.median(ratios):.4f}, range {min(ratios):.4f}-{max(ratios):.4f}"
        if vname:
            vr = [r / v for r, v in zip(ref_ms, var_ms)]
            gain = [b / v for b, v in zip(best_ms, var_ms)]
            row["variant"] = {"name": vname, "knobs": knobs_text(kv), "rel_err": vrel, "ok": vrel < build.TOLERANCE,
                              "ms": var_ms, "ratios": vr, "median_ratio": float(np.median(vr)),
                              "min_ratio": min(vr), "max_ratio": max(vr), "speedup_over_best": gain,
                              "median_speedup": float(np.median(gain)), "rounds_faster": sum(g > 1 for g in gain)}
            line += (f"; {vname} median {np.median(vr):.4f}, range {min(vr):.4f}-{max(vr):.4f}, "
                     f"{np.median(gain):.4f}x best's speed, faster in {row['variant']['rounds_faster']} of {rounds}")
        doc["shapes"].append(row)
        print(f"{m}x{n}x{kk}", line, flush=True)
    json.dump(doc, open(f"{out_dir}/ratio_spread.json", "w"), indent=1)


if __name__ == "__main__":
    import argparse
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--variant", help="NAME=KNOBS: best with these knobs changed, timed in every round too")
    p.add_argument("--command", default=COMMAND)
    p.add_argument("--shapes", default="4096x4096x4096,1024x1024x1024", help="MxNxK,...")
    p.add_argument("--rounds", type=int, default=ROUNDS)
    a = p.parse_args()
    measure(a.out, a.variant, a.command, [tuple(map(int, x.split("x"))) for x in a.shapes.split(",")], a.rounds)
