"""The machine's view: the pinned toolchain, the SASS parser, and the emulator on hand-written SASS and on
compiled kernels whose Nsight Compute counters are recorded (data/ncu_h200.csv)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from kernels import hwcheck, sass, traffic
from kernels.knobs import preset, resolve
from kernels.sass import toolchain
from kernels.sass.emulator import EmulationError, Machine
from kernels.sass.launch import Launch, Param
from kernels.sass.parse import parse

A, B = 0x7F00_0000_0000, 0x7F00_0020_0000


def listing(*lines: str, name: str = "k") -> str:
    """An nvdisasm-style listing: instructions get addresses, 'L:' lines are labels."""
    out, pc = [f"\t.section\t.text.{name},\"ax\",@progbits"], 0
    for ln in lines:
        if ln.endswith(":"):
            out.append(ln)
        else:
            out.append(f"        /*{pc:04x}*/                   {ln} ;")
            pc += 16
    return "\n".join(out)


def run(text: str, grid=1, block=32, **kw) -> Machine:
    k = parse(text)["k"]
    ln = Launch("k", (grid, 1, 1), (block, 1, 1),
                (Param("A_ptr", "A", 0x210, 8, A, 1 << 20), Param("B_ptr", "B", 0x218, 8, B, 1 << 20)))
    m = Machine(k, ln, 0, grid, **kw)
    m.run()
    return m


# a[tid] = b[tid], over 4-byte elements: the pointer arithmetic nvcc emits for it
COPY = ["S2R R0, SR_TID.X", "LDC.64 R2, c[0x0][0x218]", "LDC.64 R4, c[0x0][0x210]", "ULDC.64 UR4, c[0x0][0x208]",
        "IMAD.WIDE R2, R0, 0x4, R2", "IMAD.WIDE R4, R0, 0x4, R4", "LDG.E R7, desc[UR4][R2.64]",
        "STG.E desc[UR4][R4.64], R7", "EXIT"]


def test_toolchain_compiles_an_sm90_cubin_whose_hash_is_its_machine_code():
    s = {"M": 64, "N": 64, "K": 64}
    src = traffic_source("gemm", s, "seed")
    cubin = toolchain.compile_cubin(src)
    assert cubin[:4] == b"\x7fELF" and list(toolchain.text_sections(cubin)) == ["main_kernel"]
    assert toolchain.sass_hash(cubin) == toolchain.sass_hash(toolchain._compile(src))    # deterministic
    assert "SR_TID.X" in toolchain.disassemble(cubin)
    assert toolchain.nvrtc_version().endswith(f"(nvidia-cuda-nvrtc {toolchain.NVRTC_VERSION})")


def traffic_source(op, s, name):
    from kernels import build
    return build.source(op, s, preset(op, "cuda", name, s), "cuda", "cuda")


def test_cubins_are_cached_on_disk_by_source(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_CACHE", str(tmp_path))
    src = traffic_source("conv1d", {"M": 100, "N": 7}, "naive") + "\n// a source never compiled before\n"
    first = toolchain.compile_cubin.__wrapped__(src)
    assert len(list((tmp_path / "cubin").glob("*.cubin"))) == 1
    monkeypatch.setattr(toolchain, "_compile", lambda code: pytest.fail("compiled again"))
    assert toolchain.compile_cubin.__wrapped__(src) == first


def test_parser_reads_guards_operands_labels_and_notes():
    k = parse(listing("@!P0 LDG.E.128.CONSTANT R4, desc[UR6][R2.64+-0x40]", "L0:",
                      "@P1 BRA `(L0)", 'LDL.LU R0, [R1+0xc]                (*"SpillRefill"*)'))["k"]
    ldg, bra, ldl = k.instrs
    assert (ldg.guard, ldg.guard_not, ldg.opcode, ldg.mods) == ("P0", True, "LDG", ("E", "128", "CONSTANT"))
    mem = ldg.ops[1]
    assert (mem.kind, mem.name, mem.regs, mem.value, mem.wide) == ("mem", "UR6", ("R2",), -0x40, True)
    assert k.labels == {"L0": 1} and bra.ops[0].name == "L0"
    assert ldl.note == "SpillRefill" and ldl.ops[1].value == 0xC


def test_a_coalesced_copy_counts_one_load_one_store_and_four_sectors_per_warp():
    m = run(listing(*COPY), grid=3, block=64)
    assert m.counts == {"global_ld": 6, "global_st": 6}
    assert m.sectors == 6 * 4                       # 32 lanes x 4 bytes = 4 sectors a warp
    assert m.pc_tensor == {0x60: "B", 0x70: "A"}


def test_a_warp_counts_an_instruction_whose_guard_is_off_in_every_lane():
    m = run(listing("ISETP.GT.AND P0, PT, RZ, 0x1, PT", "@P0 LDS RZ, [RZ]", "@!PT LDS RZ, [RZ]", "EXIT"), block=96)
    assert m.counts["shared_ld"] == 2 * 3


def test_divergent_lanes_run_both_sides_and_reconverge():
    # lanes 0-15 of each warp take the branch; both arms load once per warp, the join is reached once
    m = run(listing("S2R R0, SR_TID.X", "LOP3.LUT R1, R0, 0x10, RZ, 0xc0, !PT", "ISETP.NE.AND P0, PT, R1, RZ, PT",
                    "BSSY B0, `(J)", "@P0 BRA `(T)", "LDS R2, [RZ]", "BRA `(J)", "T:", "LDS R3, [RZ+0x4]", "J:",
                    "BSYNC B0", "STS [RZ], RZ", "EXIT"), block=64)
    assert m.counts == {"shared_ld": 4, "shared_st": 2}


@pytest.mark.parametrize("operand, taken", [("P2", 0), ("!P2", 1), ("PT", 1)])
def test_a_branch_with_a_predicate_operand_is_taken_where_the_guard_and_the_operand_both_hold(operand, taken):
    # held-out gemm-0 (batch 1926702354): `@!P0 BRA P2, L` leaves an unrolled loop's last iteration to the code
    # after it; taking it on the guard alone sent 2573 of 3237 such iterations down the other path (the GPU
    # counted 172391 more shared loads, 67 per iteration). Lanes 0-15 have !P0, lanes 40-63 have P2
    prog = listing("S2R R0, SR_TID.X", "ISETP.GE.AND P0, PT, R0, 0x10, PT", "ISETP.GE.AND P2, PT, R0, 0x28, PT",
                   f"@!P0 BRA {operand}, `(T)", "LDS R2, [RZ]", "BRA `(J)", "T:", "LDS R3, [RZ+0x4]", "J:", "EXIT")
    m = run(prog, block=64)
    assert m.per_pc[0x60] == taken and m.per_pc[0x40] == 2     # warp 0 takes it or not; both warps fall through
    if operand == "P2":     # the rule before the fix (draw --compare branch_operand=false): the guard alone
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(Machine, "branch_operand", False)
            assert run(prog, block=64).per_pc[0x60] == 1


@pytest.mark.parametrize("first, region", [(0x00, 0), (0x0d, 1), (0x20, 1)])
def test_a_unanimous_branch_is_taken_only_by_a_warp_whose_active_lanes_all_take_it(first, region):
    """BRA.U (held-out gemm-8, batch 1045639025): nvcc guards a region as `@P1 BRA.U L; BSSY B0, L; ...;
    @P1 BRA L'; ...; BSYNC B0; L:`. A warp takes BRA.U only where all its active lanes would; one whose lanes
    disagree falls through as one and splits at the region's own branch. Lanes from `first` on have P1: warp 1
    (lanes 32-63) skips the region whole; warp 0 skips it only when every lane has P1, else it runs the BSSY as
    one warp, and each warp runs the code after L once (taken per lane, lanes 13-31 of warp 0 jumped ahead and
    warp 0 ran the code after L twice: the emulator counted 1,449 shared loads and 724 LDGSTS more than the
    H100)."""
    m = run(listing("S2R R0, SR_TID.X", f"ISETP.GE.AND P1, PT, R0, {first:#x}, PT", "@P1 BRA.U `(L)",
                    "BSSY B0, `(L)", "@P1 BRA `(I)", "LDS R2, [RZ]", "I:", "BSYNC B0", "L:", "LDS R3, [RZ+0x4]",
                    "EXIT"), block=64)
    assert m.per_pc[0x30] == region            # the BSSY: warp 0, unless all its lanes jumped
    assert m.per_pc[0x50] == region            # the region's load: warp 0's lanes below `first`
    assert m.per_pc[0x70] == 2                 # after L: once per warp
    assert not m.pending


@pytest.mark.parametrize("join, loads, at_join", [("", 5, 4), ("BSYNC B0", 3, 2)])
def test_groups_of_one_warp_meet_at_a_branch_target_apart_unless_it_is_a_convergence_point(join, loads, at_join):
    # lanes 16-63 branch to J first (warp 1 whole, warp 0 in part), lanes 8-15 next, lanes 0-7 fall through to
    # it: three groups of warp 0 reach J. At a plain instruction each runs it on its own (the group 16-63 also
    # carries warp 1: groups of different warps merge); at a BSYNC they wait for one another and run on as one
    m = run(listing("S2R R0, SR_TID.X", "ISETP.GE.AND P0, PT, R0, 0x10, PT", "ISETP.GE.AND P1, PT, R0, 0x8, PT",
                    "BSSY B0, `(J)", "@P0 BRA `(J)", "@P1 BRA `(J)", "LDS R2, [RZ]", "J:", *filter(None, [join]),
                    "LDS R3, [RZ+0x4]", "EXIT"), block=64)
    assert m.counts["shared_ld"] == loads
    assert m.per_pc[0x70 + (0x10 if join else 0)] == at_join     # the load after J: warp instructions
    assert not m.pending


@pytest.mark.parametrize("split_before_bssy, after_inner", [(True, 2), (False, 1)])
def test_groups_that_executed_a_bssy_apart_pass_its_bsync_apart(split_before_bssy, after_inner):
    """Held-out dwsep_conv2d-12 (batch 2288257967): a BSYNC waits for the lanes that executed its barrier's BSSY
    together. Lanes 0-15 and 16-31 of one warp split before BSSY B1 and execute it apart: each passes BSYNC B1
    on its own and runs the load after it (two warp instructions) until BSYNC B0, whose BSSY they executed as
    one. Split after BSSY B1, they meet at BSYNC B1 as before. (Merged at every BSYNC, the emulator counted
    14,535 executions of a loop body per instruction fewer than the H100.)"""
    split = ["ISETP.GE.AND P0, PT, R0, 0x10, PT", "@P0 BRA `(S)", "NOP", "S:"]
    inner = ["BSSY B1, `(J1)", "STS [RZ], RZ", "J1:", "BSYNC B1", "LDS R2, [RZ]"]
    body = split + inner if split_before_bssy else inner[:1] + split + inner[1:]
    m = run(listing("S2R R0, SR_TID.X", "BSSY B0, `(J0)", *body, "J0:", "BSYNC B0", "LDS R3, [RZ+0x4]", "EXIT"))
    assert m.counts["shared_ld"] == after_inner + 1
    assert m.counts["shared_st"] == 2          # the store inside runs in each group either way
    assert not m.pending


@pytest.mark.parametrize("stride, known, rule", [(0x4, True, True), (0x8, False, True), (0x4, False, False)])
def test_a_spill_slot_keeps_its_value_past_a_local_array_store_that_cannot_reach_it(stride, known, rule,
                                                                                     monkeypatch):
    """Held-out dwsep_conv2d-20 (batch 1138477905): a predicate spilled to [R1+0xc0] (P2R, STL) is read back
    (LDL) and branched on after stores of a local array at per-lane addresses below it. Those stores used to
    make every spill slot unknown (the rule spill_slots=false, kept to compare with); now only the slots within
    the lanes' range are (32 lanes 4 bytes apart reach 0x7f, 8 bytes apart 0xff, over the slot), and the kernel
    agrees on every counter."""
    monkeypatch.setattr(Machine, "spill_slots", rule)
    prog = ["LDC R1, c[0x0][0x28]", "S2R R0, SR_TID.X", "IMAD.MOV.U32 R2, RZ, RZ, 0x1", "STL [R1+0xc0], R2",
            f"IMAD R4, R0, {stride:#x}, R1", "STL [R4], RZ", "LDL R5, [R1+0xc0]", "ISETP.NE.AND P0, PT, R5, RZ, PT",
            "@P0 BRA `(T)", "LDS R6, [RZ]", "T:", "EXIT"]
    if known:
        assert run(listing(*prog)).counts == {"local_st": 2, "local_ld": 1}     # taken: the load is skipped
    else:
        with pytest.raises(EmulationError, match="loaded from local memory"):
            run(listing(*prog))


def test_a_loop_runs_its_trip_count_and_the_pointer_moves_lazily():
    m = run(listing(*COPY[:6], "MOV R8, RZ", "L:", "LDG.E R7, desc[UR4][R2.64]", "IADD3 R2, P1, R2, 0x80, RZ",
                    "IADD3.X R3, RZ, R3, RZ, P1, !PT", "IADD3 R8, R8, 0x1, RZ", "ISETP.NE.AND P0, PT, R8, 0x64, PT",
                    "@P0 BRA `(L)", "EXIT"), grid=2, block=32)
    assert m.counts["global_ld"] == 2 * 100 and m.sectors == 2 * 100 * 4


def test_imad_hi_adds_the_register_pair_and_hfma2_packs_its_halves():
    # signed division by 28: IMAD.HI with the pair R5:R4 = x << 32 (the compiler's way to add x)
    m = run(listing("S2R R5, SR_TID.X", "IMAD.MOV.U32 R4, RZ, RZ, RZ", "IMAD.HI R0, R5, -0x6db6db6d, R4",
                    "SHF.R.U32.HI R3, RZ, 0x1f, R0", "LEA.HI.SX32 R3, R0, R3, 0x1c",
                    "HFMA2.MMA R6, -RZ, RZ, 0, 2.384185791015625e-07", "EXIT"), block=128)
    assert np.array_equal(m.regs["R3"].mat(), np.arange(128) // 28)
    assert m.regs["R6"] == 4


def test_an_address_from_a_loaded_value_stops_the_run_with_a_sentence():
    with pytest.raises(EmulationError, match=r"/\*0070\*/ LDG.*its address depends on a value loaded from global "
                                             r"memory at /\*0060\*/, which the emulator does not compute"):
        run(listing(*COPY[:6], "LDG.E R2, desc[UR4][R2.64]", "LDG.E R7, desc[UR4][R2.64]", "EXIT"))


def test_a_register_known_in_some_lanes_passes_what_it_knows_through_arithmetic():
    # held-out dwconv2d-26 (batch 1481437295): UR6 holds a weight read from shared memory, @!UP0 ULDC.64 puts a
    # pointer in it; MOV R70, UR6 and @!UP0 IMAD.WIDE build the address of a store guarded by !UP0. Copies and
    # sums keep the known lanes known (the others stay Unknown, so a store that reads them still stops)
    prog = ["S2R R0, SR_TID.X", "ISETP.GE.AND P0, PT, R0, 0x10, PT", "LDS R4, [RZ]", "LDS R5, [RZ+0x4]",
            "ULDC.64 UR4, c[0x0][0x208]", "@!P0 LDC.64 R4, c[0x0][0x210]", "MOV R6, R4", "IMAD.U32 R7, RZ, RZ, R5",
            "@!P0 IMAD.WIDE R6, R0, 0x4, R6"]
    m = run(listing(*prog, "@!P0 STG.E desc[UR4][R6.64], RZ", "EXIT"), block=64)
    assert m.counts == {"shared_ld": 4, "global_st": 2} and m.pc_tensor == {0x90: "A"}
    with pytest.raises(EmulationError, match=r"/\*0090\*/ STG.*its address depends on a value loaded from shared "
                                             r"memory at /\*0020\*/"):
        run(listing(*prog, "@P0 STG.E desc[UR4][R6.64], RZ", "EXIT"), block=64)


def test_bits_nvcc_packs_into_a_register_it_never_wrote_are_known():
    # predicates kept in bits of R9, read back with LOP3: the other bits were never written
    m = run(listing("S2R R0, SR_TID.X", "ISETP.GE.AND P0, PT, R0, 0x10, PT", "LOP3.LUT R9, R9, 0xfffffffe, RZ, 0xc0, !PT",
                    "@P0 LOP3.LUT R9, R9, 0x1, RZ, 0xfc, !PT", "PRMT R9, R9, 0x5410, RZ",
                    "LOP3.LUT P1, RZ, R9, 0x1, RZ, 0xc0, !PT", "@P1 STS [RZ], RZ", "@P1 BRA `(E)", "STS [RZ], RZ",
                    "E:", "EXIT"), block=64)
    assert m.counts["shared_st"] == 2 + 1           # lanes 16-63 branch: warp 0 diverges, warp 1 does not


def test_a_predicate_read_from_packed_bits_needs_them_known_only_in_the_lanes_that_compute_it():
    # held-out dwconv2d-4 and dwsep_conv2d-48 (batch 3765975936): a bit of R9 written in lanes 0-15 only (the
    # rest hold a loaded value) is read back with LOP3 by those lanes; the others' Unknown bits do not matter
    m = run(listing("S2R R0, SR_TID.X", "ISETP.GE.AND P0, PT, R0, 0x10, PT", "LDS R9, [RZ]",
                    "@!P0 LOP3.LUT R9, R9, 0xfffffffe, RZ, 0xc0, !PT", "@P0 EXIT",
                    "LOP3.LUT P1, RZ, R9, 0x1, RZ, 0xc0, !PT", "@P1 BRA `(E)", "STS [RZ], RZ", "E:", "EXIT"),
            block=64)
    assert m.counts == {"shared_ld": 2, "shared_st": 1}
    with pytest.raises(EmulationError, match=r"/\*0060\*/ BRA.*the branch depends on a value loaded from shared memory"):
        run(listing("S2R R0, SR_TID.X", "ISETP.GE.AND P0, PT, R0, 0x10, PT", "LDS R9, [RZ]",
                    "@!P0 LOP3.LUT R9, R9, 0xfffffffe, RZ, 0xc0, !PT", "@!P0 EXIT",
                    "LOP3.LUT P1, RZ, R9, 0x1, RZ, 0xc0, !PT", "@P1 BRA `(E)", "STS [RZ], RZ", "E:", "EXIT"),
            block=64)


def test_a_predicate_or_ed_with_a_comparison_that_decides_it_is_known_where_the_comparison_decides():
    # nvcc packs a bounds predicate into a bit of a register that holds a loaded value in other lanes, and reads
    # it back only OR-ed with a comparison that is true in those lanes (ISETP.GT.U32.OR P0, PT, R4, 0x38, !P0)
    prog = ["S2R R0, SR_TID.X", "ISETP.GE.AND P0, PT, R0, 0x10, PT", "LDS R9, [RZ]",
            "@!P0 LOP3.LUT R9, R9, 0xfffffffe, RZ, 0xc0, !PT", "LOP3.LUT P1, RZ, R9, 0x1, RZ, 0xc0, !PT"]
    m = run(listing(*prog, "ISETP.GT.U32.OR P2, PT, R0, 0xf, !P1", "@P2 BRA `(E)", "STS [RZ], RZ", "E:", "EXIT"),
            block=64)
    assert m.counts == {"shared_ld": 2}             # every lane branches: 0-15 by the bit, 16-63 by the comparison
    m = run(listing(*prog, "ISETP.LT.U32.AND P2, PT, R0, 0x10, P1", "@P2 BRA `(E)", "STS [RZ], RZ", "E:", "EXIT"),
            block=64)
    assert m.counts == {"shared_ld": 2, "shared_st": 2}     # no lane branches: 0-15 by the bit, 16-63 by the comparison
    with pytest.raises(EmulationError, match=r"BRA.*the branch depends on a value loaded from shared memory"):
        run(listing(*prog, "ISETP.GT.U32.OR P2, PT, R0, 0x1f, !P1", "@P2 BRA `(E)", "STS [RZ], RZ", "E:", "EXIT"),
            block=64)                               # lanes 16-31 need the bit: the comparison is false there


def test_bits_cleared_in_a_register_known_only_in_some_lanes_are_known_in_every_lane():
    # held-out gemm-24 (batch 3706999825): R25 holds a float in some lanes (written under a guard) and is known
    # in the others; nvcc clears and sets single bits of it with LOP3 and reads them back to guard loads
    prog = ["S2R R0, SR_TID.X", "ISETP.GE.AND P0, PT, R0, 0x10, PT", "LDS R9, [RZ]", "@P0 IMAD.MOV.U32 R9, RZ, RZ, R0",
            "LOP3.LUT R9, R9, 0xfffffffe, RZ, 0xc0, !PT", "LOP3.LUT P1, RZ, R9, 0x1, RZ, 0xc0, !PT"]
    m = run(listing(*prog, "@P1 BRA `(E)", "STS [RZ], RZ", "E:", "EXIT"), block=64)
    assert m.counts == {"shared_ld": 2, "shared_st": 2}         # bit 0 is clear in every lane: none branches
    with pytest.raises(EmulationError, match=r"BRA.*the branch depends on a value loaded from shared memory"):
        run(listing(*prog, "LOP3.LUT P2, RZ, R9, 0x2, RZ, 0xc0, !PT", "@P2 BRA `(E)", "STS [RZ], RZ", "E:", "EXIT"),
            block=64)                                           # bit 1 is still unknown in lanes 0-15


def test_bytes_permuted_into_a_register_known_only_in_some_lanes_are_known_in_every_lane():
    # held-out gemm-32 (batch 3706999825): R50 holds a float loaded from shared memory in some lanes; nvcc
    # PRMTs a 16-bit counter into its low half and reads the low byte back to address a cp.async
    prog = ["S2R R0, SR_TID.X", "ISETP.GE.AND P0, PT, R0, 0x10, PT", "LDS R50, [RZ]", "@P0 IMAD.MOV.U32 R50, RZ, RZ, R0",
            "PRMT R50, R0, 0x7610, R50", "LOP3.LUT R50, R50, 0xff, RZ, 0xc0, !PT", "ULDC.64 UR4, c[0x0][0x208]",
            "LDC.64 R4, c[0x0][0x210]"]
    m = run(listing(*prog, "IMAD.WIDE R4, R50, 0x4, R4", "LDG.E R7, desc[UR4][R4.64]", "EXIT"), block=64)
    assert m.counts == {"shared_ld": 2, "global_ld": 2} and m.sectors == 8     # 64 lanes read 64 floats
    with pytest.raises(EmulationError, match=r"LDG.*its address depends on a value loaded from shared memory"):
        run(listing(*prog[:5], "SHF.R.U32.HI R50, RZ, 0x10, R50", *prog[6:], "IMAD.WIDE R4, R50, 0x4, R4",
                    "LDG.E R7, desc[UR4][R4.64]", "EXIT"), block=64)          # the high half is the float's


@pytest.mark.parametrize("half, error", [("LO", None), ("HI", "R22 before anything was written to it")])
def test_idp_2a_needs_known_only_the_two_bytes_of_b_it_reads(half, error):
    # held-out dwsep_conv2d-2 (batch 3765975936): nvcc packs b of IDP.2A.LO from bytes of a register it never
    # wrote (R22) into the two bytes the .LO form does not read; the dot product addresses a load
    prog = ["S2R R0, SR_TID.X", "LOP3.LUT R22, R22, 0xff, RZ, 0xc0, !PT", "PRMT R10, R0, 0x5410, R22",
            "IMAD.MOV.U32 R2, RZ, RZ, 0x4", f"IDP.2A.{half}.U16.U8 R11, R2, R10, RZ", "ULDC.64 UR4, c[0x0][0x208]",
            "LDC.64 R4, c[0x0][0x210]", "IMAD.WIDE R4, R11, 0x1, R4", "LDG.E R7, desc[UR4][R4.64]", "EXIT"]
    if error:
        with pytest.raises(EmulationError, match=r"LDG.*its address depends on " + error):
            run(listing(*prog), block=64)
        return
    m = run(listing(*prog), block=64)
    assert m.counts == {"global_ld": 2} and m.sectors == 8 and m.pc_tensor == {0x80: "A"}


def test_chunks_of_blocks_add_up_to_the_whole_grid(monkeypatch):
    s = {"M": 100, "N": 100, "K": 37}
    k = resolve("gemm", "cuda", s, "seed", None)
    whole = sass.machine_counts("gemm", s, k)
    monkeypatch.setattr(sass, "LANES", 512)
    sass._DONE.clear()
    assert sass.machine_counts("gemm", s, k).ncu == whole.ncu


QUICK = [("conv1d", "seed", '{"M": 1024, "N": 1024}'), ("dwconv2d", "best", '{"B": 3, "C": 4, "H": 100, "W": 100, "K": 5}'),
         ("dwsep_conv2d", "best", '{"B": 2, "C": 6, "H": 50, "W": 50, "K": 3, "F": 10}'),
         ("gemm", "seed", '{"M": 1024, "N": 1024, "K": 1024}')]


@pytest.mark.parametrize("op,name,shape", QUICK)
def test_the_emulated_sass_reproduces_recorded_counters(op, name, shape):
    t = hwcheck.recorded()
    r = t[(t.op == op) & (t.preset == name) & (t["shape"] == shape)].iloc[0]
    s = json.loads(shape)
    m = sass.machine_counts(op, s, resolve(op, "cuda", s, None, r["knobs"]))
    for metric in hwcheck.METRICS:
        if metric in r and not np.isnan(r[metric]):
            assert hwcheck.agrees(metric, m.ncu[metric], int(r[metric])), metric


@pytest.mark.slow
def test_the_emulator_reproduces_the_stored_predictions_of_every_recorded_kernel():
    stored = json.load(open(hwcheck.PREDICTED))["kernels"]
    for key, v in hwcheck.predict_all().items():
        assert stored[key] == v, key


def test_a_spilling_kernel_shows_local_memory_and_says_why():
    s = {"M": 256, "N": 256, "K": 256}
    k = resolve("gemm", "cuda", s, None, "tile_m=64,tile_n=64,patch_m=8,patch_n=8,k_split=8,cache_c=global")
    c = traffic.counts("gemm", s, k, "cuda")
    assert c.ncu["smsp__inst_executed_op_local_ld.sum"] > 0 and c.ncu["smsp__inst_executed_op_local_st.sum"] > 0
    assert any(d.startswith("Local memory:") for d in c.differences)


def test_the_held_out_kernel_the_emulator_could_not_read_now_agrees():
    """Batch 652328404's one miss (a predicate that took a register's known bits): regression data now."""
    e = next(e for b in hwcheck.batches() for e in b["kernels"] if e["id"] == "dwsep_conv2d-20" and "error" in e)
    m = sass.machine_counts(e["op"], e["shape"], resolve(e["op"], "cuda", e["shape"], None, e["knobs"]))
    assert {k: m.ncu[sass.NCU[k]] for k in e["measured"]} == e["measured"]


# Kernels of a judged batch that the engine builds differently since (their recorded counters describe the
# cubin drawn then, not today's): split-K with pad_tiles at a ragged shape, whose zero test moved from the
# multiply-adds into the copies (2026-12-05).
REBUILT = {843420274: {"gemm-12", "gemm-20", "gemm-32", "gemm-46"}}
# Recorded misses whose emulation still takes far longer than a test may (a few threads running long loops: every
# warp instruction is a step): batch 3863596101's dwsep_conv2d-4, 8 threads and about 63 million memory
# instructions, past the draw's 10 minutes.
TOO_SLOW = {3863596101: {"dwsep_conv2d-4"}}


@pytest.mark.slow
def test_every_fifth_kernel_of_every_judged_batch_still_agrees():
    for b in hwcheck.batches():
        for e in [e for e in b["kernels"] if "measured" in e][::5]:      # not those the driver refused
            m = sass.machine_counts(e["op"], e["shape"], resolve(e["op"], "cuda", e["shape"], None, e["knobs"]))
            if e["id"] in REBUILT.get(b["seed"], ()):
                assert m.sass_hash != e["sass_hash"], f"{e['id']} is built as it was drawn: drop it from REBUILT"
                continue
            assert all(hwcheck.agrees(sass.NCU[k], m.ncu[sass.NCU[k]], v) for k, v in e["measured"].items()), e["id"]


@pytest.mark.slow
def test_every_judged_kernel_the_emulator_could_not_finish_when_drawn_agrees_now():
    """Recorded misses of judged batches where the emulator gave no counts (regression data, not a judgement):
    batch 652328404's predicate over partly known bits, and batch 3984747587's dwsep_conv2d-16, whose memo grew
    past the draw's 8 GB (145 s and 2.5 GB here since the memo is bounded, every counter exact). Those in
    TOO_SLOW are left out, and must still be misses on record."""
    missed = [(b["seed"], e) for b in hwcheck.batches() for e in b["kernels"] if "error" in e and "measured" in e]
    slow = {(seed, e["id"]) for seed, e in missed if e["id"] in TOO_SLOW.get(seed, ())}
    assert slow == {(seed, i) for seed, ids in TOO_SLOW.items() for i in ids}      # still misses on record
    missed = [e for seed, e in missed if (seed, e["id"]) not in slow]
    assert {e["id"] for e in missed} >= {"dwsep_conv2d-16"}
    for e in missed:
        m = sass.machine_counts(e["op"], e["shape"], resolve(e["op"], "cuda", e["shape"], None, e["knobs"]))
        assert m.sass_hash == e["sass_hash"], e["id"]
        assert all(hwcheck.agrees(sass.NCU[k], m.ncu[sass.NCU[k]], v) for k, v in e["measured"].items()), e["id"]


def test_emptying_the_emulators_memo_changes_no_count(monkeypatch):
    """The memo is emptied when the process grows past MEMO_GROWTH; emptied every instruction, a kernel with a
    loop, a guard and spills counts exactly what it counts with the memo kept."""
    from kernels.sass import emulator
    s = {"M": 67, "N": 45, "K": 93}
    k = resolve("gemm", "cuda", s, None, "tile_m=16,tile_n=16,patch_m=4,patch_n=4,k_split=8,cache_a=shared+local,"
                                         "cache_b=shared+local,cache_c=local")
    c = sass.compiled("gemm", s, k)
    ln = c.launches[0]
    kept = emulator.Machine(c.kernels[ln.name], ln, 0, ln.blocks)
    kept.run()
    monkeypatch.setattr(emulator, "MEMO_CHECK", 1)
    monkeypatch.setattr(emulator, "MEMO_GROWTH", -(1 << 62))
    emptied = emulator.Machine(c.kernels[ln.name], ln, 0, ln.blocks)
    emptied.run()
    assert kept.counts == emptied.counts and kept.sectors == emptied.sectors and kept.per_pc == emptied.per_pc
    assert sum(kept.counts.values()) > 0 and len(emptied._memo) < 4 < len(kept._memo)     # it was emptied


def test_the_machine_trace_of_a_spilling_tile_has_local_memory():
    from kernels.sass.trace import machine_trace
    s = {"M": 8, "N": 8, "K": 8}
    k = resolve("gemm", "cuda", s, None, "tile_m=8,tile_n=8,patch_m=8,patch_n=8,k_split=8,cache_c=global")
    tr = machine_trace("gemm", s, k)
    local = [r for r in tr.records if r.level == "local"]
    assert local and {r.kind for r in local} == {"read", "write"}
    reads = [r for r in tr.records if r.level == "global" and r.kind == "read"]
    assert {r.tensor for r in reads} == {"A", "B"} and len(reads) == 2 * 8 * 8     # nvcc loads each input once
    products = [r for r in tr.records if r.level == "register"]
    assert len(products) == 2 * 8 ** 3                     # and every multiply-add reads both from registers


@pytest.mark.parametrize("global_stride, shared_stride, per_request, max_rule", [
    (0x10, 0x10, 4, 4), (0x10, 0x20, 8, 8), (0x10, 0x30, 8, 8), (0x30, 0x10, 5, 8)])
def test_a_128_bit_copy_counts_the_pairs_of_global_line_and_shared_block(global_stride, shared_stride, per_request,
                                                                         max_rule, monkeypatch):
    """LDGSTS.128 counts, per request of 8 lanes, the distinct (128-byte global line, 32-byte shared block) pairs.
    Held-out gemm-19 and gemm-41 (batch 3706999825, H100): lanes reading contiguous global memory into shared
    rows apart count one per shared block. Held-out gemm-36 of batch 1649424385: two lanes reading two sectors of
    one line into one shared block count one; gemm-2, -34 and -38: a shared block filled from two lines counts
    two. The last case here is both: lanes 48 bytes apart in global memory (8 sectors over 3 lines) into 4 shared
    blocks count 1 + 2 + 1 + 1, where the larger of the global sectors and the shared blocks (the rule before
    the ninth batch) counts 8."""
    prog = ["S2R R0, SR_TID.X", "LDC.64 R2, c[0x0][0x218]", "ULDC.64 UR4, c[0x0][0x208]",
            f"IMAD.WIDE R2, R0, {global_stride:#x}, R2", f"IMAD R6, R0, {shared_stride:#x}, RZ",
            "LDGSTS.E.BYPASS.128 [R6], desc[UR4][R2.64]", "EXIT"]
    m = run(listing(*prog))
    assert m.counts == {"ldgsts": 1} and m.sectors == 4 * per_request    # 4 requests of 8 lanes
    monkeypatch.setattr(Machine, "copy_rule", "max")
    assert run(listing(*prog)).sectors == 4 * max_rule
    narrow = ["S2R R0, SR_TID.X", "LDC.64 R2, c[0x0][0x218]", "ULDC.64 UR4, c[0x0][0x208]", "IMAD.WIDE R2, R0, 0x4, R2",
              f"IMAD R6, R0, {shared_stride:#x}, RZ", "LDGSTS.E [R6], desc[UR4][R2.64]", "EXIT"]
    assert run(listing(*narrow)).sectors == 4                           # 32-bit copies: the global sectors alone


def test_a_misaligned_vector_copy_is_a_fault_with_a_sentence_and_a_failed_trial():
    """A tuner's candidate that aborted the H200 process ('misaligned address', data/h200_anchors.json): 2-float
    cp.async copies into shared rows of k_split=1 float. The emulator names the lane and instruction, and the
    tuner's preflight makes it a failed trial; the recorded kernels, which all ran, never trip the check (the
    slow tests: k_split=2 with vector=4 did run, so no knob rule stands in for the emulator)."""
    from kernels.knobs import knob_class, parse_knobs
    from kernels.tune import preflight
    text = "tile_m=64,tile_n=64,patch_m=16,patch_n=64,k_split=1,cache_a=shared+local,cache_b=shared+local," \
           "vector=2,pipeline=true,stages=3,async_copy=true"
    s = {"M": 64, "N": 64, "K": 64}
    k = parse_knobs("gemm", "cuda", text, knob_class("gemm", "cuda")())        # as given, not validated
    with pytest.raises(sass.Misaligned, match=r"LDGSTS\.E\.64.*not a multiple of 8 bytes.*misaligned address"):
        sass.machine_counts("gemm", s, k)
    assert preflight("gemm", s, k, "cuda").startswith("it would fault on the GPU: ")
    assert preflight("gemm", s, k, "cpu") is None
    assert preflight("gemm", s, preset("gemm", "cuda", "best", s), "cuda") is None


def test_the_alignment_check_sees_one_lane_off_its_boundary():
    ok = run(listing("S2R R0, SR_TID.X", "IMAD.SHL.U32 R2, R0, 0x8, RZ", "STS.64 [R2], RZ", "EXIT"))
    assert ok.counts["shared_st"] == 1
    with pytest.raises(sass.Misaligned, match="thread 1 of block 0 accesses shared memory"):
        run(listing("S2R R0, SR_TID.X", "IMAD.SHL.U32 R2, R0, 0x4, RZ", "STS.64 [R2], RZ", "EXIT"))


@pytest.mark.parametrize("mode, loads", [("ANY", 1), ("ALL", 2)])
def test_voteu_gives_each_warp_one_predicate_over_its_lanes(mode, loads):
    # P0 is set in lanes 40-95: warp 0 has none of them, warp 1 some, warp 2 all. A warp branches past the load
    # where ANY (ALL) of its lanes has P0, as nvcc ends the k loop of a split-K GEMM whose k_blocks does not
    # divide K
    m = run(listing("S2R R0, SR_TID.X", "ISETP.GE.AND P0, PT, R0, 0x28, PT", f"VOTEU.{mode} UP0, P0",
                    "@UP0 BRA `(T)", "LDS R2, [RZ]", "T:", "EXIT"), block=96)
    assert m.counts["shared_ld"] == loads


def test_a_shared_stage_over_the_limit_is_refused_with_its_cause_and_fix():
    """Valid knobs whose shared stage TVM sized to the whole signal (a tile remainder meets several k tiles with
    few threads; 10 draws of held-out batch 843420274): ptxas refuses it, and the sentence says why and what to do."""
    s = {"M": 32768, "N": 256}
    k = resolve("conv1d", "cuda", s, None, "tile=32,patch=32,k_split=64,cache_a=shared,cache_w=shared,cache_c=local")
    with pytest.raises(toolchain.ToolchainError, match=r"needs 130\.2 KB of shared memory per block, over the 48 KB"):
        sass.machine_counts("conv1d", s, k)
    assert "use a tile that divides the axis" in toolchain.refusal(
        "ptxas error   : Entry function 'main_kernel' uses too much shared data (0x20900 bytes, 0xc000 max)")
    assert toolchain.refusal("error: something else") == "NVRTC refused the kernel's CUDA source: error: something else"
