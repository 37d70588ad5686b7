"""fpga knobs: each rule's sentence names the buffer or knob and the fix; an overflow is reported, never
crashed on; the command line runs the target like the others (simulated time, bytes per level, lowered TIR)."""
from __future__ import annotations

import json

import pytest

from kernels import fpga
from kernels.__main__ import main
from kernels.knobs import KnobError, resolve

GEMM = {"M": 64, "N": 64, "K": 256}


def problems(op, shape, text) -> str:
    with pytest.raises(KnobError) as e:
        resolve(op, "fpga", shape, None, text)
    return " ".join(e.value.problems)


def test_input_buffer_fails_when_tile_overflows():
    assert problems("gemm", GEMM, "tile_m=64,tile_k=256") == (
        "The input buffer would hold 16,384 floats (64.0 KiB), 32.0 KiB over its 32 KiB; lower tile_m or tile_k.")


def test_input_buffer_fails_when_double_buffered_tile_overflows():
    msg = problems("gemm", {"M": 64, "N": 64, "K": 512}, "tile_m=64,tile_k=128,double_buffer=true")
    assert msg == ("The input buffer would hold 16,384 floats (64.0 KiB, two copies for double buffering), 32.0 KiB "
                   "over its 32 KiB; lower tile_m or tile_k, or turn off double_buffer.")
    resolve("gemm", "fpga", {"M": 64, "N": 64, "K": 512}, None, "tile_m=64,tile_k=128,double_buffer=false")


def test_accumulator_fails_when_resident_weights_need_every_row():
    msg = problems("gemm", {"M": 4096, "N": 64, "K": 64}, "tile_m=16,tile_n=64,resident=wgt")
    assert msg.startswith("The accumulator would hold 262,144 floats (1024.0 KiB), 896.0 KiB over its 128 KiB;")
    assert "resident=acc" in msg


def test_tile_fails_when_not_a_multiple_of_the_core():
    assert problems("gemm", GEMM, "tile_n=24") == (
        "tile_n=24 is not a multiple of the GEMM core's BLOCK_OUT=16; use 16 or 32.")


def test_tile_k_fails_when_kernel_tile_is_partial():
    msg = problems("conv1d", {"M": 100, "N": 40}, "tile_k=16")
    assert msg.startswith("tile_k=16 leaves a partial last kernel tile (N=40 is not a multiple of 16)")
    assert msg.endswith("covers N (48).")


def test_simulation_reports_overflow_instead_of_crashing():
    """Knobs built without validation (as a page's widgets build them) get the sentence from the simulator."""
    from kernels.fpga.knobs import GemmFpga
    with pytest.raises(KnobError) as e:
        fpga.simulate("gemm", GEMM, GemmFpga(tile_m=64, tile_n=64, tile_k=256, double_buffer=False))
    assert e.value.problems[0].startswith("The input buffer would hold 16,384 floats")


def test_presets_fit_the_buffers_at_every_named_size():
    from kernels.ops import OPS
    for op in ("gemm", "conv1d"):
        for size in OPS[op].sizes.values():
            for name in ("baseline", "naive", "seed", "best"):
                resolve(op, "fpga", size, name)


def test_cli_run_prints_simulated_time(capsys):
    main(["run", "--op", "gemm", "--shape", "M=33,N=10,K=16", "--target", "fpga", "--preset", "seed"])
    out = capsys.readouterr().out
    assert "SIMULATED" in out and "cycles at 100 MHz" in out and "ok" in out and "busy cycles: load" in out


def test_cli_run_json_is_marked_simulated(capsys):
    main(["run", "--op", "conv1d", "--shape", "M=100,N=10", "--target", "fpga", "--json"])
    r = json.loads(capsys.readouterr().out)
    assert r["simulated"] is True and "simulated" in r["device"] and r["ok"] is True
    assert r["median_ms"] == pytest.approx(r["cycles"]["ms"])
    for key in ("op", "shape", "target", "device", "knobs", "median_ms", "gflops", "gbps", "rel_err", "ok"):
        assert key in r


def test_cli_traffic_prints_bytes_per_level(capsys):
    main(["traffic", "--op", "gemm", "--shape", "M=33,N=10,K=16", "--target", "fpga", "--json"])
    t = json.loads(capsys.readouterr().out)
    assert set(t["bytes_per_buffer"]) == {"DRAM", "input buffer", "weight buffer", "accumulator"}
    assert t["levels"] == {"global": "DRAM", "shared": "on-chip buffer", "register": "GEMM-core registers"}
    assert t["core_ops"] > 0 and t["simulated"] is True


def test_cli_source_prints_lowered_tir(capsys):
    main(["source", "--op", "conv1d", "--shape", "M=100,N=10", "--target", "fpga"])
    assert 'scope="local.inp_buffer"' in capsys.readouterr().out


def test_cli_run_fails_when_buffer_overflows(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "--op", "gemm", "--shape", "M=64,N=64,K=256", "--target", "fpga",
              "--knobs", "tile_m=64,tile_k=256"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: The input buffer would hold 16,384 floats")
