"""In-block split-K for GEMM, tried on the H200 outside the knobs (it lost, so no knob offers it).

Two warp groups share each block tile: rfactor splits every k tile of `kt` in two halves, group g sums its
half of each into its own register patch (the same 8x4 patches, cp.async pipeline and full unroll as `best`),
the G partial tiles meet in shared memory (C_rf, which TVM's StorageRewrite lays over the B tile's space) and
each thread adds up 4 rows x 4 columns of them. At 1024^3 this doubles the warps per SM (15.5 instead of 7.75),
which is what the 1.2x goal seemed to need.

    python3 -m bench.splitk OUT_DIR        (on the GPU: bench/device_run17.sh) -> OUT_DIR/splitk.json
    python -m bench.splitk --source G=2 KT=32 > k.cu     (the CUDA source of one variant, anywhere)
"""
from __future__ import annotations

import json
import sys
import time

import tvm
from tvm import te
from tvm.s_tir import Schedule

from kernels import lowering
from kernels.ops import OPS
from kernels.schedules._common import Steps
from kernels.schedules.cuda import _cooperative, annotate_pipeline

VARIANTS = {          # name -> split-K schedule parameters (group count G, block k tile KT, tile, patch)
    "sk2k32": dict(G=2, KT=32),
    "sk2k16": dict(G=2, KT=16),
    "sk2p4k32": dict(G=2, KT=32, PM=4, PN=4),
    "sk2t64x32": dict(G=2, KT=32, TN=32),
}


def schedule(n: int, G: int = 2, KT: int = 32, TM: int = 64, TN: int = 64, PM: int = 8, PN: int = 4,
             stages: int = 2) -> Schedule:
    s = {"M": n, "N": n, "K": n}
    sch = Schedule(tvm.IRModule({"main": te.create_prim_func(OPS["gemm"].define(s))}))
    blk = sch.get_sblock("C")
    _, _, k = sch.get_loops(blk)
    _, kg, _ = sch.split(k, [None, G, KT // G])
    rf = sch.rfactor(kg, 0)                      # C_rf[g, i, j]: group g's partial sums
    # C = sum over g of C_rf: each thread adds 4 rows x 4 columns, in registers, and stores float4s
    i, j, g = sch.get_loops(blk)
    bi, ii = sch.split(i, [None, TM])
    bj, jj = sch.split(j, [None, TN])
    sch.reorder(bi, bj, ii, jj, g)
    bx = sch.fuse(bi, bj)
    sch.bind(bx, "blockIdx.x")
    threads = G * (TM // PM) * (TN // PN)
    cols = TN // 4
    it, io = sch.split(ii, [threads // cols, TM // (threads // cols)])
    jt, jv = sch.split(jj, [cols, 4])
    sch.reorder(it, jt, io, jv, g)
    t = sch.fuse(it, jt)
    sch.bind(t, "threadIdx.x")
    acc = sch.cache_write(blk, 0, "local")
    sch.reverse_compute_at(acc, t)
    sch.vectorize(sch.get_loops(acc)[-1])
    sch.set_scope(rf, 0, "shared")
    sch.compute_at(rf, bx)
    # the partial sums: best's schedule, with the group index outermost in threadIdx.x
    g2, i2, j2, ko, ki = sch.get_loops(rf)[1:]
    ti, pi = sch.split(i2, [TM // PM, PM])
    tj, pj = sch.split(j2, [TN // PN, PN])
    sch.reorder(g2, ti, tj, ko, ki, pi, pj)
    tx = sch.fuse(g2, ti, tj)
    sch.bind(tx, "threadIdx.x")
    fills = []
    for idx in (0, 1):
        sh = sch.cache_read(rf, idx, "shared")
        sch.compute_at(sh, ko)
        fills.append(sch.get(sh).name_hint)
        _cooperative(sch, sh, 3, threads, 4, Steps(), fills[-1])     # all threads copy float4s (bx, tx, ko above)
    for idx in (0, 1):
        sch.compute_at(sch.cache_read(rf, idx, "local"), ki)
    sch.reverse_compute_at(sch.cache_write(rf, 0, "local"), tx)
    sch.decompose_reduction(rf, ko)
    annotate_pipeline(sch, ko, fills, stages, async_copy=True)
    sch.annotate(bx, "pragma_auto_unroll_max_step", 4096)
    sch.annotate(bx, "pragma_unroll_explicit", 1)
    return sch


def experiment_doc(command: str, **extra) -> dict:
    """The header of a GPU experiment's data file (GEMM variants outside the knobs)."""
    from kernels import build
    return {"device": build.device_name("cuda"), "versions": build.versions(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command": command, **extra,
            "units": "median_ms, spread_ms (IQR) of 7 repeats",
            "shapes": []}         # not "rows": the Benchmarks page reads tables of knob runs, and these have none


def gemm_row(n: int) -> tuple[dict, dict]:
    """An n^3 GEMM shape and its data row, with cuBLAS timed (7 repeats, median) in this process."""
    import numpy as np
    from kernels import build
    s = {"M": n, "N": n, "K": n}
    xs = OPS["gemm"].random_inputs(s, np.random.default_rng(0))
    ref = build.reference_timer("gemm", "cuda", xs)
    ts = build._time_host(ref[1], 7, ref[2])
    return s, {"shape": s, "reference": {"name": ref[0], "median_ms": float(np.median(ts))}, "runs": {}}


def measure(out_dir: str) -> None:
    """Each variant against `best` and cuBLAS at 1024^3 and 4096^3, in one process, verified."""
    from kernels import build
    from kernels.knobs import preset
    doc = experiment_doc("bash bench/device_run17.sh (python3 -m bench.splitk)", variants=VARIANTS)
    for n in (1024, 4096):
        s, row = gemm_row(n)
        mods = {"best": build.compiled("gemm", tuple(s.items()), preset("gemm", "cuda", "best", s), "cuda")[1]}
        for name, kw in VARIANTS.items():
            mods[name] = lowering.compile(schedule(n, **kw).mod, "cuda").jit()
        for name, mod in mods.items():
            med, spread, rel = build.time_module("gemm", s, mod, "cuda", 7)
            row["runs"][name] = {"median_ms": med, "spread_ms": spread, "rel_err": rel, "ok": rel < build.TOLERANCE}
        doc["shapes"].append(row)
        print(n, " ".join(f"{k}={r['median_ms']:.4f}({row['reference']['median_ms'] / r['median_ms']:.3f}x)"
                          for k, r in row["runs"].items()), flush=True)
    json.dump(doc, open(f"{out_dir}/splitk.json", "w"), indent=1)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--source"]:
        kw = {k: int(v) for k, v in (a.split("=") for a in sys.argv[2:])}
        print(lowering.compile(schedule(kw.pop("n", 1024), **kw).mod, "cuda").mod.imports[0].inspect_source())
    else:
        measure(sys.argv[1])
