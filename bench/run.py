"""The project's one experiment runner: a plan (bench/plans/NAME.toml) says what to run, on which device, and
which data file the outputs become; this runs it, here or on the GPU machine, and writes that file with the
device, the date and the command.

    python -m bench.run PLAN [--steps 1,3] [--out DIR]    run a plan (NAME or path); the data file is written
                                                          under the repository (and a copy under DIR)
        [--deadline-s S]                                  stop a step early so that all ends within S seconds
                                                          (a device call's limit): what the step printed by then
                                                          is recorded, and later steps are not started
    python -m bench.run PLAN --print                      the command line to give the device tool
    python -m bench.run --list                            the plans, one line each, and what is wrong with any

A plan:
    title = "what the experiment asks"
    device = "nvidia-h200"          "cpu" (this machine) or a kind of the device tool's machines
    data = "data/h200_rpc.json"     the file it writes (one plan per data file)
    note = "..."                    anything the reader of the data file should know (optional)
    env = {K = "v"}                 for every step (optional); "" unsets a variable
    [[steps]]                       run in order, each a command of the project's tools
    name = "gemm local"
    cmd = "python3 -m kernels run --op {op} --shape {shape} --target cuda --json"
    each = [{op = "gemm", shape = "M=64,N=64,K=64"}, ...]    the command once per entry, {key} filled in
    env = {...}; timeout_s = 600; background = true (a server the later steps use; stopped at the end)
    wait_s = 5                      seconds to wait after starting it (background steps)
    file = "x.json"                 the step writes {out}/x.json; its content is recorded instead of stdout

Each command's stdout is recorded as JSON when it is JSON (or JSON lines), else as its last lines of text.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLANS = Path(__file__).resolve().parent / "plans"
KINDS = ("cpu", "nvidia-h100-x1", "nvidia-h200", "nvidia-h200-x2", "nvidia-h200-x4", "nvidia-h200-x8")
STEP_KEYS = {"name", "cmd", "each", "env", "timeout_s", "background", "wait_s", "file"}
PLAN_KEYS = {"title", "device", "data", "note", "env", "record", "steps"}
# How the steps' outputs become the data file (the layout its readers, pages and tests, expect):
RECORDS = {
    "steps": "a list of the steps' runs, each with its command, return code, seconds and output (the default)",
    "last": "the last step's output (one JSON document, e.g. a merge of the earlier steps' files), with the plan's "
            "command, date and device added",
    "runs": "the steps' outputs as a list under runs, each with the command that reproduces it (--steps N)",
    "join:KEY": "the first step's output, with the KEY lists of every step's output joined (each entry with the "
                "command that reproduces it)",
    "csv": "the rows of every step's output (output['rows']) as one CSV, each row with its command",
}
DEVICE_PREFIX = "bash .tvmslim/install.sh && bash .xgbslim/install.sh && export PYTHONPATH=/tmp/site:$PYTHONPATH && "
# The TVM bundle and the working tree are over one device call's 64 MiB: the bundle travels in two calls
# (bench/install_tvm.sh), the second the plan's own; later calls on the same warm machine carry the small parts.
CARRY_FIRST = [".tvmslim/libtvm_compiler.so.xz", ".tvmslim/install.sh"]
CARRY_SECOND = [".tvmslim/site.tar.xz", ".tvmslim/tvm-py.tar.xz", ".tvmslim/install.sh", ".xgbslim"]
CARRY_WARM = [".tvmslim/install.sh", ".xgbslim"]


class PlanError(ValueError):
    pass


def path_of(plan: str) -> Path:
    p = Path(plan)
    if p.suffix == ".toml" or p.exists():
        return p.resolve()
    return PLANS / f"{plan}.toml"


def load(plan: str) -> dict:
    """The plan as a dict, checked: one sentence naming the first problem otherwise."""
    path = path_of(plan)
    if not path.exists():
        names = ", ".join(sorted(p.stem for p in PLANS.glob("*.toml")))
        raise PlanError(f"There is no plan {plan}; the plans are: {names}.")
    try:
        d = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise PlanError(f"{path.name} is not valid TOML ({e}); fix the line it names.") from e
    missing = [k for k in ("title", "device", "data", "steps") if k not in d]
    if missing:
        raise PlanError(f"{path.name} needs {', '.join(missing)}; see bench/run.py for a plan's fields.")
    unknown = set(d) - PLAN_KEYS
    if unknown:
        raise PlanError(f"{path.name} has unknown fields {sorted(unknown)}; the fields are {sorted(PLAN_KEYS)}.")
    rec = d.get("record", "steps")
    if rec not in RECORDS and not (rec.startswith("join:") and len(rec) > 5):
        raise PlanError(f"{path.name}: record {rec!r} is not one of {', '.join(RECORDS)}.")
    if (rec == "csv") != str(d["data"]).endswith(".csv"):
        raise PlanError(f"{path.name}: a .csv data file needs record = \"csv\", and record = \"csv\" a .csv file.")
    if d["device"] not in KINDS:
        raise PlanError(f"{path.name}: device {d['device']!r} is not one of {', '.join(KINDS)}.")
    if not str(d["data"]).startswith("data/"):
        raise PlanError(f"{path.name}: data {d['data']!r} must be a file under data/.")
    for i, s in enumerate(d["steps"], 1):
        bad = set(s) - STEP_KEYS
        if bad or "cmd" not in s:
            raise PlanError(f"{path.name} step {i}: needs cmd and knows only {sorted(STEP_KEYS)} (has {sorted(s)}).")
        for e in s.get("each", [{}]):
            try:
                fill(s["cmd"], out="OUT", **e)
            except KeyError as err:
                raise PlanError(f"{path.name} step {i}: {{{err.args[0]}}} in cmd is not in its each entry.") from err
    d["path"] = path
    return d


def fill(text: str, **values) -> str:
    """{name} replaced by its value; other braces (a JSON literal in a command) stay as they are."""
    def one(m):
        if m.group(1) not in values:
            raise KeyError(m.group(1))
        return str(values[m.group(1)])
    return re.sub(r"\{([A-Za-z_]\w*)\}", one, text)


def rel(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def command(plan: dict) -> str:
    return f"python -m bench.run {rel(plan['path'])}"


def device_command(plan: dict, steps: str | None = None) -> str:
    """What to give the device tool (after the call that stages the bundle: device_calls), or to run here for a CPU
    plan."""
    only = f" --steps {steps}" if steps else ""
    if plan["device"] == "cpu":
        return command(plan) + only
    return DEVICE_PREFIX + f"python3 -m bench.run {rel(plan['path'])}{only} --out $OUT"


def device_calls(plan: dict) -> str:
    """How the command reaches the GPU machine: the bundle's two calls, then what to copy back."""
    q = lambda paths: "[" + ", ".join(f'"{p}"' for p in paths) + "]"      # noqa: E731
    return (f"(device tool, built once by bash bench/bundle.sh; two calls, the second within 30 s of the first, as the "
            f"TVM bundle and the working tree are over one call's 64 MiB (bench/install_tvm.sh):\n"
            f"  1. carry {q(CARRY_FIRST)}, command: bash .tvmslim/install.sh\n"
            f"  2. carry {q(CARRY_SECOND)}, the command above;\n"
            f"  a later call on the same warm machine carries {q(CARRY_WARM)}.\n"
            f" Give the call's timeout_s to --deadline-s as well (less the install's half a minute on a fresh machine):"
            f" a step still running then is stopped and what it printed comes back, where the call's own limit would"
            f" return nothing.\n"
            f" Then copy files_at/{plan['data']} to {plan['data']}, before the call of another step: a call of some "
            f"steps keeps the other steps' runs that the file it finds holds.)")


def _env(*layers: dict) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(x for x in (str(ROOT), env.get("PYTHONPATH", "")) if x)
    for layer in layers:
        for k, v in layer.items():
            if v == "":
                env.pop(k, None)
            else:
                env[k] = str(v)
    return env


def parse_output(text: str):
    """stdout as JSON, JSON lines, or its last 40 lines of text."""
    text = text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    lines = [ln for ln in text.splitlines() if ln.strip()]
    try:
        return [json.loads(ln) for ln in lines]
    except json.JSONDecodeError:
        return "\n".join(lines[-40:])


def device_name(device: str) -> str:
    """The machine the plan ran on, as the kernels name it."""
    try:
        from kernels import build
        return build.device_name("cpu" if device == "cpu" else "cuda")
    except Exception as e:          # noqa: BLE001 - the name is information, never a reason to lose the run
        return f"{device} (name unknown: {type(e).__name__})"


def blas_under(env: dict):
    """threadpoolctl's view of numpy's BLAS in a Python started with `env` (bench.anchors.blas: its kernel, e.g.
    SkylakeX or Haswell, its threads, and the two OpenBLAS variables); a sentence when it cannot be read."""
    p = subprocess.run([sys.executable, "-c", "import json; from bench.anchors import blas; print(json.dumps(blas()))"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    if p.returncode:
        lines = p.stderr.strip().splitlines()
        return f"not read: {lines[-1] if lines else f'exit code {p.returncode}'}"
    return json.loads(p.stdout)


# what a deadline keeps back for writing the data file after a step it stopped
DEADLINE_MARGIN_S = 10.0


def run(plan: dict, steps: list[int] | None = None, out: Path | None = None, echo=print,
        deadline_s: float | None = None) -> dict:
    """Run the plan's steps (all, or those numbered), writing the data file after each, and return its content.
    With `deadline_s`, a step that would run past it (less DEADLINE_MARGIN_S) is stopped there, what it printed
    so far recorded (a suite's rows up to then), and the steps after it are not started."""
    t_run = time.perf_counter()

    def left() -> float | None:
        return None if deadline_s is None else deadline_s - DEADLINE_MARGIN_S - (time.perf_counter() - t_run)
    scratch = Path(tempfile.mkdtemp(prefix="plan-"))
    doc = {"title": plan["title"], "plan": rel(plan["path"]), "device": device_name(plan["device"]),
           "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
           "command": command(plan) + (f" --steps {','.join(map(str, steps))}" if steps else ""),
           **({"note": plan["note"]} if plan.get("note") else {}), "steps": []}
    try:
        from kernels import build
        doc["versions"] = build.versions()
    except Exception:               # noqa: BLE001
        pass
    if plan["device"] == "cpu":         # which BLAS numpy runs under the plan's environment (its SGEMM kernel)
        doc["blas"] = blas_under(_env(plan.get("env", {})))
    doc["partial"] = bool(steps)
    if steps and (ROOT / plan["data"]).exists() and plan.get("record", "steps") == "steps":
        # a later call of some steps keeps the other steps' runs
        try:
            old = json.loads((ROOT / plan["data"]).read_text())
            if old.get("plan") == doc["plan"]:
                doc["steps"] = [r for r in old.get("steps", []) if r.get("step") not in steps]
                doc["earlier"] = old.get("earlier", []) + [{k: old[k] for k in ("date", "command", "device")
                                                            if k in old}]
        except (OSError, json.JSONDecodeError):
            pass
    servers: list[subprocess.Popen] = []
    try:
        for n, s in enumerate(plan["steps"], 1):
            if steps and n not in steps and not s.get("background"):
                continue
            env = _env(plan.get("env", {}), s.get("env", {}))
            for e in s.get("each", [{}]):
                cmd = fill(s["cmd"], out=scratch, **e)
                name = fill(s.get("name", f"step {n}"), **e)
                if left() is not None and left() < 1:
                    echo(f"[{n}] {name}: not started, the deadline ({deadline_s:.0f} s) is reached", flush=True)
                    continue
                echo(f"[{n}] {name}: {cmd}", flush=True)
                if s.get("background"):
                    log = scratch / f"background-{n}.log"
                    servers.append(subprocess.Popen(shlex.split(cmd), cwd=ROOT, env=env, start_new_session=True,
                                                    stdout=log.open("w"), stderr=subprocess.STDOUT))
                    time.sleep(float(s.get("wait_s", 3)))
                    if servers[-1].poll() is not None:      # it should still be serving
                        tail = "\n".join(log.read_text().strip().splitlines()[-15:])
                        doc["steps"].append({"step": n, "name": name, "cmd": cmd, "rc": servers[-1].returncode,
                                             "seconds": float(s.get("wait_s", 3)), "output": None, "stderr": tail})
                        echo(f"    it exited (rc {servers[-1].returncode}): {tail.splitlines()[-1] if tail else ''}")
                    continue
                doc["steps"].append(_one(n, name, cmd, e, s, env, scratch, echo, left()))
                _write(plan, doc, out)
    finally:
        for p in servers:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        shutil.rmtree(scratch, ignore_errors=True)
    _write(plan, doc, out)
    doc.pop("partial", None)
    return doc


def _one(n: int, name: str, cmd: str, each: dict, s: dict, env: dict, scratch: Path, echo,
         left: float | None = None) -> dict:
    t0 = time.perf_counter()
    limit = float(s.get("timeout_s", 600))
    why = f"stopped after {limit:.0f} s"
    if left is not None and left < limit:
        limit, why = max(left, 1.0), f"stopped after {max(left, 1.0):.0f} s, at the run's --deadline-s"
    # its own process group: stopped, the step's children (a tuner's workers) stop with it, and its pipes close
    p = subprocess.Popen(shlex.split(cmd), cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        stdout, stderr = p.communicate(timeout=limit)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        stdout, stderr = p.communicate()
        rc, stderr = "timeout", (stderr or "") + f"\n{why}"     # where it was, then why it ended
    rec = {"step": n, "name": name, "cmd": cmd, **({"each": each} if each else {}), "rc": rc,
           "seconds": round(time.perf_counter() - t0, 2)}
    if s.get("file"):
        f = scratch / fill(s["file"], **each)
        rec["output"] = json.loads(f.read_text()) if f.exists() else None
        f.unlink(missing_ok=True)
    else:
        rec["output"] = parse_output(stdout)
    if rc != 0:
        rec["stderr"] = "\n".join(stderr.strip().splitlines()[-15:])
    echo(f"    rc {rc}, {rec['seconds']} s" + (f": {rec['stderr'].splitlines()[-1]}" if rc != 0 and rec.get("stderr")
                                                  else ""), flush=True)
    return rec


def _write(plan: dict, doc: dict, out: Path | None) -> None:
    dest = ROOT / plan["data"]
    text = layout(plan, doc, dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text)
    if out:
        (out / plan["data"]).parent.mkdir(parents=True, exist_ok=True)
        (out / plan["data"]).write_text(text)


def _tagged(plan: dict, doc: dict, rec: dict) -> dict | None:
    """A step's output as one entry of the data file, with the command that reproduces that step."""
    o = rec.get("output")
    if not isinstance(o, dict):
        return None
    return {**o, "command": f"{command(plan)} --steps {rec['step']}", "date": o.get("date", doc["date"])}


def _rerun(entry: dict, steps: set[int]) -> bool:
    return any(str(entry.get("command", "")).endswith(f"--steps {n}") for n in steps)


def layout(plan: dict, doc: dict, old_path: Path | None = None) -> str:
    """The data file's text in the plan's record layout (RECORDS). A call of some steps (--steps) keeps what the
    existing file holds of the other steps."""
    rec = plan.get("record", "steps")
    header = {k: doc[k] for k in ("plan", "date", "device", "versions") if k in doc}
    header["command"] = command(plan)           # the whole file is what the whole plan makes
    ran = {r["step"] for r in doc["steps"]}
    old = None
    if doc.get("partial") and old_path is not None and old_path.exists():
        old = old_path.read_text()
    if rec == "steps":
        return json.dumps({k: v for k, v in doc.items() if k != "partial"}, indent=1, default=str) + "\n"
    if rec == "last":
        last = next((r["output"] for r in reversed(doc["steps"]) if isinstance(r.get("output"), dict)), {})
        return json.dumps({**last, **{k: v for k, v in header.items() if k not in last or k == "command"}},
                          indent=1, default=str) + "\n"
    entries = [e for e in (_tagged(plan, doc, r) for r in doc["steps"]) if e is not None]
    if rec == "csv":
        import csv
        import io
        rows = []
        if old:
            rows = [r for r in csv.DictReader(io.StringIO(old)) if not _rerun(r, ran)]
        for e in entries:
            rows += [{**row, "command": e["command"]} for row in e.get("rows", [])]
        if not rows:
            return old or ""
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(dict.fromkeys(k for r in rows for k in r)), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
        return buf.getvalue()
    base = json.loads(old) if old else {}
    if rec == "runs":
        runs = [r for r in base.get("runs", []) if not _rerun(r, ran)] + entries
        return json.dumps({**{k: v for k, v in base.items() if k != "runs"}, **header, "title": plan["title"],
                           "runs": runs}, indent=1, default=str) + "\n"
    key = rec.split(":", 1)[1]
    if not base and entries:
        base = {k: v for k, v in entries[0].items() if k != key}
    joined = [x for x in base.get(key, []) if not (isinstance(x, dict) and _rerun(x, ran))]
    for e in entries:
        joined += [{**x, "command": x.get("command", e["command"])} if isinstance(x, dict) else x
                   for x in e.get(key, [])]
    return json.dumps({**base, **header, key: joined}, indent=1, default=str) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n\n")[0])
    ap.add_argument("plan", nargs="?", help="a plan's name under bench/plans, or its path")
    ap.add_argument("--steps", help="only these steps (1-based, comma-separated); background steps always start")
    ap.add_argument("--out", type=Path, help="also copy the data file here (the device tool's $OUT)")
    ap.add_argument("--deadline-s", type=float, help="end within this many seconds (a device call's limit): the "
                                                     "step running then is stopped and what it printed recorded")
    ap.add_argument("--print", action="store_true", help="print the command that runs the plan where it belongs")
    ap.add_argument("--list", action="store_true", help="list the plans")
    a = ap.parse_args(argv)
    try:
        if a.list or not a.plan:
            for p in sorted(PLANS.glob("*.toml")):
                try:
                    d = load(str(p))
                    print(f"{p.stem:28s} {d['device']:12s} -> {d['data']}: {d['title']}")
                except PlanError as e:
                    print(f"{p.stem:28s} PROBLEM: {e}")
            return 0
        plan = load(a.plan)
        if a.print:
            print(device_command(plan, a.steps))
            if plan["device"] != "cpu":
                print(device_calls(plan))
            return 0
        steps = [int(x) for x in a.steps.split(",")] if a.steps else None
        n = len(plan["steps"])
        if steps and not all(1 <= x <= n for x in steps):
            raise PlanError(f"--steps {a.steps} names a step the plan does not have: it has {n} (a step with "
                            "'each' is one step, however many commands it expands to).")
    except (PlanError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    doc = run(plan, steps, a.out, deadline_s=a.deadline_s)
    bad = [s["name"] for s in doc["steps"] if s["rc"] != 0]
    print(f"wrote {plan['data']} ({len(doc['steps'])} runs" + (f"; failed: {', '.join(bad)}" if bad else "") + ")")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
