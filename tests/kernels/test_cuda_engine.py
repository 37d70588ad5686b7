"""The CUDA engine's pipelined fills: what the knobs ask for is in the generated code, and the interpreted
kernel (the same lowered TensorIR) computes the reference result, remainders included."""
from __future__ import annotations

import re

import pytest

from kernels import build, traffic
from kernels.knobs import resolve
from kernels.schedules import create

PIPE = "tile_m=32,tile_n=32,patch_m=4,patch_n=4,k_split=8,cache_a=shared+local,cache_b=shared+local,vector=4," \
       "unroll=4096,pipeline=true"


def _counted(op, shape, knobs, target):
    """What a change of knobs could change: the TensorIR's counts and the machine's (not the SASS's hash)."""
    c = traffic.counts(op, shape, knobs, target)
    return c.per_tensor, c.instructions, c.ncu, c.differences


@pytest.mark.parametrize("stages", [2, 3])
def test_async_copy_emits_cp_async_into_stage_buffers(stages):
    s = {"M": 64, "N": 64, "K": 64}
    src = build.source("gemm", s, resolve("gemm", "cuda", s, None, f"{PIPE},async_copy=true,stages={stages}"),
                       "cuda", "cuda")
    assert "cp_async" in src and "cp_async_wait_group" in src
    sizes = {int(n) for n in re.findall(r"__shared__ alignas\(\d+\) float [AB]_shared_ptr\[(\d+)\]", src)}
    assert sizes == {stages * 32 * 8}                  # `stages` copies of a 32 x 8 tile of A and of B


def test_plain_pipeline_has_no_cp_async():
    s = {"M": 64, "N": 64, "K": 64}
    assert "cp_async" not in build.source("gemm", s, resolve("gemm", "cuda", s, None, PIPE), "cuda", "cuda")


@pytest.mark.parametrize("stages", [2, 3])
def test_async_pipeline_computes_the_reference_where_tiles_do_not_divide(stages):
    s = {"M": 40, "N": 36, "K": 28}
    k = resolve("gemm", "cuda", s, None, f"{PIPE},async_copy=true,stages={stages}")
    assert traffic.simulate("gemm", s, k, "cuda") < 1e-4


INTER = "cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,pipeline=true,async_copy=true,interleave=true"


@pytest.mark.parametrize("knobs, a_floats, more_sectors", [
    ("tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=32", 2 * 64 * 36, 4096),   # a warp's 2 rows: 32 floats + 4 pad
    ("tile_m=64,tile_n=64,patch_m=8,patch_n=8,k_split=16", 2 * 64 * 20, 8192),   # 4 rows of 16 floats: + 4 pad
    ("tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=8", 2 * 128 * 8, 0),     # rows of 8 floats: no pad needed
])
def test_interleave_pads_a_and_keeps_every_instruction(knobs, a_floats, more_sectors):
    """The same instructions, only other shared addresses: every instruction count is unchanged. The global
    load sectors are not where a pad shifts rows of A off 32-byte blocks of shared memory: a 128-bit cp.async
    counts the distinct (global 128-byte line, shared 32-byte block) pairs of each request (the H100's count, from
    held-out batches 3706999825 and 1649424385). With 4 floats of pad every other row starts 16 bytes into a
    block, and a 128-byte request over one writes one block more."""
    s = {"M": 256, "N": 256, "K": 256}
    k = resolve("gemm", "cuda", s, None, f"{knobs},{INTER}")
    src = build.source("gemm", s, k, "cuda", "cuda")
    assert f"float A_shared_ptr[{a_floats}]" in src and "cp_async" in src
    plain = resolve("gemm", "cuda", s, None, f"{knobs},{INTER.replace('interleave=true', 'interleave=false')}")
    (t1, i1, n1, _), (t2, i2, n2, _) = _counted("gemm", s, k, "cuda"), _counted("gemm", s, plain, "cuda")
    assert t1 == t2 and i1 == i2
    sec = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
    assert {m: v for m, v in n1.items() if m != sec} == {m: v for m, v in n2.items() if m != sec}
    assert n1[sec] - n2[sec] == more_sectors


@pytest.mark.parametrize("knobs", ["tile_m=32,tile_n=32,patch_m=4,patch_n=4,k_split=8",
                                   "tile_m=32,tile_n=32,patch_m=4,patch_n=8,k_split=16,stages=3"])
def test_interleaved_kernel_computes_the_reference_where_n_and_k_do_not_divide(knobs):
    s = {"M": 64, "N": 64 if "patch_n=8" in knobs else 36, "K": 28}
    k = resolve("gemm", "cuda", s, None, f"{knobs},{INTER}")
    assert k.interleaved() and traffic.simulate("gemm", s, k, "cuda") < 1e-4


@pytest.mark.parametrize("op, shape, knobs, threads, blocks", [
    ("gemm", {"M": 256, "N": 256, "K": 256}, f"tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=32,{INTER[:-16]}",
     128, 6),
    ("conv1d", {"M": 4096, "N": 64}, "tile=256,patch=4,k_split=32,cache_a=local,cache_w=shared", 64, 8),
    ("conv1d", {"M": 64, "N": 512}, "tile=8,patch=1,k_threads=32,cache_a=global,cache_w=global,cache_c=global",
     256, 4),
])
def test_min_blocks_writes_launch_bounds_and_changes_only_the_registers(op, shape, knobs, threads, blocks):
    """min_blocks only tells ptxas how many blocks must fit on an SM: the kernel is the same TensorIR. The
    machine may differ: where the cap is below what the kernel needs, ptxas spills to local memory (the 8x4
    GEMM at 6 blocks of 128 threads: 85 registers)."""
    k = resolve(op, "cuda", shape, None, f"{knobs},min_blocks={blocks}")
    plain = resolve(op, "cuda", shape, None, knobs)
    assert f"__launch_bounds__({threads}, {blocks})" in build.source(op, shape, k, "cuda", "cuda")
    assert f"__launch_bounds__({threads})" in build.source(op, shape, plain, "cuda", "cuda")
    assert build.source(op, shape, k, "cuda", "lowered") == build.source(op, shape, plain, "cuda", "lowered")
    capped, free = traffic.counts(op, shape, k, "cuda"), traffic.counts(op, shape, plain, "cuda")
    assert (capped.per_tensor, capped.instructions) == (free.per_tensor, free.instructions)
    spills = capped.ncu["smsp__inst_executed_op_local_st.sum"]
    assert free.ncu["smsp__inst_executed_op_local_st.sum"] == 0 and (spills > 0) == (op == "gemm")
    cap = 65536 // (threads * blocks) // 8 * 8
    assert any(f"within {min(cap, 255)} registers" in s for s in build.create(op, shape, k, "cuda")[1].lines)


def test_group_m_reorders_the_blocks_and_changes_no_count():
    """group_m only renumbers the blocks: each block computes the same tile, so every count stays and the
    interpreted kernel still computes the reference."""
    s = {"M": 192, "N": 96, "K": 40}
    base = "tile_m=32,tile_n=32,patch_m=4,patch_n=4,k_split=8,cache_a=shared+local,cache_b=shared+local"
    k = resolve("gemm", "cuda", s, None, f"{base},group_m=2")
    plain = resolve("gemm", "cuda", s, None, base)
    assert _counted("gemm", s, k, "cuda") == _counted("gemm", s, plain, "cuda")
    assert traffic.simulate("gemm", s, k, "cuda") < 1e-4
    grouped, rowwise = (build.source("gemm", s, x, "cuda", "lowered") for x in (k, plain))
    # block b: group b // 6 (2 rows x 3 columns), column b % 6 // 2, row b % 2 of the group; row-major: b // 3, b % 3
    terms = r"blockIdx_x [/%]+ \d+(?: // \d+)?"
    assert {"blockIdx_x // 6", "blockIdx_x % 6 // 2", "blockIdx_x % 2"} <= set(re.findall(terms, grouped))
    assert set(re.findall(terms, rowwise)) == {"blockIdx_x // 3", "blockIdx_x % 3"}


def _loop(src: str) -> list[str]:
    """The barrier, wait, commit and copy lines of the first k loop in CUDA source, in order."""
    body = src[src.index("for (int k_0"):]
    body = body[:body.index("\n  }\n")]
    keep = ("__syncthreads", "wait_group", "commit_group", "cp_async", "C_local_ptr[0] = ")
    out = [next(k for k in keep if k in line) for line in body.splitlines() if any(k in line for k in keep)]
    first = out.index(keep[-1])                         # the compute: its first multiply-add stands for it
    return [x for i, x in enumerate(out) if x != keep[-1] or i == first]


@pytest.mark.parametrize("stages", [2, 3])
def test_one_barrier_leaves_one_barrier_per_k_tile_before_the_copies(stages):
    """TVM's loop is [barrier, copies, commit, wait S-1, barrier, compute]; merged it is [wait S-2, barrier,
    copies, commit, compute], and the lowered kernel the simulator walks is rewritten the same way."""
    s = {"M": 256, "N": 256, "K": 256}
    two = resolve("gemm", "cuda", s, "best", f"stages={stages},one_barrier=false,k_blocks=1")
    one = resolve("gemm", "cuda", s, "best", f"stages={stages},k_blocks=1")
    assert one.one_barrier
    copies = ["cp_async"] * 8
    assert _loop(build.source("gemm", s, two, "cuda", "cuda")) == [
        "__syncthreads", *copies, "commit_group", "wait_group", "__syncthreads", "C_local_ptr[0] = "]
    src = build.source("gemm", s, one, "cuda", "cuda")
    assert _loop(src) == ["wait_group", "__syncthreads", *copies, "commit_group", "C_local_ptr[0] = "]
    loop = src[src.index("for (int k_0"):]
    assert loop.index(f"wait_group_{stages - 2}();") < loop.index("__syncthreads")
    syncs = [build.source("gemm", s, k, "cuda", "lowered").count("tvm_storage_sync") for k in (two, one)]
    assert syncs[1] == syncs[0] - 1


def test_one_barrier_changes_no_count_and_computes_the_reference_where_tiles_do_not_divide():
    s = {"M": 40, "N": 36, "K": 28}
    for stages in (2, 3):
        k = resolve("gemm", "cuda", s, None, f"{PIPE},async_copy=true,stages={stages},one_barrier=true")
        plain = resolve("gemm", "cuda", s, None, f"{PIPE},async_copy=true,stages={stages}")
        assert _counted("gemm", s, k, "cuda") == _counted("gemm", s, plain, "cuda")
        assert traffic.simulate("gemm", s, k, "cuda") < 1e-4
        assert build.source("gemm", s, k, "cuda", "lowered") != build.source("gemm", s, plain, "cuda", "lowered")
    big = {"M": 1000, "N": 1000, "K": 1000}           # guarded copies: the same counts with the merged barrier
    assert _counted("gemm", big, resolve("gemm", "cuda", big, "best"), "cuda") == _counted(
        "gemm", big, resolve("gemm", "cuda", big, "best", "one_barrier=false"), "cuda")


@pytest.mark.parametrize("stages, at", [(3, 1.0), (2, 0.5)])
def test_copies_at_places_the_next_tiles_copies_inside_or_after_the_compute(stages, at):
    """The copies_at variants of bench.variants (bench/plans/h200_late_copies.toml; they lost on the H200): the copies after, or in the middle of, the
    multiply-adds of the tile."""
    from kernels import lowering
    s = {"M": 256, "N": 256, "K": 256}
    k = resolve("gemm", "cuda", s, "best", f"stages={stages},k_blocks=1")
    sch, _ = build.create("gemm", s, k, "cuda")
    src = lowering.compile(sch.mod, "cuda", (), 0, True, at).mod.imports[0].inspect_source()
    assert _loop(src) == ["wait_group", "__syncthreads", "C_local_ptr[0] = ", *["cp_async"] * 8, "commit_group"]
    body = src[src.index("for (int k_0"):]
    fmas = [m.start() for m in re.finditer(r"C_local_ptr\[\d+\] = \(C_local_ptr", body[:body.index("\n  }\n")])]
    before = sum(p < body.index("ptx_cp_async_legacy") for p in fmas)
    assert before == pytest.approx(at * len(fmas), abs=32)


TRANS = "cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,pipeline=true,async_copy=true," \
        "one_barrier=true,transpose_a=true"


def test_transpose_a_stores_a_k_major_and_copies_it_four_bytes_at_a_time():
    """A_shared[k][m] with rows of 128 + 4 floats; A's copies are 4-byte cp.async (k is contiguous in global
    memory, m in shared), B's stay 16-byte; a thread reads one k step of its 8 rows of A contiguously."""
    s = {"M": 256, "N": 256, "K": 256}
    k = resolve("gemm", "cuda", s, None, f"tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=16,{TRANS}")
    src = build.source("gemm", s, k, "cuda", "cuda")
    assert "float A_shared_ptr[4224]" in src                 # 2 stages x 16 k rows x 132 floats
    loop = src[src.index("for (int k_0"):]
    a_copies = re.findall(r"ptx_cp_async_legacy_(\w+)\(A_shared_ptr", loop)
    b_copies = re.findall(r"ptx_cp_async_legacy_(\w+)\(B_shared_ptr", loop)
    assert a_copies == ["ca_4_4_4"] * 8 and b_copies == ["cg_16_4_4"] * 2
    reads = re.findall(r"A_shared_local_ptr\[(\d)\] = A_shared_ptr\[(.*?)\];", loop)[:8]
    assert [i for i, _ in reads] == [str(i) for i in range(8)]
    assert reads[1][1].endswith(" + 1)") and reads[7][1].endswith(" + 7)")     # one k step: 8 neighbours
    plain = resolve("gemm", "cuda", s, None, f"tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=16,"
                                             f"{TRANS.replace('transpose_a=true', 'transpose_a=false')}")
    c, p = traffic.counts("gemm", s, k, "cuda").ncu, traffic.counts("gemm", s, plain, "cuda").ncu
    # A's copies become 4-byte ones (more LDGSTS), reading the same global sectors
    assert c["smsp__inst_executed_op_ldgsts.sum"] > p["smsp__inst_executed_op_ldgsts.sum"]
    assert c["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == p["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]


@pytest.mark.parametrize("knobs", ["tile_m=32,tile_n=32,patch_m=4,patch_n=4,k_split=8",
                                   "tile_m=32,tile_n=32,patch_m=8,patch_n=8,k_split=16,interleave=true"])
def test_transposed_a_kernel_computes_the_reference_where_tiles_do_not_divide(knobs):
    s = {"M": 40, "N": 64 if "interleave" in knobs else 36, "K": 28}
    k = resolve("gemm", "cuda", s, None, f"{knobs},{TRANS}")
    assert k.transpose_a and traffic.simulate("gemm", s, k, "cuda") < 1e-4


PAD = "tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=16,cache_a=shared+local,cache_b=shared+local,vector=4," \
      "unroll=4096,pipeline=true,async_copy=true,one_barrier=true,interleave=true,transpose_a=true"


def _k_loop(src: str) -> str:
    return src[src.index("for (int k_0"):src.rindex("cp_async_wait_group")]


def test_pad_tiles_leaves_no_bounds_test_in_the_k_loop_and_zero_fills_the_edge_copies():
    s = {"M": 200, "N": 136, "K": 1024}
    guarded = build.source("gemm", s, resolve("gemm", "cuda", s, None, f"{PAD},pad_tiles=false"), "cuda", "cuda")
    padded = build.source("gemm", s, resolve("gemm", "cuda", s, None, f"{PAD},pad_tiles=true"), "cuda", "cuda")
    # guarded: every register load of A and every multiply-add of an edge thread sits under a test
    assert _k_loop(guarded).count("if (") > 64
    # padded: the only tests left are the copies' predicates (cp.async with a source size of 0 writes zeros)
    assert "if (" not in _k_loop(padded) and "cp_async_legacy_pred" in _k_loop(padded)
    assert "float A_pad_shared_ptr[" in padded and "float B_pad_shared_ptr[" in padded


@pytest.mark.parametrize("knobs, s", [
    ("tile_m=32,tile_n=32,patch_m=4,patch_n=4,k_split=8,interleave=true", {"M": 40, "N": 36, "K": 28}),
    ("tile_m=32,tile_n=32,patch_m=4,patch_n=8,k_split=16,stages=3,interleave=true", {"M": 40, "N": 36, "K": 28}),
    ("tile_m=32,tile_n=32,patch_m=8,patch_n=8,k_split=16,transpose_a=true,one_barrier=true,interleave=true",
     {"M": 40, "N": 52, "K": 28}),
    ("tile_m=32,tile_n=32,patch_m=8,patch_n=4,k_split=16,cache_a=local,cache_b=global,pipeline=false,"
     "async_copy=false", {"M": 70, "N": 44, "K": 36}),
    ("tile_m=32,tile_n=32,patch_m=8,patch_n=4,k_split=16,cache_a=shared,cache_b=local,pipeline=false,"
     "async_copy=false,vector=1", {"M": 70, "N": 45, "K": 37}),
])
def test_padded_kernel_computes_the_reference_where_m_n_and_k_do_not_divide(knobs, s):
    base = "cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,pipeline=true,async_copy=true"
    k = resolve("gemm", "cuda", s, None, f"{base},{knobs},pad_tiles=true")
    assert k.pad_tiles and traffic.simulate("gemm", s, k, "cuda") < 1e-4


def test_padded_trace_draws_the_padding_on_the_tensors_it_pads():
    """The drawable tile of a padded kernel: the staged copies of A_pad and B_pad are drawn on A and B, and the
    accumulators of C_pad on C, each panel grown by the padding (the zeros the edge threads read and sum)."""
    from viz.tile import drawn, tile_animation
    s = {"M": 8, "N": 8, "K": 8}
    k = resolve("gemm", "cuda", s, None, "tile_m=6,tile_n=6,patch_m=2,patch_n=2,k_split=2,cache_a=shared+local,"
                                         "cache_b=shared+local,vector=1,pad_tiles=true")
    tr = traffic.trace("gemm", s, k, "cuda")
    assert {r.tensor for r in tr.records if r.kind != "barrier"} == {"A", "B", "C"} and drawn(tr) == ["A", "B", "C"]
    regs = {r.index for r in tr.records if r.tensor == "C" and r.level == "register"}
    assert max(i for i, _ in regs) == 11 and max(j for _, j in regs) == 11       # C padded to 12 x 12
    assert any(r.tensor == "A" and r.level == "shared" and r.kind == "read" for r in tr.records)
    assert len(tile_animation(tr).frames) > 1


@pytest.mark.parametrize("knobs, s", [
    ("tile=16,patch=4,k_split=4,cache_a=local,cache_w=shared", {"M": 37, "N": 11}),       # taps padded too (12)
    ("tile=16,patch=4,k_split=8,cache_a=shared,cache_w=local", {"M": 37, "N": 9}),        # 16 taps: N stays
    ("tile=32,patch=2,k_split=2,cache_a=global,cache_w=global", {"M": 50, "N": 3}),
    ("tile=32,patch=4,k_split=32,cache_a=local,cache_w=shared,unroll=4096", {"M": 20, "N": 33}),
    ("tile=16,patch=2,k_split=8,cache_a=shared,cache_w=shared,vector=2", {"M": 5, "N": 40}),
])
def test_padded_conv1d_computes_the_reference_where_the_tiles_do_not_divide(knobs, s):
    """conv1d cannot go through pad_einsum (it reads A_pad[i + k]); its padded definition pads the output to
    whole tiles and the taps to whole k tiles (where that adds at most N/8), the interpreted kernel still
    computes np.convolve's result."""
    k = resolve("conv1d", "cuda", s, None, f"{knobs},cache_c=local,pad_tiles=true")
    assert k.pad_tiles and traffic.simulate("conv1d", s, k, "cuda") < 1e-5


def test_padded_conv1d_has_no_bounds_test_in_its_multiply_adds_and_the_trace_agrees_with_the_counts():
    """At 255347x980 best's tiles (1024 outputs, 128 taps) divide neither: every multiply-add of its CUDA code
    sits under an output test; padded, none does (the copies and the write-back keep theirs), and the cubin's
    branches fall from 274 to a handful (kernels.sass.mix)."""
    from collections import Counter
    from kernels.knobs import preset
    from kernels.ops.conv1d import padded_taps
    from kernels.sass.mix import mix
    s = {"M": 255347, "N": 980}
    p = preset("conv1d", "cuda", "best", s)                 # best pads there (knobs.conv1d_pads_whole)
    b = resolve("conv1d", "cuda", s, "best", "pad_tiles=false")
    assert not b.pad_tiles and p.pad_tiles and padded_taps(980, p.k_split) == 1024
    fmas = [ln for ln in build.source("conv1d", s, p, "cuda", "cuda").splitlines() if "C_pad_local_ptr[0] = (" in ln]
    assert len(fmas) >= 128 and all("if (" not in ln for ln in fmas)
    mb, mp = mix("conv1d", s, b), mix("conv1d", s, p)
    assert mb["branches"] > 200 and mp["branches"] <= 8 and mp["ffma"] == mb["ffma"] \
        and mp["ffma_share"] > mb["ffma_share"] + 0.15, (mb, mp)
    # the drawable tile: the padded taps and outputs are drawn on W and C, the grown A_pad keeps its name
    t = {"M": 37, "N": 11}
    k = resolve("conv1d", "cuda", t, None, "tile=16,patch=4,k_split=4,cache_a=local,cache_w=shared,cache_c=local,"
                                           "pad_tiles=true")
    tr = traffic.trace("conv1d", t, k, "cuda")
    assert tr.tensors["A_pad"] == (48 + 12 - 1,) and {r.tensor for r in tr.records if r.kind != "barrier"} == \
        {"A", "A_pad", "W", "C"}
    assert max(r.index[0] for r in tr.records if r.tensor == "C") == 47          # 47 outputs padded to 48
    totals = Counter((r.tensor, r.level, r.kind) for r in tr.records if r.kind != "barrier")
    c = traffic.counts("conv1d", t, k, "cuda", machine=False)
    assert totals == Counter({(n, lv, kd): v for n, d in c.per_tensor.items() for lv, x in d.items()
                              for kd, v in x.items() if v})


def test_pad_tiles_on_conv1d_says_what_it_needs_and_is_dropped_where_nothing_pads():
    from kernels.knobs import KnobError, fit
    s = {"M": 1 << 20, "N": 1024}                   # 2^20 + 1023 outputs: tile 1024 does not divide
    with pytest.raises(KnobError, match="k_threads=1"):
        resolve("conv1d", "cuda", s, None, "tile=1024,patch=8,k_split=128,cache_c=local,k_threads=4,pad_tiles=true")
    with pytest.raises(KnobError, match="cache_c=local"):
        resolve("conv1d", "cuda", s, None, "tile=1024,patch=8,k_split=128,cache_c=global,pad_tiles=true")
    even = {"M": 1025, "N": 64}                     # 1088 outputs = 17 x 64, 64 taps in k tiles of 32
    k = resolve("conv1d", "cuda", even, None, "tile=64,patch=4,k_split=32,cache_c=local,pad_tiles=true")
    assert not fit(k, even).pad_tiles                               # a preset or the tuner drops it (fit)
    assert "C_pad" not in build.source("conv1d", even, k, "cuda", "tir")   # and as typed it pads nothing
    assert fit(resolve("conv1d", "cuda", even, None, "tile=128,patch=4,k_split=32,cache_c=local,pad_tiles=true"),
               even).pad_tiles


SPLITK = "tile_m=32,tile_n=32,patch_m=4,patch_n=4,k_split=8,cache_a=shared+local,cache_b=shared+local,vector=4," \
         "unroll=4096,pipeline=true,async_copy=true"


@pytest.mark.parametrize("knobs, s", [
    ("k_blocks=4", {"M": 64, "N": 64, "K": 128}),
    ("k_blocks=2,interleave=true,one_barrier=true", {"M": 64, "N": 64, "K": 64}),
    ("k_blocks=4,transpose_a=true,one_barrier=true", {"M": 64, "N": 32, "K": 64}),
    ("k_blocks=2,pad_tiles=true", {"M": 40, "N": 36, "K": 48}),
    ("k_blocks=8,cache_a=local,cache_b=global,pipeline=false,async_copy=false,vector=1", {"M": 45, "N": 37, "K": 96}),
    ("k_blocks=2,group_m=2", {"M": 128, "N": 64, "K": 64}),
])
def test_split_k_across_blocks_computes_the_reference(knobs, s):
    k = resolve("gemm", "cuda", s, None, f"{SPLITK},{knobs}")
    assert k.k_blocks > 1 and traffic.simulate("gemm", s, k, "cuda") < 1e-4


def test_split_k_with_pad_tiles_keeps_the_zero_test_in_the_copies():
    """Split-K pads before it splits the reduction; the padded views must reach the cache stages as blocks of
    their own (their zero test then goes into the copies), not be inlined into the partial sums' multiply-adds,
    which at 238x1408x2304 gave 2.8x the shared loads and made every k_blocks > 1 slower than none."""
    s = {"M": 200, "N": 136, "K": 1024}
    split = build.source("gemm", s, resolve("gemm", "cuda", s, None, f"{PAD},pad_tiles=true,k_blocks=2"),
                         "cuda", "cuda")
    loop = split[split.index("for (int k_1_0"):split.index("cp_async_wait_group", split.index("for (int k_1_0") + 80)]
    assert "C_pad_rf" in split and "if (" not in loop and "cp_async_legacy_pred" in loop
    assert "float A_pad_shared_ptr[" in split and "float B_pad_shared_ptr[" in split


def test_split_k_launches_k_blocks_times_the_tiles_then_a_kernel_that_adds_the_partial_sums():
    s = {"M": 64, "N": 64, "K": 256}
    one = build.source("gemm", s, resolve("gemm", "cuda", s, None, SPLITK), "cuda", "cuda")
    four = build.source("gemm", s, resolve("gemm", "cuda", s, None, f"{SPLITK},k_blocks=4"), "cuda", "cuda")
    def kernels(src):
        return set(re.findall(r"__global__ void __launch_bounds__\((\d+)\) (\w+)\(", src))
    assert kernels(one) == {("64", "main_kernel")}
    # the partial sums (64 threads per 32x32 tile, as without split-K), then the sum (256 threads per block)
    assert kernels(four) == {("64", "main_kernel"), ("256", "main_kernel_1")} and "C_rf" in four
    _, steps = create("gemm", s, resolve("gemm", "cuda", s, None, f"{SPLITK},k_blocks=4"), "cuda")
    assert any("split K across blocks" in line for line in steps.lines)
    assert any("adds the 4 partial sums" in line for line in steps.lines)


def test_split_k_counts_the_workspace_round_trip():
    """The simulator's counts at full size: the partial sums are written once by the first kernel and read
    once by the second, k_blocks x M x N floats each way, and the output is written once."""
    s = {"M": 64, "N": 64, "K": 256}
    base = traffic.counts("gemm", s, resolve("gemm", "cuda", s, None, SPLITK), "cuda", machine=False)
    c = traffic.counts("gemm", s, resolve("gemm", "cuda", s, None, f"{SPLITK},k_blocks=4"), "cuda", machine=False)
    wr, rd = c.level_totals("write"), c.level_totals("read")
    assert wr["global"] == 4 * 64 * 64 + 64 * 64 == base.level_totals("write")["global"] + 4 * 64 * 64
    assert rd["global"] == base.level_totals("read")["global"] + 4 * 64 * 64
    assert c.blocks == 4 * base.blocks + 64 * 64 // 256         # and the blocks of the kernel that adds them


def test_split_k_sentences():
    from kernels.knobs import fitted, knob_class, parse_knobs, validate
    s = {"M": 64, "N": 64, "K": 100}
    k = parse_knobs("gemm", "cuda", f"{SPLITK},k_blocks=8", knob_class("gemm", "cuda")())
    assert not validate("gemm", "cuda", k, s)           # 13 values a block, the last block 9
    small = {"M": 64, "N": 64, "K": 35}
    k = parse_knobs("gemm", "cuda", f"{SPLITK},k_split=2,k_blocks=16", knob_class("gemm", "cuda")())
    assert any("k_blocks=16 leaves blocks with no part of K=35" in p and "use k_blocks=4 or fewer" in p
               for p in validate("gemm", "cuda", k, small))
    k = parse_knobs("gemm", "cuda", f"{SPLITK},k_split=64,k_blocks=4", knob_class("gemm", "cuda")())
    assert any("k_split=64 is larger than the 25 values of K" in p for p in validate("gemm", "cuda", k, s))
    # a preset is fitted: k tiles no longer than a block's share, and no block without a share
    k = fitted("gemm", "cuda", f"{SPLITK},k_blocks=8,k_split=64", s)
    assert (k.k_blocks, k.k_split) == (8, 13) and not validate("gemm", "cuda", k, s)
    k = fitted("gemm", "cuda", f"{SPLITK},k_blocks=16,k_split=64", small)
    assert (k.k_blocks, k.k_split) == (4, 9) and not validate("gemm", "cuda", k, small)   # 8 would leave one empty


@pytest.mark.parametrize("shape, k_blocks", [({"M": 40, "N": 36, "K": 35}, 2), ({"M": 64, "N": 64, "K": 875}, 8),
                                             ({"M": 70, "N": 66, "K": 87}, 4)])
def test_split_k_where_k_blocks_does_not_divide_k_computes_the_reference(shape, k_blocks):
    from kernels.knobs import BEST_FEW_OUTPUTS, fitted
    text = ",".join(f"{n}={str(v).lower()}" for n, v in BEST_FEW_OUTPUTS[("gemm", "cuda")][1].items())
    k = fitted("gemm", "cuda", f"{text},k_blocks={k_blocks},k_split=8", shape)
    assert k.k_blocks == k_blocks and traffic.simulate("gemm", shape, k, "cuda") < 1e-4
    assert traffic.counts("gemm", shape, k, "cuda").ncu     # the emulated SASS follows it (VOTEU included)


def test_split_k_machine_counts_of_the_two_kernels():
    """The emulated SASS (what Nsight Compute would read): the first kernel's 16 blocks of 2 warps store their
    4x4 patches with four 128-bit stores each (128), the second kernel's 128 warps load the 4 partial sums of
    their outputs (512) and store each output once (128); its loads are 4 x 64 x 64 floats, 2048 more sectors."""
    from kernels import sass
    s = {"M": 64, "N": 64, "K": 256}
    base = sass.machine_counts("gemm", s, resolve("gemm", "cuda", s, None, SPLITK)).ncu
    four = sass.machine_counts("gemm", s, resolve("gemm", "cuda", s, None, f"{SPLITK},k_blocks=4")).ncu
    n = sass.NCU
    assert base[n["global_st"]] == 32 and base[n["global_ld"]] == 0
    assert four[n["global_st"]] == 128 + 128 and four[n["global_ld"]] == 512
    assert four[n["sectors"]] == base[n["sectors"]] + 4 * 64 * 64 * 4 // 32
    assert four[n["ldgsts"]] == base[n["ldgsts"]]         # the same operand copies, spread over 4x the blocks


@pytest.mark.parametrize("extra", ["", ",pad_tiles=true,tile_m=6,tile_n=6"])
def test_split_k_sum_kernel_writes_only_real_outputs_where_its_256_threads_overhang(extra):
    """64 outputs (or 144 padded) for one block of 256 threads: the sum and its write-back share the remainder
    test (the interpreter raises on any access outside a buffer), and the drawable tile still draws A, B, C."""
    from viz.tile import drawn
    s = {"M": 8, "N": 8, "K": 8}
    k = resolve("gemm", "cuda", s, None, "tile_m=4,tile_n=4,patch_m=2,patch_n=2,k_split=2,cache_a=shared+local,"
                                         f"cache_b=shared+local,vector=1,k_blocks=2{extra}")
    assert traffic.simulate("gemm", s, k, "cuda") < 1e-4
    assert drawn(traffic.trace("gemm", s, k, "cuda")) == ["A", "B", "C"]


DW = "tile_f=8,patch_f=4,tile_h=4,tile_w=8,patch_w=2,c_split=4,cache_p=local"


@pytest.mark.parametrize("knobs", [
    f"{DW},d_kernel=true,cache_d=shared",
    f"{DW},d_kernel=true,cache_d=shared+local,tile_b=2",
    f"{DW},d_kernel=true,cache_d=local,tile_b=3,patch_b=3",
    f"{DW},d_kernel=true,cache_d=global",
    f"{DW},d_kernel=false,cache_d=shared,tile_b=2",
])
def test_d_kernel_and_image_tiles_compute_the_reference_where_tiles_do_not_divide(knobs):
    s = dict(B=3, C=5, H=7, W=9, K=3, F=12)
    assert traffic.simulate("dwsep_conv2d", s, resolve("dwsep_conv2d", "cuda", s, None, knobs), "cuda") < 1e-4


def test_d_kernel_computes_the_depthwise_once_however_many_blocks_share_a_pixel_tile():
    """Fused, each of the F / tile_f blocks of a pixel tile computes its D again (reads X again); with d_kernel
    D is written to global memory once per element and X is read by one kernel, whatever F is."""
    def x_reads_and_d_writes(F, d_kernel):
        s = dict(B=2, C=4, H=8, W=16, K=3, F=F)
        k = resolve("dwsep_conv2d", "cuda", s, None, f"{DW},cache_d=shared,d_kernel={str(d_kernel).lower()}")
        c = traffic.counts("dwsep_conv2d", s, k, "cuda", machine=False).per_tensor
        return c["X"]["global"]["read"], c["D"]["global"]["write"]
    assert x_reads_and_d_writes(32, False)[0] == 4 * x_reads_and_d_writes(8, False)[0]
    assert x_reads_and_d_writes(32, True) == x_reads_and_d_writes(8, True)
    assert x_reads_and_d_writes(32, True)[1] == 2 * 4 * 8 * 16 and x_reads_and_d_writes(32, False)[1] == 0
    assert x_reads_and_d_writes(8, True)[0] <= x_reads_and_d_writes(8, False)[0]


def test_d_kernel_source_is_two_kernels_the_second_staging_d_from_global():
    s = dict(B=2, C=8, H=8, W=32, K=3, F=16)
    src = build.source("dwsep_conv2d", s, resolve("dwsep_conv2d", "cuda", s, None,
                                                  f"{DW},d_kernel=true,cache_d=shared"), "cuda", "cuda")
    first, second = src.split("extern \"C\" __global__")[-2:]
    assert "D_local" in first and "D_ptr[" in first            # D summed in a register, stored once
    assert "D_shared" in second and "X_ptr" not in second       # the pointwise reads D, not X
