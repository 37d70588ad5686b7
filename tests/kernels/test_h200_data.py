"""What only the GPU can show was measured on the H200 and committed as data; these CPU tests check that
data: provenance, verification, and that it describes the schedules the code ships today."""
from __future__ import annotations

import json
import statistics
from dataclasses import replace
from pathlib import Path

import pytest

from kernels import build
from kernels.knobs import BEST_FEW_OUTPUTS, GemmCuda, fit, knobs_text, parse_knobs, preset
from kernels.ops import OPS

DATA = Path(__file__).resolve().parents[2] / "data"


def _eight_by_four(s):
    """The 64x64 tiles of 8x4 patches: best below two blocks per SM, and best at every size until transpose_a
    (the data of passes 9-11 measured it as best)."""
    return fit(GemmCuda(**BEST_FEW_OUTPUTS[("gemm", "cuda")][1]), s)


def _bench():
    return json.load(open(DATA / "h200_bench.json"))


def _made_by(d: dict, plan: str, *runs: str) -> bool:
    """The record's command names the plan that reproduces it (bench/plans/PLAN.toml), and the device run's own
    command, kept under `originally`, names the runs."""
    return (d["command"].startswith(f"python -m bench.run bench/plans/{plan}.toml")
            and all(r in d.get("originally", "") for r in runs))


def test_benchmark_data_names_device_date_versions_and_command():
    b = _bench()
    assert b["device"] == "NVIDIA H200" and b["started"] and "tvm 0.27" in b["versions"] and b["command"]


def test_every_best_run_verified_and_uses_the_shipped_best_preset():
    for row in _bench()["rows"]:
        run = row["runs"][row["best_run"]]
        assert run["ok"] and run["rel_err"] < 1e-4
        # parsed into today's knob class: a knob added since the run (min_blocks) takes its default
        assert parse_knobs(row["op"], "cuda", run["knobs"]) == preset(row["op"], "cuda", "best", row["shape"])


def test_every_preset_run_on_the_h200_verified():
    for row in _bench()["rows"]:
        for name in ("baseline", "naive", "seed", "best"):
            assert row["runs"][name]["ok"], (row["op"], row["shape"], name)


def test_shared_vs_local_recorded_for_gemm_and_conv1d_at_both_sizes():
    rows = [r for r in _bench()["rows"] if r["op"] in ("gemm", "conv1d")]
    assert len(rows) == 4
    for r in rows:
        assert {"seed-local", "seed-shared"} <= set(r["runs"]), r["shape"]


def test_correctness_sweep_on_the_h200_passed_everything_it_ran():
    s = json.load(open(DATA / "h200_sweep.json"))
    assert s["device"] == "NVIDIA H200" and s["date"] and s["command"]
    assert s["passed"] == s["done"] and s["done"] > 0
    for op in ("gemm", "conv1d"):                       # the course's GEMM and conv1d shapes, every preset
        assert s["by_op"][op]["run"] == s["by_op"][op]["planned"]


def test_gemm_sweep_re_run_with_the_presets_as_they_ship():
    """The GEMM presets changed after the sweep above (best: the transposed 128x128 tiles where the busiest SM
    takes less time with them, pad_tiles where the tiles do not divide M or N); every course shape x preset ran
    again (run 42, bench/plans/h200_sweep_gemm.toml), each with the knobs it resolved to, and those are today's presets."""
    from bench.shapes import course_shapes
    s = json.load(open(DATA / "h200_sweep_gemm.json"))
    assert s["device"] == "NVIDIA H200" and s["date"] and _made_by(s, "h200_sweep_gemm", "device_run42")
    assert s["passed"] == s["done"] == s["jobs"] == len(s["rows"])
    rows = {(json.dumps(r["shape"], sort_keys=True), r["preset"]): r for r in s["rows"]}
    padded = split = 0
    for shape in course_shapes("gemm"):
        for name in ("baseline", "naive", "seed", "best"):
            r = rows[(json.dumps(shape, sort_keys=True), name)]
            assert r["ok"] and r["rel_err"] < 1e-4
            now = preset("gemm", "cuda", name, shape)
            split += now.k_blocks > 1       # best's split-K rule came later (gemm_k_blocks); the rest is the same
            ran, want = parse_knobs("gemm", "cuda", r["knobs"]), replace(now, k_blocks=1)
            if (shape["K"] % 4 == 0) != (shape["N"] % 4 == 0):     # so did vector per operand (2026-12-07): one
                assert ran.vector <= now.vector                     # aligned operand now copies wide
                want = replace(want, vector=ran.vector)
            assert ran == want, (shape, name)
            padded += "pad_tiles=true" in r["knobs"]
    assert padded == 8          # best at the 8 course shapes whose M or N its tiles do not divide
    assert split == 6           # M or N of 1, 10, 100 with K=1024: 16 output tiles of 64x64, K split in 4


def _pad_runs():
    d = json.load(open(DATA / "h200_pad_tiles.json"))
    assert d["device"] == "NVIDIA H200" and "rounds" in d["method"]
    for r in d["runs"]:
        assert r["date"] and _made_by(r, "h200_pad_tiles")
        assert f"device_run{r['run']}" in r["originally"] or "KERNEL_LAB_PAD_K" in r["originally"]
        for row in r["shapes"]:
            assert row["ok"] and row["variant"]["ok"], (r["run"], row["shape"])
            assert len(row["best_ms"]) == len(row["ref_ms"]) == len(row["variant"]["ms"]) == 5
    return d["runs"]


def test_pad_tiles_makes_best_faster_in_every_round_where_the_tiles_do_not_divide():
    """Run 37 (bench/plans/h200_pad_tiles.toml step 5): best as it ships against the same knobs with pad_tiles=false (each multiply-add of a
    thread at the edge guarded), at eight shapes; the guarded kernel lost every round at every shape, by 1.7-2.5x
    with the 8x4 tiles. Since then best takes the other tiling at three of them (gemm_big_tiles_slower,
    run 42), padded as well; the padding was measured on both tilings."""
    run = _pad_runs()[-1]
    assert run["run"] == 37 and len(run["shapes"]) == 8
    flipped = []
    for row in run["shapes"]:
        s = row["shape"]
        k, now = parse_knobs("gemm", "cuda", row["knobs"]), preset("gemm", "cuda", "best", s)
        if k != now:
            flipped.append((s["M"], s["N"], s["K"]))
            assert now.tile_m != k.tile_m and now.pad_tiles
        assert k.pad_tiles and (s["M"] % k.tile_m or s["N"] % k.tile_n)
        assert parse_knobs("gemm", "cuda", row["variant"]["knobs"]) == replace(k, pad_tiles=False)
        assert row["variant"]["rounds_faster"] == 0 and row["variant"]["median_speedup"] < 0.97, s
        if k.tile_m == 64:
            assert row["variant"]["median_speedup"] < 0.65, s
    assert sorted(flipped) == [(4000, 4000, 4000), (4000, 6000, 1000), (10000, 1024, 1024)]


def test_interleave_at_the_edge_beat_dropping_it_in_every_round():
    """Run 34 (bench/plans/h200_pad_tiles.toml step 1): before, a tile that did not divide N dropped B's interleaved layout (3.84 ms at
    4000^3); padding the layout's last tile kept it (3.18 ms)."""
    run = _pad_runs()[0]
    assert run["run"] == 34 and "interleave=false" in run["originally"]
    for row in run["shapes"]:
        assert "interleave=true" in row["knobs"] and "interleave=false" in row["variant"]["knobs"]
        assert row["variant"]["rounds_faster"] == 0 and row["variant"]["median_speedup"] < 0.85, row["shape"]


def test_pad_tiles_leaves_k_unpadded_because_padding_k_measured_slower():
    """Run 36 (bench/plans/h200_pad_tiles.toml steps 3 and 4): padding K as well (the knob's first version) lost to best at 1024x1024x1000 in
    every round, and at 4000x6000x1000 was slower than padding M and N only, which is what the knob does."""
    import statistics
    runs = _pad_runs()
    pad_all, pad_mn = runs[2], runs[3]
    assert "KERNEL_LAB_PAD_K=1" in pad_all["originally"] and "KERNEL_LAB_PAD_K=0" in pad_mn["originally"]
    rows = {json.dumps(r["shape"], sort_keys=True): r for r in pad_all["shapes"]}
    kk = json.dumps({"K": 1000, "M": 1024, "N": 1024})
    assert rows[kk]["variant"]["rounds_faster"] == 0
    for row in pad_mn["shapes"]:
        other = rows[json.dumps(row["shape"], sort_keys=True)]
        if row["shape"]["M"] == 4000:
            assert statistics.median(row["variant"]["ms"]) < 0.97 * statistics.median(other["variant"]["ms"])
    # where only K has a remainder, pad_tiles changes nothing: best keeps it off (fit), the kernel is the same
    s = {"M": 1024, "N": 1024, "K": 1000}
    k = preset("gemm", "cuda", "best", s)
    assert not k.pad_tiles
    assert build.source("gemm", s, k, "cuda", "cuda") == build.source("gemm", s, replace(k, pad_tiles=True),
                                                                      "cuda", "cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("op", list(OPS))
def test_best_runs_and_verifies_on_this_gpu(op):
    if build.target_available("cuda"):
        pytest.skip("no CUDA GPU on this machine")
    s = OPS[op].sizes["speed test"]
    r = build.run(op, s, preset(op, "cuda", "best", s), "cuda", repeat=3)
    assert r.ok and r.median_ms > 0


def test_reference_kernel_times_recorded_beside_best_and_the_launch_floor():
    d = json.load(open(DATA / "h200_ref_kernels.json"))
    assert d["device"] == "NVIDIA H200" and d["date"] and d["command"] and d["smallest_kernel"]["ns"] > 0
    small = next(r for r in d["rows"] if r["op"] == "dwconv2d" and r["shape"]["B"] == 1)
    assert small["best_ns"] < small["reference_ns"]
    # 10x cuDNN at B=1,C=5 would need a kernel shorter than the shortest one this GPU ran at all
    assert small["reference_ns"] / 10 < d["smallest_kernel"]["ns"]


def _tiling_pairs():
    """(shape, ms of the 128x128 tiles, ms of the 64x64 tiles of 8x4) wherever both were timed in one process."""
    d = json.load(open(DATA / "h200_kmajor.json"))
    pairs = [(row["shape"], row["runs"]["kmi128p8k16"]["median_ms"], row["runs"]["best"]["median_ms"])
             for run in d["runs"] for row in run["shapes"] if {"best", "kmi128p8k16"} <= set(row["runs"])]
    for run in json.load(open(DATA / "h200_gemm_tile_rule.json"))["runs"]:
        for row in run["shapes"]:
            best, other = statistics.median(row["best_ms"]), statistics.median(row["variant"]["ms"])
            assert row["ok"] and row["variant"]["ok"]
            big = parse_knobs("gemm", "cuda", row["knobs"]).tile_m == 128
            pairs.append((row["shape"], *((best, other) if big else (other, best))))
    return pairs


def test_best_gemm_is_the_cp_async_pipeline_the_data_measured():
    """Where the busiest SM takes less time with them: 8x8 patches on 128x128 tiles, A transposed, B interleaved;
    elsewhere 8x4 patches on 64x64 tiles. At 14 of the 18 shapes measured with both, best is the faster one; at
    the other four it is within 4% of it (the last rule, by wave fill, lost up to 8.9%)."""
    k = preset("gemm", "cuda", "best", {"M": 4096, "N": 4096, "K": 4096})
    assert k.pipeline and k.async_copy and k.one_barrier and k.transpose_a and k.interleave
    assert (k.tile_m, k.tile_n, k.patch_m, k.patch_n, k.k_split) == (128, 128, 8, 8, 16)
    for n in (1024, 2560, 3072):
        s = {"M": n, "N": n, "K": n}
        k = preset("gemm", "cuda", "best", s)
        assert k == _eight_by_four(s) and not k.transpose_a and (k.patch_m, k.patch_n, k.k_split) == (8, 4, 32)
    pairs = _tiling_pairs()
    assert len(pairs) == 18 and {p[0]["M"] for p in pairs} >= {1024, 1280, 1536, 1792, 2048, 2560, 2816, 3072,
                                                                3328, 3584, 3840, 4000, 4096, 4608, 6144, 10000}
    missed = []
    for shape, big, small in pairs:
        picked = big if preset("gemm", "cuda", "best", shape).tile_m == 128 else small
        if picked > min(big, small):
            missed.append((shape["M"], shape["N"]))
            assert picked < 1.04 * min(big, small), shape
    assert sorted(missed) == [(1024, 10000), (3584, 3584), (6144, 6144), (10000, 1024)]


def test_the_wave_fill_rule_lost_more_where_the_two_rules_differ():
    """The rule before (128x128 tiles wherever their last wave of 2 x 132 blocks was >= 90% full), evaluated on the
    same pairs: 5 misses, up to 8.9% (4000x6000x1000) and 7% (2816^3, held out in run 39)."""
    def waves_rule_big(s):
        blocks = -(-s["M"] // 128) * -(-s["N"] // 128)
        return blocks / (-(-blocks // 264) * 264) >= 0.9
    losses = [(big if waves_rule_big(s) else small) / min(big, small) for s, big, small in _tiling_pairs()]
    assert sum(x > 1 for x in losses) == 5 and max(losses) > 1.08


def test_gemm_bounds_recorded_for_best_and_cublas_at_both_sizes():
    d = json.load(open(DATA / "h200_gemm_why.json"))
    assert d["device"] == "NVIDIA H200" and d["date"] and d["command"]
    got = {(k["shape"]["M"], k["who"]) for k in d["kernels"]}
    assert got == {(4096, "best"), (4096, "cuBLAS"), (1024, "best"), (1024, "cuBLAS")}
    for k in d["kernels"]:
        assert 0 < k["Compute (SM) Throughput"] <= 100 and k["Duration"] > 0


def test_gemm_stall_reasons_recorded_and_what_they_show():
    d = json.load(open(DATA / "h200_gemm_stalls.json"))
    assert d["device"] == "NVIDIA H200"
    for x in d["kernels"]:              # launch__ (registers, occupancy limits) was read from the second run on
        assert all(m in x for m in d["metrics"] if not m.startswith("launch__") or "--stalls " in x["originally"])
    k = {x["who"]: x for x in d["kernels"]}
    assert all(x["date"] and _made_by(x, "h200_gemm_stalls", "device_run") for x in d["kernels"])
    conflicts, wavefronts = ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                             "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")
    issue = "smsp__issue_active.avg.pct_of_peak_sustained_active"
    best = k["g64p8x4k32a"]          # the shipped best: almost no bank conflicts, so interleaving cannot help it
    assert best[conflicts] < 0.001 * best[wavefronts]
    # 8x8 patches on a 64x64 tile do conflict (B's 32-byte strided columns); interleave removes the conflicts...
    assert k["g64p8k16a"][conflicts] > 0.4 * k["g64p8k16a"][wavefronts]
    assert k["i64p8k16a"][conflicts] < 0.001 * k["i64p8k16a"][wavefronts]
    # ... and neither 8x8 kernel catches best: they issue on fewer cycles (registers limit the warps per SM)
    for who in ("g64p8k16a", "i64p8k16a", "i64x128p8k16a", "i128p8k16a"):
        assert k[who]["gpu__time_duration.sum"] > best["gpu__time_duration.sum"]
        assert k[who][issue] < best[issue] < k["cuBLAS"][issue]


def test_launch_bounds_recorded_and_slower_than_best():
    """Pass 9: min_blocks caps the registers so more blocks share an SM; the data says it costs more than it
    gains (more warps resident, but the capped code issues more instructions per multiply-add)."""
    rows = {r["shape"]["M"]: r["runs"] for r in _bench()["rows"] if r["op"] == "gemm"}
    capped = [n for n in rows[4096] if n.endswith(("-mb2", "-mb3", "-mb4", "-mb6", "-mb8"))]
    assert len(capped) >= 6
    for n in capped:
        for m in (4096, 1024):
            assert rows[m][n]["ok"] and rows[m][n]["median_ms"] > rows[m]["best"]["median_ms"], (m, n)
    k = {(x["who"], x["date"][:10]): x for x in json.load(open(DATA / "h200_gemm_stalls.json"))["kernels"]}
    best, mb6 = k[("g64p8x4k32a", "2026-12-03")], k[("g64p8x4k32a-mb6", "2026-12-03")]
    assert mb6["launch__registers_per_thread"] == 80 < best["launch__registers_per_thread"]
    warps, fma = "smsp__warps_active.avg.per_cycle_active", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"
    assert mb6[warps] > best[warps] and mb6[fma] < best[fma]


def test_gemm_per_flop_slower_at_1024_than_at_4096_for_every_schedule():
    """The 1.2x goal at 1024^3 (47.4 us) is within 5% of the fastest 4096^3 rate (best's) with no ramp, and every
    GEMM schedule measured at both sizes loses more than 5% per FLOP at 1024^3 (64x fewer FLOPs): none of
    them reaches the goal, and one would have to lose less at the small size than any of them does."""
    rows = {r["shape"]["M"]: r for r in _bench()["rows"] if r["op"] == "gemm"}
    big, small = rows[4096]["runs"], rows[1024]["runs"]
    both = [n for n in big if "median_ms" in big[n] and "median_ms" in small.get(n, {}) and big[n]["median_ms"] < 5
            and n != "best"]             # (best is another schedule at each size: BEST_FEW_OUTPUTS)
    assert len(both) > 30
    assert min(small[n]["median_ms"] / (big[n]["median_ms"] / 64) for n in both) > 1.05
    fastest = min(big[n]["median_ms"] for n in big if "median_ms" in big[n])
    assert fastest == big["best"]["median_ms"]
    goal_ms = rows[1024]["reference"]["median_ms"] / rows[1024]["goal"]
    assert goal_ms < fastest / 64 * 1.05


def test_in_block_split_k_recorded_verified_and_slower_than_best():
    """Two warp groups per block tile (splitk variants of bench.variants) double the warps per SM at 1024^3, and lose: every
    variant verified, and every one slower than best at both sizes."""
    d = json.load(open(DATA / "h200_splitk.json"))
    assert d["device"] == "NVIDIA H200" and d["date"] and _made_by(d, "h200_splitk", "device_run17")
    assert {r["shape"]["M"] for r in d["shapes"]} == {1024, 4096}
    for r in d["shapes"]:
        runs = r["runs"]
        assert set(runs) == {"best", *d["variants"]} and all(x["ok"] and x["rel_err"] < 1e-4 for x in runs.values())
        assert min(x["median_ms"] for n, x in runs.items() if n != "best") > runs["best"]["median_ms"]


def test_split_k_variant_is_the_schedule_the_data_names():
    import shlex
    import tomllib
    from bench import variants as V
    plan = tomllib.loads((DATA.parent / "bench" / "plans" / "h200_splitk.toml").read_text())
    specs = dict(V.parse(x) for x in shlex.split(plan["steps"][0]["cmd"]) if "=" in x and not x.startswith("-"))
    named = json.load(open(DATA / "h200_splitk.json"))["variants"]
    assert {n: V.split_spec(specs[n])[1]["splitk"] for n in named} == named        # the plan builds what ran
    _, _, ex, _ = V.module("sk2k32", specs["sk2k32"], {"M": 256, "N": 256, "K": 256})
    src = ex.mod.imports[0].inspect_source()
    assert "__launch_bounds__(256)" in src and "cp_async" in src and "C_rf_shared_local" in src


def test_block_grouping_raised_l2_hits_and_changed_no_time():
    """Pass 10: grouping the blocks (group_m) makes best's reads hit L2 far more often, and best is no faster:
    memory is not what bounds it."""
    d = json.load(open(DATA / "h200_gemm_l2.json"))
    assert d["device"] == "NVIDIA H200" and d["date"] and _made_by(d, "h200_gemm_l2", "device_run18")
    k = {x["who"]: x for x in d["kernels"]}
    hit, dram = "lts__t_sector_hit_rate.pct", "dram__bytes_read.sum"
    assert k["g64p8x4k32a"][hit] < 70 < 85 < k["g64p8x4k32a-g8"][hit] < k["g64p8x4k32a-g16"][hit]
    assert k["g64p8x4k32a-g16"][dram] < 0.25 * k["g64p8x4k32a"][dram]
    rows = {r["shape"]["M"]: r["runs"] for r in _bench()["rows"] if r["op"] == "gemm"}
    for m in (4096, 1024):
        for g in ("g64p8x4k32a-g4", "g64p8x4k32a-g8", "g64p8x4k32a-g16"):     # against the same tiles ungrouped
            assert rows[m][g]["ok"] and abs(rows[m][g]["median_ms"] / rows[m]["g64p8x4k32a"]["median_ms"] - 1) < 0.01


def test_gemm_ratio_spread_recorded_and_what_it_says():
    """Ten alternating rounds in one process: at 4096^3 the median ratio is below the 0.9x goal (the table's
    single run at 0.900x is the edge of the spread), at 1024^3 the ratio is steady and below 1.2x."""
    d = json.load(open(DATA / "h200_gemm_ratio_spread.json"))
    assert d["device"] == "NVIDIA H200" and d["date"] and _made_by(d, "h200_gemm_ratio_spread", "device_run19")
    by = {x["shape"]["M"]: x for x in d["shapes"]}
    for m, x in by.items():
        # best as it was then: the 8x4 tiles without one_barrier (added later, data/h200_gemm_one_barrier.json)
        then = replace(_eight_by_four(x["shape"]), one_barrier=False)
        assert len(x["ratios"]) == 10 and parse_knobs("gemm", "cuda", x["knobs"]) == then
        assert x["ratios"] == pytest.approx([r / b for r, b in zip(x["ref_ms"], x["best_ms"])])
    assert by[4096]["median_ratio"] < 0.9 <= by[4096]["max_ratio"]
    assert 1.05 < by[1024]["min_ratio"] <= by[1024]["max_ratio"] < 1.2


def test_one_barrier_recorded_faster_round_by_round_and_is_best():
    """Pass 11: merging the pipeline's two barriers per k tile into one (one_barrier) was faster than the 8x4
    tiles without it in most of ten alternating rounds at both sizes, verified, and those tiles (best below two
    blocks per SM) ship it."""
    d = json.load(open(DATA / "h200_gemm_one_barrier.json"))
    assert d["device"] == "NVIDIA H200" and d["date"] and _made_by(d, "h200_gemm_one_barrier", "device_run23")
    for x in d["shapes"]:
        v = x["variant"]
        assert v["ok"] and v["rel_err"] < 1e-4 and len(v["ms"]) == len(x["best_ms"]) == 10
        assert parse_knobs("gemm", "cuda", v["knobs"]) == _eight_by_four(x["shape"])
        assert v["speedup_over_best"] == pytest.approx([b / m for b, m in zip(x["best_ms"], v["ms"])])
        assert v["median_speedup"] > 1 and v["rounds_faster"] >= 8
    by = {x["shape"]["M"]: x["variant"] for x in d["shapes"]}
    # the 8x4 tiles are short of the goals: the 4096^3 median under 0.9x, 1024^3 under 1.2x
    assert by[4096]["median_ratio"] < 0.9 and by[1024]["max_ratio"] < 1.2
    k = {(x["who"], x["date"][:13]): x for x in json.load(open(DATA / "h200_gemm_stalls.json"))["kernels"]}
    two, one = k[("g64p8x4k32a", "2026-12-03T14")], k[("g64p8x4k32a-1b", "2026-12-03T14")]
    barrier = "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio"
    assert one[barrier] < 0.6 * two[barrier] and one["gpu__time_duration.sum"] < two["gpu__time_duration.sum"]


def test_dispatch_stalls_sit_on_the_copy_address_arithmetic():
    """PC sampling of best's k loop: an integer instruction (the copies' address arithmetic, all between the
    barrier and the first multiply-add) collects over ten times the dispatch stalls of a multiply-add; in
    cuBLAS's loop, where that arithmetic is spread among the multiply-adds, about three times."""
    d = json.load(open(DATA / "h200_gemm_pc_sampling.json"))
    assert d["device"] == "NVIDIA H200" and d["date"] and _made_by(d, "h200_gemm_pc_sampling", "device_run24")
    best, cublas = d["kernels"]
    assert best["kernel"] == "main_kernel" and "xmma_gemm" in cublas["kernel"]
    for k in (best, cublas):
        assert k["loop_opcodes"]["FFMA"] == 1024
    per = best["dispatch_per_instruction_by_opcode"]
    assert per["IADD3"] > 10 * per["FFMA"] and per["LEA"] > 10 * per["FFMA"]
    assert best["dispatch_share_by_opcode"]["IADD3"] + best["dispatch_share_by_opcode"]["LEA"] > 0.3
    assert cublas["dispatch_per_instruction_by_opcode"]["IADD3"] < 5 * cublas["dispatch_per_instruction_by_opcode"]["FFMA"]
    assert best["loop_samples"]["stall_dispatch"] > 3 * cublas["loop_samples"]["stall_dispatch"]


def test_copy_placement_recorded_verified_and_none_beats_best():
    """Issuing the copies a quarter, half or three quarters into the tile's compute, or after it (3 stages),
    spreads their address arithmetic among the multiply-adds, and no placement was faster than best's."""
    d = json.load(open(DATA / "h200_late_copies.json"))
    assert d["device"] == "NVIDIA H200" and d["date"] and _made_by(d, "h200_late_copies", "device_run26")
    for x in d["shapes"]:
        runs = x["runs"]
        assert all(r["ok"] for r in runs.values())
        assert {r["copies_at"] for r in runs.values()} == {0.0, 0.25, 0.5, 0.75, 1.0}
        assert parse_knobs("gemm", "cuda", runs["best"]["knobs"]) == _eight_by_four(x["shape"])
        assert min(runs, key=lambda n: runs[n]["median_ms"]) == "best"


def test_transpose_a_recorded_and_faster_than_the_8x4_tiles_in_every_round():
    """Pass 12: best (128x128 tiles of 8x8, A transposed, B interleaved) against the 8x4 tiles and cuBLAS, ten
    alternating rounds: at 4096^3 faster in all ten and the 0.9x goal held by the median; at 1024^3 best is the
    8x4 tiles themselves (BEST_FEW_OUTPUTS), still short of 1.2x."""
    d = json.load(open(DATA / "h200_gemm_transpose_a.json"))
    assert d["device"] == "NVIDIA H200" and d["date"] and _made_by(d, "h200_gemm_transpose_a", "device_run30")
    by = {x["shape"]["M"]: x for x in d["shapes"]}
    for m, x in by.items():
        v = x["variant"]
        assert parse_knobs("gemm", "cuda", x["knobs"]) == preset("gemm", "cuda", "best", x["shape"])
        assert parse_knobs("gemm", "cuda", v["knobs"]) == _eight_by_four(x["shape"])
        assert v["ok"] and v["rel_err"] < 1e-4 and len(x["ratios"]) == len(v["ms"]) == 10
        assert x["ratios"] == pytest.approx([r / b for r, b in zip(x["ref_ms"], x["best_ms"])])
    big = by[4096]
    assert big["variant"]["rounds_faster"] == 0 and big["variant"]["median_speedup"] < 0.97
    assert big["median_ratio"] >= 0.92 and sum(r >= 0.9 for r in big["ratios"]) >= 9
    assert big["variant"]["median_ratio"] < 0.9
    assert by[1024]["max_ratio"] < 1.2


def test_transposed_a_needs_b_interleaved_and_the_data_says_why():
    """The k-major A tile (bench/plans/h200_kmajor.toml): with B's 8 contiguous columns the 8x8 kernel meets every bank twice
    and is slower than the 8x4 tiles; with B interleaved it has almost no conflicts, fewer dispatch stalls, and
    is the fastest variant at 4096^3: best's knobs. At 1024^3 every 128x128 variant loses to the 8x4 tiles
    (run 32 times no 8x4 tiles: there the transposed 8x8 tiles beat every 8x16 variant)."""
    d = json.load(open(DATA / "h200_kmajor.json"))
    assert [r["command"] for r in d["runs"]] == [f"python -m bench.run bench/plans/h200_kmajor.toml --steps {i}"
                                                 for i in range(1, 7)]
    assert d["device"] == "NVIDIA H200" and [r["originally"].split()[1] for r in d["runs"]] == [
        "bench/device_run27.sh", "bench/device_run29.sh", "bench/device_run32.sh", "bench/device_run33.sh",
        "bench/device_run39.sh", "bench/device_run41.sh"]
    for run in d["runs"]:
        for row in run["shapes"]:
            assert all(r["ok"] and r["rel_err"] < 1e-4 for r in row["runs"].values())
            runs = row["runs"]
            if row["shape"]["M"] == 1024:
                assert min(runs, key=lambda n: runs[n]["median_ms"]) == ("best" if "best" in runs else "kmi128p8k16")
    big = {n: r for run in d["runs"] for row in run["shapes"] if row["shape"]["M"] == 4096
           for n, r in row["runs"].items() if n != "best"}
    fastest = min(big, key=lambda n: big[n]["median_ms"])
    assert fastest == "kmi128p8k16"
    assert parse_knobs("gemm", "cuda", big[fastest]["knobs"]) == preset("gemm", "cuda", "best", {"M": 4096, "N": 4096, "K": 4096})
    assert big["km128p8k16"]["median_ms"] > 1.05 * big[fastest]["median_ms"]
    # 128 outputs per thread (cuBLAS's 8x16) was slower too: 2 warps per scheduler at 201-213 registers
    sixteen = [n for n in big if "8x16" in n or "16x8" in n]
    assert len(sixteen) == 5 and min(big[n]["median_ms"] for n in sixteen) > big[fastest]["median_ms"]
    k = {x["who"]: x for x in json.load(open(DATA / "h200_gemm_stalls.json"))["kernels"]}
    conflicts, wavefronts = ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                             "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")
    dispatch = "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio"
    assert k["km128p8k16"][conflicts] > 0.3 * k["km128p8k16"][wavefronts]
    assert k["kmi128p8k16"][conflicts] < 0.001 * k["kmi128p8k16"][wavefronts]
    assert k["kmi128p8k16"][dispatch] < 0.6 * k["g64p8x4k32a-1b"][dispatch]
    assert k["kmi128p8k16"]["gpu__time_duration.sum"] < k["g64p8x4k32a-1b"]["gpu__time_duration.sum"]
    assert k["kmi128p8k16"]["launch__registers_per_thread"] <= 128     # two blocks of 256 threads per SM


def test_dynamic_shared_memory_tried_and_lost():
    """Run 40 (bench/plans/h200_dyn_shared.toml): tiles over 48 KB (k tiles of 64, 3 stages of the 128x128 tiles) need the dynamic
    scope, which alone cost 7% at 1024^3 and 2.3% at 4096^3; nothing it allowed beat best, which stays static."""
    d = json.load(open(DATA / "h200_dyn_shared.json"))
    assert d["device"] == "NVIDIA H200" and d["date"] and _made_by(d, "h200_dyn_shared", "device_run40")
    for row in d["shapes"]:
        runs = {n: r for n, r in row["runs"].items() if "error" not in r}
        assert all(r["ok"] for r in runs.values())
        static = runs["best"] if row["shape"]["M"] == 1024 else runs["km"]
        # (pad_tiles=true as the variants ran is best's CUDA where the tiles divide; fit turns it off there)
        assert replace(parse_knobs("gemm", "cuda", static["knobs"]), pad_tiles=False) == \
            preset("gemm", "cuda", "best", row["shape"])
        assert (runs["dyn-best"] if row["shape"]["M"] == 1024 else runs["d-km"])["median_ms"] > 1.02 * static["median_ms"]
        assert min(r["median_ms"] for r in runs.values() if r["dynamic_shared"]) > static["median_ms"]


def test_tiling_rule_constants_are_the_recorded_times():
    """gemm_big_tiles_slower's per-SM times are read off runs in data/: best's 4096^3 row of the table (2.911 ms,
    8 blocks of 128x128 per SM), the 8x4 tiles at 4096^3 (2.98, 32 per SM) and the 128x128 tiles at 1024^3 (0.102,
    one block alone on each of 64 SMs), each within 1% of a recorded median."""
    from kernels.knobs import GEMM_ALONE_MS, GEMM_SM_MS
    row = next(r for r in _bench()["rows"] if r["op"] == "gemm" and r["shape"]["M"] == 4096)
    pairs = {p[0]["M"]: p[1:] for p in _tiling_pairs() if p[0]["M"] == p[0]["N"] == p[0]["K"]}
    assert GEMM_SM_MS[128] * 8 == pytest.approx(row["runs"]["best"]["median_ms"], rel=0.01)
    assert GEMM_SM_MS[64] * 32 == pytest.approx(pairs[4096][1], rel=0.01)
    assert GEMM_ALONE_MS[128] / 4 == pytest.approx(pairs[1024][0], rel=0.01)


def test_split_k_model_reproduces_the_recorded_k_blocks_times_and_best_takes_its_pick():
    """gemm_split_ms against data/h200_anchors.json step 3 (512x512x8192, k_blocks 1 to 16 over best) within 6%,
    and 1024^3 (best's 0.052 ms, data/h200_gemm_one_barrier.json) within 6%; best then splits K in 4 at
    512x512x8192 (0.105 ms measured, 1.6% from the fastest) and not at 1024^3."""
    from kernels.knobs import gemm_k_blocks, gemm_split_ms
    doc = json.loads((DATA / "h200_anchors.json").read_text())
    runs = [st for st in doc["steps"] if st["step"] == 3]
    s = {"M": 512, "N": 512, "K": 8192}
    got = {int(st["each"]["knobs"].split("=")[1]): st["output"]["median_ms"] for st in runs}
    assert sorted(got) == [1, 2, 4, 8, 16]
    for kb, ms in got.items():
        assert gemm_split_ms(s, kb) == pytest.approx(ms, rel=0.06), kb
    assert gemm_k_blocks(s) == 4 and got[4] <= 1.02 * min(got.values())
    assert preset("gemm", "cuda", "best", s).k_blocks == 4
    cube = {"M": 1024, "N": 1024, "K": 1024}
    assert gemm_split_ms(cube, 1) == pytest.approx(0.052, rel=0.06)
    assert gemm_k_blocks(cube) == 1 and preset("gemm", "cuda", "best", cube).k_blocks == 1


def test_best_dwsep_takes_d_kernel_wherever_the_fused_kernel_measured_slower():
    """data/h100_dwsep_dkernel.json: `best` was the fused kernel when it ran. Where the rule now leaves it
    (dwsep_fused_loses) the g32 variant measured there was faster; best's knobs are g32's except on the small maps
    of dwsep_small_map_many_channels (one image a block, judged on data/h100_dwsep_small_maps.json, below), where
    g32 lost to the image tiles measured here (sm32) at both shapes with many channels; where the rule keeps the
    fused kernel, the two were level (within 2%)."""
    from kernels.knobs import dwsep_fused_loses, dwsep_small_map_many_channels
    d = json.load(open(DATA / "h100_dwsep_dkernel.json"))
    assert d["device"].startswith("NVIDIA H100") and d["date"] and d["command"]
    rows = [row for st in d["steps"] for row in st["output"]["shapes"]]
    assert len(rows) == 9
    kept = small = 0
    for row in rows:
        s, runs = row["shape"], row["runs"]
        assert all(r["ok"] for r in runs.values()), s
        g32, fused = runs["g32"]["median_ms"], runs["best"]["median_ms"]
        if dwsep_fused_loses(s):
            assert g32 < fused, s
            if dwsep_small_map_many_channels(s):
                small += 1
                if s["C"] >= 256:
                    assert runs["sm32"]["median_ms"] < g32, s
                continue
            assert parse_knobs("dwsep_conv2d", "cuda", runs["g32"]["knobs"]) == preset("dwsep_conv2d", "cuda",
                                                                                      "best", s), s
            if s["H"] * s["W"] <= 14 * 14:        # the small maps the rule leaves to g32
                assert g32 < runs["sm32"]["median_ms"], s
        else:
            kept += 1
            assert parse_knobs("dwsep_conv2d", "cuda", runs["best"]["knobs"]) == preset("dwsep_conv2d", "cuda",
                                                                                       "best", s)
            assert g32 <= 1.02 * fused and fused <= 1.02 * g32, s
    assert kept == 1 and small == 3


def test_where_best_kept_the_fused_dwsep_kernel_on_held_out_shapes_it_no_longer_does():
    """Every held-out depthwise-separable shape where best's rule of the day kept the fused kernel and the
    tuner's d_kernel winner beat it (h100_suite_6: 8x192x112x112, F=64, best 0.14x cuDNN, tuned 1.49x;
    h100_suite_7: 4x48x112x112, K=7, F=64, best 0.27x, tuned 1.74x) is one where dwsep_fused_loses now holds:
    the fused kernel is kept only at the benchmark's shape, where it was measured level."""
    from kernels.knobs import dwsep_fused_loses
    from kernels.tune import shipped_rows
    lost = [r for _, _, r in shipped_rows() if r["op"] == "dwsep_conv2d" and r["ours"].get("ok")
            and "d_kernel=true" in r["ours"]["knobs"] and "best_preset_ms" in r["ours"]
            and r["ours"]["median_ms"] < 0.5 * r["ours"]["best_preset_ms"]
            and r["shape"]["F"] == 64 and r["shape"]["H"] * r["shape"]["W"] >= 64 * 64]
    assert [r["shape"] for r in lost] == [{"B": 8, "C": 192, "H": 112, "W": 112, "K": 3, "F": 64},
                                          {"B": 4, "C": 48, "H": 112, "W": 112, "K": 7, "F": 64}]
    assert all(dwsep_fused_loses(r["shape"]) for r in lost)
    assert not dwsep_fused_loses({"B": 32, "C": 64, "H": 128, "W": 128, "K": 3, "F": 64})    # the benchmark's
    assert dwsep_fused_loses({"B": 32, "C": 64, "H": 128, "W": 128, "K": 5, "F": 64})


def _h100_variant_rows(name: str, n: int) -> list[dict]:
    """The per-shape rows of a bench.variants plan's data file, measured on an H100 (n of them)."""
    d = json.load(open(DATA / name))
    assert d["device"].startswith("NVIDIA H100") and d["date"] and d["command"]
    rows = [row for st in d["steps"] for row in st["output"]["shapes"]]
    assert len(rows) == n
    return rows


def test_best_dwsep_small_map_tile_is_the_faster_where_it_was_measured():
    """data/h100_dwsep_small_maps.json (H100, best then took 2x32 pixels, or four images a block on small maps
    with 256 channels or more): today best is the imgc8 variant where dwsep_small_map_many_channels holds (spread
    over more blocks where it launches fewer than the SMs, judged apart in data/h100_dwsep_spread.json) and the
    2x32-pixel tile elsewhere, and at each of the eight shapes that pick was the faster of the two (level at
    1x512x14x14, where the one image of the map makes them the same kernel)."""
    from kernels.knobs import dwsep_small_map_many_channels, spread
    rows = _h100_variant_rows("h100_dwsep_small_maps.json", 8)
    took = spreads = 0
    for row in rows:
        s, runs = row["shape"], row["runs"]
        assert all(r["ok"] for r in runs.values()), s
        pick = "imgc8" if dwsep_small_map_many_channels(s) else "best"
        other = "best" if pick == "imgc8" else "imgc8"
        took += pick == "imgc8"
        k = parse_knobs("dwsep_conv2d", "cuda", runs[pick]["knobs"])
        if pick == "imgc8":         # spread over more blocks where the image tile leaves SMs idle (h100_dwsep_spread)
            spread_ = spread("dwsep_conv2d", "cuda", k, s)
            spreads += bool(spread_)
            k = next(iter(spread_), k)
        assert k == preset("dwsep_conv2d", "cuda", "best", s)
        assert runs[pick]["median_ms"] <= 1.02 * runs[other]["median_ms"], s
    assert took == 5 and spreads == 2


def test_split_k_spill_remedy_comes_from_the_data():
    """data/h100_gemm_splitk_spills.json: where best's split-K cubin spilled (the first step's four shapes, as the
    plan's note said before the run) 3 stages ran at least 2.5x faster than best and faster than every other
    remedy measured; where nothing spilled, 3 stages were not faster than 2 (beyond 2%). Today best takes 3 stages
    exactly where its cubin spills (kernels.knobs.gemm_split_unspilled asks the pinned compiler)."""
    from kernels.knobs import _spills
    d = json.load(open(DATA / "h100_gemm_splitk_spills.json"))
    assert d["device"].startswith("NVIDIA H100") and d["date"] and d["command"]
    spilled, clean = (st["output"]["shapes"] for st in d["steps"])
    for row in spilled:
        ms = {n: r["median_ms"] for n, r in row["runs"].items()}
        assert ms["st3"] * 2.5 < ms["best"] and ms["st3"] == min(ms.values()), row["shape"]
    for row in clean:
        ms = {n: r["median_ms"] for n, r in row["runs"].items()}
        assert ms["st3"] >= 0.98 * ms["best"], row["shape"]
    for row in spilled + clean:
        s = row["shape"]
        k = preset("gemm", "cuda", "best", s)
        assert k.k_blocks > 1
        assert k.stages == (3 if _spills("gemm", tuple(s.items()), replace(k, stages=2)) else 2), s
        assert not _spills("gemm", tuple(s.items()), k), s
    assert preset("gemm", "cuda", "best", spilled[0]["shape"]).stages == 3


def test_split_k_rule_picks_within_2_percent_of_the_fastest_measured():
    """data/h100_gemm_ragged_splitk.json: k_blocks 1 to 32 at ten shapes; gemm_k_blocks (one k tile a block at
    least) picks the fastest, or within 2% of it, at 9 of 10 (79x3659x5888: 0.99 of the fastest)."""
    from kernels.knobs import gemm_k_blocks
    rows = _h100_variant_rows("h100_gemm_ragged_splitk.json", 10)
    near = 0
    for row in rows:
        kb = {int(n[2:]): r["median_ms"] for n, r in row["runs"].items() if n.startswith("kb") and "median_ms" in r}
        pick = gemm_k_blocks(row["shape"])
        assert pick in kb and kb[pick] <= 1.05 * min(kb.values()), row["shape"]
        near += kb[pick] <= 1.02 * min(kb.values())
    assert near >= 9


@pytest.mark.parametrize("name", ["h100_dwsep_suite.json", "h100_dwsep_suite_2.json",
                                  "h100_dwsep_suite_3.json"])
def test_held_out_dwsep_batches_verified_and_drawn_at_run_time(name):
    d = json.load(open(DATA / name))
    from kernels.tune import shipped_rows
    rows = [r for _, _, r in shipped_rows((f"data/{name}",))]
    assert d["device"].startswith("NVIDIA H100") and len(rows) >= 4
    assert len({r["seed"] for r in rows}) == 1                      # one draw per batch, its seed recorded
    for r in rows:
        assert r["ours"]["ok"] and r["ours"]["rel_err"] < 1e-4 and r["ours"]["trials"] == 6
        assert r["ours"]["median_ms"] <= r["ours"]["best_preset_ms"] * 1.05     # tuned starts from best
