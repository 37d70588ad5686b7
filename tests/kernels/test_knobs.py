"""Each validation rule in kernels/knobs.py: its sentence names the problem and the fix. Presets are valid."""
from __future__ import annotations

import pytest

from bench.shapes import course_shapes
from kernels import build, traffic
from kernels.knobs import KNOBS, PRESET_NAMES, PRESETS, KnobError, parse_knobs, parse_shape, preset, resolve
from kernels.ops import OPS

GEMM = {"M": 64, "N": 64, "K": 64}
BIG = {"M": 1024, "N": 1024, "K": 1024}


def problems(op, target, shape, knobs=None, preset=None) -> str:
    with pytest.raises(KnobError) as e:
        resolve(op, target, shape, preset, knobs)
    return " ".join(e.value.problems)


def test_tile_fails_when_larger_than_axis():
    assert problems("gemm", "cpu", GEMM, "tile_m=128") == "tile_m=128 is larger than M=64; use at most 64."


def test_patch_fails_when_larger_than_tile():
    msg = problems("gemm", "cpu", GEMM, "tile_m=32,patch_m=64")
    assert msg == "patch_m=64 is larger than tile_m=32; a patch must fit inside its tile."


def test_patch_fails_when_not_dividing_tile():
    msg = problems("gemm", "cpu", GEMM, "tile_m=48,patch_m=32")
    assert msg == "tile_m=48 is not a multiple of patch_m=32; pick a patch that divides the tile, e.g. 16."


def test_split_fails_when_larger_than_axis():
    assert problems("gemm", "cpu", GEMM, "k_split=128") == "k_split=128 is larger than K=64; use at most 64."


def test_split_fails_when_larger_than_channels():
    shape = {"B": 1, "C": 5, "H": 8, "W": 8, "K": 3, "F": 4}
    assert problems("dwsep_conv2d", "cpu", shape, "c_split=8") == "c_split=8 is larger than C=5; use at most 5."


def test_block_fails_when_over_1024_threads():
    msg = problems("gemm", "cuda", BIG, "tile_m=64,tile_n=64,patch_m=1,patch_n=2,vector=1")
    assert msg.startswith("The block would have 2048 threads")
    assert "at most 1024" in msg and "larger patch or a smaller tile" in msg


def test_shared_memory_fails_when_over_48kb():
    msg = problems("gemm", "cuda", BIG, "tile_m=128,tile_n=128,k_split=64,cache_a=shared,cache_b=shared")
    assert msg.startswith("The shared-memory tiles need 64.0 KB per block, over the 48 KB limit")
    assert "shrink the tile or the split" in msg


def test_registers_fail_when_over_255():
    msg = problems("gemm", "cuda", BIG, "patch_m=8,patch_n=8,k_split=64,cache_a=local,cache_b=local")
    assert msg.startswith("Each thread would hold 1088 floats in registers, over the 255")
    assert "lower the split or the patch" in msg


def test_vector_fails_when_patch_cannot_take_it():
    msg = problems("gemm", "cpu", GEMM, "patch_n=8,vector=16")
    assert msg == "vector=16 needs patch_n to be a multiple of 16 (it is 8); use vector=8 or a wider patch."


def test_vector_fails_when_no_rows_are_aligned():
    msg = problems("gemm", "cuda", {"M": 1024, "N": 1026, "K": 1022}, "vector=4")
    assert msg.startswith("vector=4 needs K or N divisible by 4") and msg.endswith("use vector=1.")


@pytest.mark.parametrize("shape, wide", [({"M": 100, "N": 1026, "K": 1024}, ("A",)),
                                         ({"M": 100, "N": 1024, "K": 1022}, ("B", "C"))])
def test_vector_widens_the_operands_whose_rows_are_aligned(shape, wide):
    """GEMM on CUDA: A's rows are K floats, B's and C's N; vector widens the copies of those that start on
    16-byte boundaries and leaves the others one float wide (before, one unaligned dimension kept them all
    narrow: at the ninth batch's 192x4463x2304 the cubin's multiply-adds rise from 69% to 73% of its
    instructions, bench.variants mix)."""
    from kernels.knobs import resolve
    k = resolve("gemm", "cuda", shape, None, "cache_a=shared,cache_b=shared,cache_c=local,vector=4")
    assert {n for n in "ABC" if k.plan(shape).width(n) == 4} == set(wide)
    src = build.source("gemm", shape, k, "cuda", "cuda")
    for t, wide_copy in (("A", "*(float4*)(A_shared_ptr"), ("B", "*(float4*)(B_shared_ptr"), ("C", "*(float4*)(C_ptr")):
        assert (wide_copy in src) == (t in wide), t
        assert (wide_copy.replace("float4", "float2") in src) == (t not in wide), t     # 1022, 1026: two floats
    assert traffic.simulate("gemm", {"M": 10, "N": shape["N"] % 8 + 8, "K": shape["K"] % 8 + 8}, k, "cuda") < 1e-4


def test_vector_fails_when_output_row_not_divisible():
    msg = problems("conv1d", "cuda", {"M": 1024, "N": 1024}, "patch=4,vector=4")
    assert msg == ("vector=4 needs M+N-1 divisible by 4 so every row starts on a 16-byte boundary (M+N-1=2047); "
                   "use vector=1.")


def test_choice_fails_when_not_allowed():
    msg = problems("gemm", "cpu", GEMM, "order=zigzag")
    assert msg == "order=zigzag is not one of k_outer, k_inner, plain; pick one of those."


def test_scope_fails_when_not_a_memory_level():
    msg = problems("gemm", "cuda", BIG, "cache_a=texture")
    assert msg == "cache_a=texture is not one of global, shared, local, shared+local; pick one of those."


def test_value_fails_when_below_minimum():
    assert problems("gemm", "cpu", GEMM, "tile_m=0") == "tile_m=0 must be at least 1."


def test_knob_fails_when_unknown():
    msg = problems("gemm", "cpu", GEMM, "speed=3")
    assert msg.startswith("'speed=3' is not a knob of gemm on cpu; the knobs are tile_m, tile_n,")


def test_knob_fails_when_value_missing():
    msg = problems("gemm", "cpu", GEMM, "tile_m")
    assert msg == "'tile_m' has no value; write it as tile_m=value, e.g. tile_m=64."


def test_knob_fails_when_not_integer():
    assert problems("gemm", "cpu", GEMM, "tile_m=big") == "tile_m must be a whole number, not 'big'."


def test_flag_fails_when_not_true_or_false():
    assert problems("gemm", "cpu", GEMM, "parallel=maybe") == "parallel must be true or false, not 'maybe'."


def test_every_problem_is_reported_at_once():
    with pytest.raises(KnobError) as e:
        parse_knobs("gemm", "cpu", "tile_m=big,speed=3")
    assert len(e.value.problems) == 2


def shape_problem(op: str, text: str) -> str:
    with pytest.raises(KnobError) as e:
        parse_shape(op, text)
    return " ".join(e.value.problems)


def test_shape_fails_when_not_a_number():
    assert shape_problem("gemm", "M=1,N=x,K=3") == "N must be a positive whole number, not 'x'."


def test_shape_fails_when_not_positive():
    assert shape_problem("gemm", "M=1,N=-2,K=3") == "N must be a positive whole number, not '-2'."


def test_shape_fails_when_not_whole():
    assert shape_problem("gemm", "M=1.5,N=2,K=3") == "M must be a positive whole number, not '1.5'."


def test_shape_fails_when_dimension_unknown():
    assert shape_problem("gemm", "M=1,N=2,Q=3") == "'Q=3' is not a dimension of gemm; give M=..,N=..,K=..."


def test_shape_fails_when_not_key_value():
    assert shape_problem("gemm", "M1,N=2,K=3") == "'M1' is not a dimension of gemm; give M=..,N=..,K=..."


def test_shape_fails_when_dimensions_missing():
    assert shape_problem("gemm", "M=1,N=2") == "The shape is missing K; gemm needs M=..,N=..,K=..."
    assert shape_problem("conv1d", "") == "The shape is missing M, N; conv1d needs M=..,N=..."


@pytest.mark.parametrize("op", ["dwconv2d", "dwsep_conv2d"])
def test_shape_fails_when_kernel_even(op):
    text = "B=1,C=1,H=4,W=4,K=4" + (",F=2" if op == "dwsep_conv2d" else "")
    assert shape_problem(op, text) == "K=4 is even; depthwise 'same' padding needs an odd kernel size such as 5."


def test_op_fails_when_unknown():
    msg = "Unknown operator 'matmul'; choose one of gemm, conv1d, dwconv2d, dwsep_conv2d."
    assert problems("matmul", "cpu", GEMM, preset="best") == msg
    assert shape_problem("matmul", "M=1") == msg


def test_target_fails_when_unknown():
    msg = problems("gemm", "tpu", GEMM, preset="best")
    assert msg.startswith("Unknown target 'tpu'; choose one of ") and msg.endswith(".")
    assert {"cpu", "cuda"} <= set(msg.removeprefix("Unknown target 'tpu'; choose one of ")[:-1].split(", "))


def test_preset_fails_when_unknown():
    msg = problems("gemm", "cpu", GEMM, preset="fastest")
    assert msg == "Unknown preset 'fastest'; choose one of baseline, naive, seed, best."


@pytest.mark.parametrize("op,target", sorted(KNOBS))
def test_presets_valid_for_named_sizes(op, target):
    for size in OPS[op].sizes.values():
        for p in PRESET_NAMES:
            resolve(op, target, size, p)


@pytest.mark.parametrize("op,target", sorted(KNOBS))
def test_presets_valid_for_course_shapes(op, target):
    for shape in course_shapes(op):
        for p in PRESET_NAMES:
            resolve(op, target, shape, p)


def test_presets_carry_only_real_knobs():
    for (op, target), cls in KNOBS.items():
        assert set(PRESETS[(op, target)]) == set(PRESET_NAMES)
        for values in PRESETS[(op, target)].values():
            cls(**values)           # a misspelt knob raises TypeError


def test_async_copy_fails_when_not_pipelined():
    msg = problems("gemm", "cuda", BIG, "cache_a=shared,cache_b=shared,async_copy=true")
    assert msg.startswith("async_copy=true copies the next shared tile while computing on this one")
    assert "set pipeline=true, or async_copy=false" in msg


def test_async_copy_fails_when_one_thread_per_block():
    msg = problems("gemm", "cuda", BIG, "tile_m=4,tile_n=4,patch_m=4,patch_n=4,cache_a=shared,cache_b=shared,"
                                        "pipeline=true,async_copy=true")
    assert msg.startswith("async_copy=true needs more than one thread per block")


def test_best_drops_async_copy_where_the_shape_leaves_one_thread_per_block():
    k = preset("gemm", "cuda", "best", {"M": 1, "N": 1, "K": 2})
    assert k.pipeline and not k.async_copy
    assert preset("gemm", "cuda", "best", BIG).async_copy


def test_interleave_fails_when_no_shared_tile_is_rearranged():
    msg = problems("gemm", "cuda", BIG, "cache_a=local,cache_b=local,interleave=true")
    assert msg.startswith("interleave=true rearranges the shared tiles, and none is rearranged here")
    assert "or interleave=false" in msg


def test_interleave_applies_where_the_tile_does_not_divide_the_axis():
    from dataclasses import replace

    from kernels.knobs import GemmCuda, fit
    k = resolve("gemm", "cuda", {"M": 100, "N": 128, "K": 64}, None, "cache_a=shared,interleave=true")
    assert k.interleaved() == (("A", 0, 0, 1),)
    k = replace(GemmCuda(), cache_a="shared", interleave=True)
    assert fit(k, {"M": 128, "N": 100, "K": 64}).interleave and fit(k, {"M": 100, "N": 128, "K": 64}).interleave


def test_fit_keeps_pad_tiles_only_where_a_block_tile_does_not_divide_m_or_n():
    from dataclasses import replace

    from kernels.knobs import GemmCuda, fit
    k = replace(GemmCuda(), pad_tiles=True)                 # 64x64 tiles, k tiles of 16
    assert fit(k, {"M": 1000, "N": 1024, "K": 1024}).pad_tiles
    assert fit(k, {"M": 1024, "N": 1000, "K": 1024}).pad_tiles
    assert not fit(k, {"M": 1024, "N": 1024, "K": 1000}).pad_tiles     # K is never padded
    assert not fit(k, BIG).pad_tiles
    for s in ({"M": 4000, "N": 4000, "K": 4000}, {"M": 1000, "N": 1000, "K": 1000}):
        best = preset("gemm", "cuda", "best", s)
        assert best.pad_tiles and best.interleave == (best.tile_m == 128)


def test_a_tile_below_its_patch_with_pad_tiles_gets_a_sentence_not_an_exception():
    from dataclasses import replace

    from kernels.knobs import GemmCuda, fit, validate
    s = {"M": 100, "N": 100, "K": 64}
    k = fit(replace(GemmCuda(), tile_m=2, patch_m=4, pad_tiles=True), s)     # fit rounds the tile down to 0
    assert k.tile_m == 0
    assert any("tile_m" in p and p.endswith(".") for p in validate("gemm", "cuda", k, s))


def test_pad_tiles_needs_the_accumulators_in_registers():
    msg = problems("gemm", "cuda", {"M": 100, "N": 100, "K": 64}, "cache_c=global,pad_tiles=true")
    assert msg == ("pad_tiles=true accumulates the padded tiles in registers and writes back only the real outputs, "
                   "and cache_c=global accumulates in global memory; set cache_c=local, or pad_tiles=false.")


def test_interleave_pads_rows_only_where_a_warps_rows_share_a_bank():
    from kernels.knobs import row_pad
    assert row_pad(32, 2) == 4 and row_pad(16, 2) == 0 and row_pad(16, 4) == 4 and row_pad(8, 4) == 0
    for row, rows in [(32, 2), (16, 4), (32, 8), (8, 8), (64, 4)]:
        stride = row + row_pad(row, rows)
        assert stride % 4 == 0 and len({stride * i % 32 for i in range(rows)}) == rows


def test_min_blocks_fails_when_the_blocks_cannot_share_an_sm():
    best = "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=32,cache_a=shared+local,cache_b=shared+local," \
           "pipeline=true,async_copy=true"
    assert problems("gemm", "cuda", BIG, f"{best},min_blocks=8") == (
        "min_blocks=8 asks for 8 blocks of 32.0 KB of shared memory on one SM, over its 228 KB; use min_blocks=6 "
        "or less, or 0.")
    assert problems("gemm", "cuda", BIG, "tile_m=64,tile_n=64,patch_m=1,patch_n=4,min_blocks=3") == (
        "min_blocks=3 asks for 3 blocks of 1024 threads on one SM, over the 2048 threads an SM holds; use "
        "min_blocks=2 or less, or 0.")
    msg = problems("gemm", "cuda", BIG, "tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=8,cache_a=shared+local,"
                                        "cache_b=shared+local,min_blocks=3")
    assert msg.startswith("min_blocks=3 caps each of the 256 threads at 80 registers, and it holds 80 floats")
    assert msg.endswith("so ptxas would spill to local memory; use a smaller min_blocks, a smaller patch, or 0.")


def test_min_blocks_within_an_sm_resolves_and_zero_is_the_default():
    k = resolve("gemm", "cuda", BIG, "best", "min_blocks=6")
    assert k.min_blocks == 6 and resolve("gemm", "cuda", BIG, "best").min_blocks == 0
    assert resolve("conv1d", "cuda", {"M": 4096, "N": 64}, "best", "min_blocks=3").min_blocks == 3


def test_group_m_must_divide_the_block_rows_and_fit_clamps_it():
    assert problems("gemm", "cuda", {"M": 200, "N": 72, "K": 40},
                    "tile_m=32,tile_n=32,patch_m=4,patch_n=4,group_m=4") == (
        "group_m=4 does not divide the 7 block rows (M=200 in tiles of tile_m=32); use group_m=1.")
    from dataclasses import replace
    from kernels.knobs import GemmCuda, fit
    k = fit(replace(GemmCuda(), group_m=16), {"M": 384, "N": 64, "K": 64})      # 6 block rows of 64
    assert k.group_m == 2


def test_group_m_with_interleave_fails_in_one_sentence():
    msg = problems("gemm", "cuda", BIG, "cache_a=shared+local,cache_b=shared+local,interleave=true,group_m=4")
    assert msg.startswith("group_m=4 launches the blocks out of row order") and msg.endswith(
        "use group_m=1 or interleave=false.")


def test_interleave_needs_more_than_one_thread_along_the_axis():
    msg = problems("gemm", "cuda", {"M": 10, "N": 7, "K": 5},
                   "tile_m=2,tile_n=7,patch_m=2,patch_n=1,k_split=1,cache_a=shared,cache_b=shared,interleave=true")
    assert msg.startswith("interleave=true rearranges the shared tiles, and none is rearranged here")
    assert "tile_m larger than patch_m" in msg


def test_one_barrier_needs_the_cp_async_pipeline_and_fit_drops_it_with_async_copy():
    assert problems("gemm", "cuda", BIG, "tile_m=64,tile_n=64,patch_m=8,patch_n=4,cache_a=shared+local,"
                                         "cache_b=shared+local,pipeline=true,one_barrier=true") == (
        "one_barrier=true merges the two barriers of the cp.async pipeline, and this schedule has none; set "
        "pipeline=true and async_copy=true, or one_barrier=false.")
    assert resolve("gemm", "cuda", BIG, "best").one_barrier
    one_thread = resolve("gemm", "cuda", {"M": 4, "N": 4, "K": 64}, "best")     # a one-thread block: no cp.async
    assert not one_thread.async_copy and not one_thread.one_barrier


def test_transpose_a_needs_a_shared_tile_and_sizes_it_k_major():
    assert problems("gemm", "cuda", BIG, "cache_a=local,transpose_a=true") == (
        "transpose_a=true lays out A's shared tile, and cache_a=local keeps none; set cache_a to 'shared' or "
        "'shared+local', or transpose_a=false.")
    k = resolve("gemm", "cuda", BIG, None, "tile_m=128,tile_n=64,patch_m=8,patch_n=8,k_split=16,"
                                           "cache_a=shared+local,cache_b=shared,transpose_a=true")
    # A: 16 k rows of 128 + 4 floats (a stride of 4 mod 32); B: 16 x 64; one buffer (no pipeline)
    assert k.a_row() == 132 and k.footprint(BIG)[0] == 16 * 132 + 16 * 64
    assert resolve("gemm", "cuda", BIG, None, "tile_m=40,cache_a=shared,transpose_a=true").a_row() == 68
    # interleave then rearranges only B (A's row interleave is of the [m][k] layout)
    both = resolve("gemm", "cuda", BIG, None, "tile_m=128,tile_n=128,patch_m=8,patch_n=8,cache_a=shared+local,"
                                              "cache_b=shared+local,interleave=true,transpose_a=true")
    assert [x[0] for x in both.interleaved()] == ["B"]


def test_best_gemm_takes_the_128x128_tiles_only_where_the_busiest_sm_finishes_sooner_with_them():
    """132 SMs share the blocks out; the SM with the most sets the time (a 128x128 block: 2.911/8 ms per 4096
    of K, a 64x64 one 2.980/32; a lone 128x128 block 0.408)."""
    from kernels.knobs import few_outputs, gemm_big_tiles_slower
    cases = {(4096, 4096): False,       # 1024 blocks: 8 on the busiest SM (2.911) against 4096: 32 (2.980)
             (2048, 2048): False,       # 2 (0.728) against 8 (0.745)
             (2560, 2560): True,        # 4 (1.456) against 13 (1.211)
             (1024, 1024): True,        # 64 blocks: one alone on an SM (0.408) against 2 (0.186)
             (4000, 6000): True,        # 12 (4.367) against 45 (4.191)
             (8192, 4100): False}       # 16 (5.822) against 64 (5.960)
    for (m, n), slower in cases.items():
        s = {"M": m, "N": n, "K": 512}
        assert gemm_big_tiles_slower(s) is slower and few_outputs("gemm", "cuda", s) is slower, (m, n)
        assert resolve("gemm", "cuda", s, "best").transpose_a is not slower
    assert few_outputs("conv1d", "cuda", {"M": 1024, "N": 1024}) and not few_outputs("gemm", "llvm", BIG)
