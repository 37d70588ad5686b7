"""The experiment plans (bench/plans/*.toml) and the data they made: every plan loads and names a data file, every
data file is named by one plan and its command names that plan, every command a plan runs is a tool that is
there and takes those arguments, and a small CPU plan runs end to end through bench/run.py. CPU only."""
from __future__ import annotations

import csv
import importlib
import importlib.util
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from bench import run

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
PLANS = sorted((ROOT / "bench" / "plans").glob("*.toml"))
# Plans written whose data file may not be made yet (take a name out once its data file is committed).
NOT_YET_RUN: set[str] = {"h100_alike_judge", "h100_gemm_sync_copies"}      # plans written before their GPU session


def _plans() -> dict[str, dict]:
    return {p.stem: run.load(str(p)) for p in PLANS}


def _data_files() -> list[Path]:
    return sorted(p for p in DATA.iterdir() if p.is_file() and p.suffix in (".json", ".csv"))


def _commands(plan: dict) -> list[list[str]]:
    """Each command line a plan runs, split as bench/run.py splits it ({out} and each entry filled in)."""
    out = []
    for s in plan["steps"]:
        for e in s.get("each", [{}]):
            out.append(shlex.split(s["cmd"].format(out="/tmp/OUT", **e)))
    return out


def _module(argv: list[str]) -> tuple[str, list[str]]:
    """`python3 -m MOD ARGS..` -> (MOD, ARGS)."""
    assert Path(argv[0]).name in ("python", "python3") and argv[1] == "-m", argv[:3]
    return argv[2], argv[3:]


def test_there_are_plans_and_each_loads_without_a_problem():
    assert len(PLANS) >= 20
    for stem, plan in _plans().items():
        assert plan["device"] in run.KINDS and plan["steps"], stem
        assert plan["title"].strip() and plan["data"].startswith("data/"), stem


def test_every_plan_names_its_own_data_file_and_it_exists():
    plans = _plans()
    for stem, plan in plans.items():
        assert Path(plan["data"]).stem == stem, f"{stem}.toml writes {plan['data']}: a plan is named after its data"
        assert (ROOT / plan["data"]).exists() or stem in NOT_YET_RUN, f"{plan['data']} does not exist"


def test_every_data_file_is_named_by_exactly_one_plan():
    named = [plan["data"] for plan in _plans().values()]
    for f in _data_files():
        assert named.count(f"data/{f.name}") == 1, f"{f.name} is named by {named.count(f'data/{f.name}')} plans"
    assert not (DATA / "heldout").is_file()      # data/heldout/ is bench/heldout.py's, outside the plans


def _recorded_commands(doc, top=True):
    """Every `command` a data document records (a plan's steps record their commands as `cmd`, and their tools'
    outputs are the tools' own)."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k == "command":
                yield v
            elif not (k == "steps" and "plan" in doc):
                yield from _recorded_commands(v, False)
    elif isinstance(doc, list):
        for v in doc:
            yield from _recorded_commands(v, False)


def test_each_data_file_s_command_names_its_plan():
    plans = _plans()
    for f in _data_files():
        stem = f.stem
        want = f"python -m bench.run bench/plans/{stem}.toml"
        if f.suffix == ".csv":
            rows = list(csv.DictReader(open(f)))
            commands = [r["command"] for r in rows]
            assert all(r["originally"] for r in rows)
        else:
            doc = json.load(open(f))
            commands = list(_recorded_commands(doc))
            assert doc["command"].startswith(want), f.name        # the file's own command, at its top
            if "plan" in doc:                                      # written by bench/run.py
                assert doc["plan"] == f"bench/plans/{stem}.toml"
        assert commands, f.name
        n = len(plans[stem]["steps"])
        for c in commands:
            assert c == want or c.startswith(want + " --steps "), (f.name, c)
            if "--steps" in c:
                assert all(1 <= int(x) <= n for x in c.split("--steps ")[1].split(",")), (f.name, c)


def test_rewritten_commands_keep_what_ran_under_originally():
    """A data file made before the plans keeps each device run's own command beside the plan's (`originally`);
    where the file had no command of its own at the top, its runs keep theirs."""
    def with_command(d):
        if isinstance(d, dict):
            if "command" in d:
                yield d
            for v in d.values():
                yield from with_command(v)
        elif isinstance(d, list):
            for v in d:
                yield from with_command(v)
    n = 0
    for f in _data_files():
        doc = json.load(open(f)) if f.suffix == ".json" else {}
        if "plan" in doc or not doc:
            continue
        for d in with_command(doc):
            assert "originally" in d or (d is doc and '"originally"' in json.dumps(doc)), (f.name, d.get("command"))
            n += 1
    assert n >= 50


def test_every_module_a_plan_runs_is_importable_and_takes_the_plan_s_arguments():
    helped: set[tuple[str, str]] = set()
    checked = 0
    for stem, plan in _plans().items():
        for argv in _commands(plan):
            mod, args = _module(argv)
            assert importlib.util.find_spec(mod) is not None, (stem, mod)
            m = importlib.import_module(mod if mod != "kernels" else "kernels.__main__")
            if hasattr(m, "parser"):                      # this project's bench tools: parse exactly these args
                try:
                    m.parser().parse_args(args)
                except SystemExit as e:
                    pytest.fail(f"{stem}: {mod} does not take {args[:4]}...: exit {e.code}")
                checked += 1
            else:                                         # others: the subcommand's --help
                sub = args[0] if args and not args[0].startswith("-") else ""
                helped.add((mod, sub))
    for mod, sub in sorted(helped):
        p = subprocess.run([sys.executable, "-m", mod, *([sub] if sub else []), "--help"], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, (mod, sub, p.stderr[-500:])
    assert checked > 40


def _variant_specs(args: list[str]) -> list[str]:
    """The VARIANT arguments of a bench.variants or bench.ncu gemm command line (and --base / --variant)."""
    out, skip = [], False
    for i, a in enumerate(args):
        if skip:
            skip = False
            continue
        if a in ("--base", "--variant"):
            out.append(args[i + 1])
            skip = True
        elif a.startswith("--"):
            skip = a not in ("--no-reference", "--pc-sampling", "--candidates", "--rows")
        elif i > 0:
            out.append(a)
    return out


def test_every_variant_and_kernel_a_plan_names_is_well_formed():
    """Catalogue names exist; knob text parses (names and values of real knobs: a typo fails here, not on the
    GPU); every kernel of an Nsight Compute step resolves and validates at its shape."""
    from kernels.knobs import parse_knobs, resolve
    from bench import h200, ncu
    from bench import variants as V
    n = 0
    for stem, plan in _plans().items():
        for argv in _commands(plan):
            mod, args = _module(argv)
            if mod == "bench.variants" or (mod == "bench.ncu" and args[0] == "gemm"):
                target = "cpu" if "--target" in args and args[args.index("--target") + 1] == "cpu" else "cuda"
                op = args[args.index("--op") + 1] if "--op" in args else "gemm"
                for v in _variant_specs(args):
                    name, spec = V.parse(v)
                    if spec is None:
                        assert name in V.PRESETS or name in V.CANDIDATES[op], (stem, name)
                    else:
                        text, extra = V.split_spec(spec)
                        parse_knobs(op, target, text)
                        assert set(extra) <= {"copies_at", "dynamic_shared", "splitk"}
                    n += 1
                a = V.parser().parse_args(args) if mod == "bench.variants" else ncu.parser().parse_args(args)
                sizes = getattr(a, "sizes", None)           # `mix` takes shapes only
                if sizes or a.shapes:
                    assert V.shapes_arg(sizes, a.shapes, op)
            elif mod == "bench.ncu" and args[0] == "counters":
                for k in ncu.parser().parse_args(args).kernel:
                    it = ncu.kernel_spec(k)
                    resolve(it["op"], "cuda", it["shape"], it["preset"], it["knobs"])
                    n += 1
            elif mod == "bench.h200" and args[0] == "table":
                a = h200.parser().parse_args(args)
                for op, named in h200.named_variants(a.candidates, a.only.split(",") if a.only else None,
                                                     a.variant).items():
                    for text in named.values():
                        parse_knobs(op, "cuda", text)
                        n += 1
    assert n > 300


def test_the_plans_reproduce_the_kernels_their_data_recorded():
    """Where a plan pins what ran (the Nsight Compute kernels, the k-major variants over the 8x4 tiles), the knobs
    it builds today are the knobs the data file recorded."""
    from dataclasses import replace
    from kernels.knobs import parse_knobs, resolve
    from bench import ncu
    from bench import variants as V

    def same(a, b, s):
        unpad = (lambda k: replace(k, pad_tiles=False) if getattr(k, "pad_tiles", False) and not (
            s["M"] % k.tile_m or s["N"] % k.tile_n) else k)
        return unpad(a) == unpad(b)
    plans = _plans()
    rows = list(csv.DictReader(open(DATA / "ncu_h200.csv")))
    for r in rows:
        step = int(r["command"].split("--steps ")[1])
        argv = _commands(plans["ncu_h200"])[step - 1]
        kernels = [ncu.kernel_spec(k) for k in ncu.parser().parse_args(_module(argv)[1]).kernel]
        s = json.loads(r["shape"])
        built = [resolve(k["op"], "cuda", k["shape"], k["preset"], k["knobs"]) for k in kernels
                 if k["op"] == r["op"] and k["shape"] == s]
        # conv1d's best pads since 2026-12-07 (knobs.conv1d_pads_whole); these kernels ran before it did
        built += [replace(k, pad_tiles=False) for k in built if r["op"] == "conv1d" and k.pad_tiles]
        assert parse_knobs(r["op"], "cuda", r["knobs"]) in built, (step, r["op"], s)
    km = json.load(open(DATA / "h200_kmajor.json"))
    for i, run_ in enumerate(km["runs"]):
        a = V.parser().parse_args(_module(_commands(plans["h200_kmajor"])[i])[1])
        specs = dict(V.parse(v) for v in a.variants)
        for row in run_["shapes"]:
            for name, r in row["runs"].items():
                k = V.knobs_of(name, specs[name], row["shape"], a.over)
                assert same(parse_knobs("gemm", "cuda", r["knobs"]), k, row["shape"]), (i + 1, name)


def test_run_list_names_every_plan_and_no_problem():
    p = subprocess.run([sys.executable, "-m", "bench.run", "--list"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0 and "PROBLEM" not in p.stdout
    assert {line.split()[0] for line in p.stdout.splitlines() if line.strip()} == {p.stem for p in PLANS}


def test_a_device_plan_prints_the_command_for_the_gpu_machine():
    p = subprocess.run([sys.executable, "-m", "bench.run", "h200_kmajor", "--print"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0 and "python3 -m bench.run bench/plans/h200_kmajor.toml --out $OUT" in p.stdout
    assert "bench/bundle.sh" in p.stdout
    assert '1. carry [".tvmslim/libtvm_compiler.so.xz", ".tvmslim/install.sh"]' in p.stdout    # the bundle's two calls
    assert "copy files_at/data/h200_kmajor.json to data/h200_kmajor.json" in p.stdout
    p = subprocess.run([sys.executable, "-m", "bench.run", "h200_suite", "--steps", "1,2", "--print"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "bench/plans/h200_suite.toml --steps 1,2 --out $OUT" in p.stdout


def test_a_step_the_plan_does_not_have_is_a_usage_error_not_a_run_of_nothing():
    p = subprocess.run([sys.executable, "-m", "bench.run", "cpu_ms_suite", "--steps", "5"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "names a step the plan does not have: it has 4" in p.stderr


# ---------------------------------------------------------------- the tools' own logic, on the data
def test_merging_the_recorded_table_again_changes_nothing():
    from bench import h200
    doc = json.load(open(DATA / "h200_bench.json"))
    merged = h200.merge(h200.tables_in(doc))
    assert merged["rows"] == doc["rows"]
    assert [r["best_run"] for r in merged["rows"]] == [r["best_run"] for r in doc["rows"]]


def test_merge_keeps_the_runs_a_later_table_did_not_repeat_and_dates_each():
    from bench import h200
    first = {"date": "d1", "device": "X", "versions": "v", "rows": [
        {"op": "gemm", "shape": {"M": 1024, "N": 1024, "K": 1024}, "goal": 1.2, "reference": {"median_ms": 1.0},
         "runs": {"a": {"median_ms": 2.0}, "b": {"median_ms": 3.0}}}]}
    later = {"date": "d2", "rows": [dict(first["rows"][0], reference={"median_ms": 0.9},
                                         runs={"b": {"median_ms": 2.5}})]}
    run_doc = {"plan": "bench/plans/x.toml", "steps": [{"output": first}, {"output": "text"}, {"output": later}]}
    m = h200.merge(h200.tables_in(run_doc))
    row = m["rows"][0]
    assert row["reference"] == {"median_ms": 0.9} and row["started"] == "d2"
    assert row["runs"]["a"] == {"median_ms": 2.0, "started": "d1"} and row["runs"]["b"]["started"] == "d2"


def test_picks_from_the_recorded_table_name_verified_runs():
    from bench import h200
    picks = h200.pick(json.load(open(DATA / "h200_bench.json")))
    assert {"gemm", "conv1d", "conv1d/few", "dwconv2d", "dwsep_conv2d"} <= set(picks)
    assert all(p["knobs"] and p["median_ms"] > 0 for p in picks.values())


def test_variant_specs_split_into_knobs_and_what_no_knob_offers():
    from bench import variants as V
    assert V.parse("best") == ("best", None) and V.parse("best=") == ("best", "")
    assert V.split_spec("stages=3,copies_at=0.5") == ("stages=3", {"copies_at": 0.5})
    assert V.split_spec("k_split=64,dynamic_shared=true") == ("k_split=64", {"dynamic_shared": True})
    assert V.split_spec("splitk=2,k_split=32,tile_n=32") == ("", {"splitk": {"G": 2, "KT": 32, "TN": 32}})
    with pytest.raises(ValueError):
        V.split_spec("splitk=2,cache_a=local")
    s = {"M": 1024, "N": 1024, "K": 1024}
    k = V.knobs_of("x", "one_barrier=false", s, "few-outputs")
    assert k == V.knobs_of("g64p8x4k32a", None, s)          # best before one_barrier: the catalogue's entry


def test_ncu_names_kernels_in_launch_order():
    from bench import ncu
    s = {"M": 4096, "N": 4096, "K": 4096}
    launched = [{"who": "a", "shape": s}, {"who": "b", "shape": s}, {"who": "cuBLAS", "shape": s}]
    log = [{"kernel": "main_kernel", "x": 1.0}, {"kernel": "main_kernel", "x": 2.0},
           {"kernel": "sm90_xmma_gemm", "x": 3.0}]
    assert [k["who"] for k in ncu.named(log, launched)] == ["a", "b", "cuBLAS"]
    assert ncu.kernel_spec("gemm:M=1000,N=1024,K=1000:best:stages=3") == {
        "op": "gemm", "shape": {"M": 1000, "N": 1024, "K": 1000}, "preset": "best", "knobs": "stages=3"}
    with pytest.raises(ValueError):
        ncu.kernel_spec("gemm:M=1000")


# ---------------------------------------------------------------- a plan, run
def test_a_small_cpu_plan_runs_and_writes_its_data_file(tmp_path, monkeypatch):
    from bench import h200
    from bench.variants import CANDIDATES
    plan_file = tmp_path / "bench" / "plans" / "tiny.toml"
    plan_file.parent.mkdir(parents=True)
    plan_file.write_text(f'''title = "the catalogue and the picks, on this machine"
device = "cpu"
data = "data/tiny.json"
note = "a test"

[[steps]]
name = "catalogue {{op}}"
cmd = "python -m bench.variants list --op {{op}}"
each = [{{op = "conv1d"}}, {{op = "dwconv2d"}}]

[[steps]]
name = "picks"
cmd = "python -m bench.h200 pick {ROOT / 'data' / 'h200_bench.json'} --out {{out}}/picks.json"
file = "picks.json"
''')
    monkeypatch.setattr(run, "ROOT", tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    plan = run.load(str(plan_file))
    doc = run.run(plan, echo=lambda *a, **k: None)
    written = json.load(open(tmp_path / "data" / "tiny.json"))
    assert written == json.loads(json.dumps(doc, default=str))
    assert written["command"] == "python -m bench.run bench/plans/tiny.toml" and written["date"]
    assert written["device"] and written["plan"] == "bench/plans/tiny.toml" and written["note"] == "a test"
    steps = written["steps"]
    assert [s["step"] for s in steps] == [1, 1, 2] and all(s["rc"] == 0 for s in steps), steps
    assert steps[0]["output"] == {"conv1d": CANDIDATES["conv1d"]}
    assert steps[1]["output"] == {"dwconv2d": CANDIDATES["dwconv2d"]} and steps[1]["each"] == {"op": "dwconv2d"}
    assert steps[2]["output"] == h200.pick(json.load(open(ROOT / "data" / "h200_bench.json")))
    # a later call of one step keeps the other steps' outputs and says when the earlier call was
    again = run.run(plan, steps=[1], echo=lambda *a, **k: None)
    assert [s["step"] for s in again["steps"]] == [2, 1, 1] and again["earlier"][0]["date"] == written["date"]
    assert again["command"].endswith("--steps 1")


def _bundle_part(folder, name, files: dict):
    """A stand-in for one of .tvmslim's archives: files (name -> text) packed as bundle.sh packs them."""
    src = folder / ("src-" + name)
    for f, text in files.items():
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        (src / f).write_text(text)
    subprocess.run(["tar", "-C", str(src), "-cJf", str(folder / name), "."], check=True)


def test_the_tvm_bundle_installs_in_two_calls_and_says_what_to_do_when_the_machine_was_given_back(tmp_path):
    import shutil
    site, first, second = tmp_path / "site", tmp_path / "call1" / ".tvmslim", tmp_path / "call2" / ".tvmslim"
    env = {**os.environ, "KERNEL_LAB_SITE": str(site)}
    sh = lambda folder: subprocess.run(["bash", str(folder / "install.sh")], env=env, capture_output=True,  # noqa
                                       text=True, timeout=60)
    for d in (first, second):
        d.mkdir(parents=True)
        shutil.copy(ROOT / "bench" / "install_tvm.sh", d / "install.sh")
    subprocess.run(f"printf compiler | xz > {first}/libtvm_compiler.so.xz", shell=True, check=True)
    _bundle_part(second, "site.tar.xz", {"tvm_ffi/__init__.py": "ffi"})
    _bundle_part(second, "tvm-py.tar.xz", {"tvm/__init__.py": "tvm", "tvm/lib/libtvm_runtime.so": "rt"})
    p = sh(second)                      # the second call alone: nothing staged, one sentence, no install
    assert p.returncode == 3 and "libtvm_compiler.so.xz" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert not (site / "tvm" / "__init__.py").exists()
    p = sh(first)                       # the first call stages the compiler library and says what comes next
    assert p.returncode == 0 and "staged" in p.stderr
    assert (site / "tvm/lib/libtvm_compiler.so.part").read_text() == "compiler"
    assert not (site / "tvm/lib/libtvm_compiler.so").exists()
    assert sh(second).returncode == 0   # the second finishes it
    assert (site / "tvm/lib/libtvm_compiler.so").read_text() == "compiler"
    assert (site / "tvm/__init__.py").read_text() == "tvm" and (site / "tvm_ffi/__init__.py").read_text() == "ffi"
    assert (site / "tvm/relax/frontend/__init__.py").exists()
    assert sh(tmp_path / "call2" / ".tvmslim").returncode == 0          # installed: a later call skips it
    xgb = tmp_path / "x" / ".xgbslim"
    xgb.mkdir(parents=True)
    shutil.copy(ROOT / "bench" / "install_xgb.sh", xgb / "install.sh")
    _bundle_part(xgb, "site.tar.xz", {"xgboost/__init__.py": "xgb"})
    assert sh(xgb).returncode == 0 and (site / "xgboost/__init__.py").read_text() == "xgb"
    p = subprocess.run(["bash", str(xgb / "install.sh")], capture_output=True, text=True, timeout=60,
                       env={**env, "KERNEL_LAB_SITE": str(tmp_path / "fresh")})
    assert p.returncode == 3 and "TVM is not installed" in p.stderr      # a machine given back: says so


def test_the_instruction_mix_takes_variants_or_measured_settings_and_says_which_when_given_both():
    from bench import variants
    for argv in (["mix", "--op", "conv1d", "--shapes", "1024x3", "--measured", "data/h200_bench.json", "best"],
                 ["mix", "--op", "conv1d", "--shapes", "1024x3"]):
        p = subprocess.run([sys.executable, "-m", "bench.variants", *argv], cwd=ROOT, capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 2 and p.stdout == "" and "VARIANT" in p.stderr.strip().splitlines()[-1]
    p = subprocess.run([sys.executable, "-m", "bench.variants", "mix", "--shapes", "64x64x64", "best"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)          # GEMM, the default operator
    assert p.returncode == 0, p.stderr
    run = json.loads(p.stdout)["shapes"][0]["runs"]["best"]
    assert run["ffma"] > 0 and 0 < run["ffma_share"] < 1 and run["instructions"] > run["ffma"]
    # a variant that does not fit one shape is recorded there with its sentence; the others are still counted
    doc = variants.mix_variants(["best", "k112=k_split=112"], [{"M": 1000, "N": 24}, {"M": 1000, "N": 200}],
                                "best", "conv1d")
    small, big = (r["runs"] for r in doc["shapes"])
    assert "k_split=112 is larger than N=24" in small["k112"]["error"] and small["best"]["ffma"] > 0
    assert big["k112"]["knobs"].count("k_split=112") == 1 and big["k112"]["ffma"] > 0
    got = variants.measured_rows([str(ROOT / "data" / "h200_bench.json")], "conv1d", {"M": 1048576, "N": 1024})
    assert len(got) > 10 and all(ms > 0 for ms in got.values())
    assert variants.measured_rows([str(ROOT / "data" / "h200_bench.json")], "conv1d", {"M": 7, "N": 3}) == {}
