"""The recorded-runs table and the summaries drawn from it (pure pandas: any numbers can be fed in)."""
import pandas as pd

from kernels import knobs as K
from pages._parts import recorded as R
from pages._parts import walk as W

GEMM = {"M": 1024, "N": 1024, "K": 1024}


def _scopes(local: float, shared: float, op="gemm", shape="M=1024,N=1024,K=1024", device="GPU X", date="2026-01-01"):
    return pd.DataFrame({"device": device, "date": date, "run": f"{device} {date}", "target": "cuda", "op": op,
                         "shape": shape, "name": ["seed-local", "seed-shared"], "median_ms": [local, shared],
                         "ok": True, "knobs": ["k1", "k2"]})


def test_every_shipped_run_is_one_row_with_its_table():
    df = R.bench_runs()
    assert len(df) > 100 and set(df["source"]) == {"data/h200_bench.json", "data/h200_tuning_1.json"}
    first = df[df["source"] == "data/h200_tuning_1.json"]
    assert (first["reference_timing"] == R.NO_GRAPH).all()         # pass 1 is labelled as such
    assert first["run"].str.contains("without CUDA graphs").all()
    assert df["gflops"].notna().sum() == df["median_ms"].notna().sum()


def test_find_matches_exact_knobs_only():
    df = R.bench_runs()
    seed = K.preset("gemm", "cuda", "seed", GEMM)
    assert {"seed", "seed-local"} <= set(R.find(df, "gemm", GEMM, seed)["name"])
    big = {"M": 4096, "N": 4096, "K": 4096}
    assert R.find(df, "gemm", big, W.knobs(W.STEPS[3], big)).empty    # walk-3 was timed at 1024^3 only


def test_the_level_sentence_says_which_won_and_by_how_much():
    t = R.level_table(_scopes(local=2.0, shared=1.0))
    assert t.loc[0, "winner"] == "shared" and t.loc[0, "factor"] == 2.0
    s = R.level_sentence(t)
    assert "shared memory beat registers for GEMM" in s and "2.00x" in s and "opposite of the seed" in s


def test_the_level_sentence_changes_with_the_data():
    a = R.level_sentence(R.level_table(_scopes(local=2.0, shared=1.0)))
    b = R.level_sentence(R.level_table(_scopes(local=1.0, shared=3.0)))
    assert a != b
    assert "registers beat shared memory for GEMM" in b and "3.00x" in b and "agrees with the seed" in b


def test_a_split_verdict_names_each_size():
    df = pd.concat([_scopes(1.0, 2.0, "conv1d", "M=1048576,N=1024"), _scopes(2.0, 1.0, "conv1d", "M=1024,N=1024")])
    s = R.level_sentence(R.level_table(df))
    assert "conv1d was split" in s and "M=N=1024" in s and "M=1048576,N=1024" in s


def test_only_the_latest_table_of_each_device_counts():
    df = pd.concat([_scopes(1.0, 2.0, date="2026-01-01"), _scopes(3.0, 1.0, date="2026-02-01")])
    t = R.level_table(df)
    assert len(t) == 1 and t.loc[0, "winner"] == "shared"


def test_speedups_and_roofline_fraction():
    df = pd.DataFrame({"run": "r", "op": "gemm", "shape": "M=1024,N=1024,K=1024", "device": "D",
                       "name": ["baseline", "best"], "median_ms": [10.0, 1.0], "gflops": [100.0, 1000.0]})
    out = R.roofline_fraction(R.speedups(df), {"D": (2000.0, 1000.0)})
    assert list(out["vs_baseline"]) == [1.0, 10.0]
    assert list(out["roof_fraction"]) == [0.05, 0.5]               # gemm 1024^3 is compute-bound at 2000


def test_the_walk_steps_stack_one_decision_each():
    ks = [W.knobs(s, GEMM) for s in W.STEPS]
    assert ks[0] == K.preset("gemm", "cuda", "baseline", GEMM) and ks[4] == K.preset("gemm", "cuda", "seed", GEMM)
    assert [len(W.changed(a, b)) for a, b in zip(ks, ks[1:])] == [4, 3, 3, 1]
    assert (ks[1].tile_m, ks[1].patch_m, ks[2].patch_m, ks[3].k_split, ks[4].vector) == (64, 64, 4, 16, 4)


def test_the_walk_steps_are_queued_for_the_next_device_run():
    from bench.variants import CANDIDATES
    for s in W.STEPS[1:]:
        got = K.resolve("gemm", "cuda", GEMM, None, CANDIDATES["gemm"][f"walk-{s.n}"])
        assert got == W.knobs(s, GEMM)


def test_the_step_sentence_says_time_speed_up_and_what_is_missing():
    times = pd.DataFrame({"n": [2, 3, 2, 3], "device": "GPU X", "date": "2026-01-01", "run": "t",
                          "shape": ["M=N=K=1024"] * 2 + ["M=N=K=4096"] * 2,
                          "median_ms": [2.0, 1.0, 5.0, None], "vs previous step": [None, 2.0, None, None]})
    s = W.time_sentence(times, 3)
    assert s.startswith("On the GPU X at M=N=K=1024 step 3 ran in 1 ms, 2.00x faster than step 2")
    assert "No run is recorded at M=N=K=4096" in s
    assert "No GPU run with exactly step 4's knobs" in W.time_sentence(times, 4)


def test_the_shipped_walk_runs_give_every_step_a_time_at_1024():
    t = W.step_times(R.bench_runs())
    mine = t[(t["run"] == "NVIDIA H200 (h200_bench.json)") & (t["shape"] == "M=N=K=1024")]
    assert list(mine["n"]) == [0, 1, 2, 3, 4] and mine["median_ms"].notna().all()
    assert list(mine["recorded as"]) == ["baseline", "walk-1", "walk-2", "walk-3", "walk-4"]
