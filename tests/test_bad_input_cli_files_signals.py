"""Bad input on the command line, in plug-ins and in files; the results schema; a signal that ends a worker.

Reliability round 4 (issue 37), case by case: each test names its case and fails on the code before it (5a4609d).
Bad input is exit 2 naming the parameter or the file, never a traceback, a hang or unbounded memory; the results
file the checks write is the one the report reads; a signal that ends fedtheory ends its workers."""
from __future__ import annotations

import errno
import json
import os
import re
import resource
import shlex
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from fedtheory import files
from fedtheory._validation import ParameterError
from fedtheory.checks import CheckResult
from fedtheory.checks.execution import checked_rows
from fedtheory.checks.registry import CheckSpec
from fedtheory.cli import main
from fedtheory.theory import Bound, Condition, Definition, SymbolSet, dimension_of, register
from fedtheory.theory.dimensions import parse_dimension

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args, env_extra=None, timeout=600, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("FEDTHEORY_PLUGINS", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "fedtheory.cli", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, **kw)


def _plugin(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text("import sympy as sp\nfrom fedtheory.theory import Bound, SymbolSet, register\n" + body)
    return str(path)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A small completed run directory (digits, 2 runs x 2 rounds)."""
    from fedtheory.empirical.config import TrainConfig
    from fedtheory.empirical.data import load_digits_images
    from fedtheory.empirical.trainer import train

    d = tmp_path_factory.mktemp("rel4") / "run"
    train(TrainConfig(dataset="digits", model="linear", n_clients=4, clients_per_round=2, rounds=2, local_steps=1,
                      batch_size=8, seeds=(0, 1), checkpoint_every=1), d, dataset=load_digits_images())
    return d


def _copy_run(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".writer.lock"))
    return dst


# ------------------------------------------------------------------------------------ 0. the tool's own results


@pytest.mark.slow
def test_0_report_draws_the_quick_profiles_own_results(tmp_path):
    """Before: `fedtheory report results/check-quick.json` exited 2 ("record 151 (id
    'oledfl.claim.ole_improves_consistency'): 'measured' is an object"); every quick and full results file did."""
    from fedtheory.checks.schema import check_payload

    out = tmp_path / "check-quick.json"
    run = _cli("check", "--profile", "quick", "--no-progress", "--out", str(out), timeout=1800)
    assert run.returncode in (0, 1), run.stderr
    payload = json.loads(out.read_text())
    check_payload(payload)  # the schema the writer holds every row to
    kinds = {type(r["measured"]).__name__ for r in payload["results"]}
    assert "dict" in kinds  # a record whose measurement is an object of values by setting is in it
    rep = _cli("report", str(out), "--out", str(tmp_path / "r.html"), timeout=1800)
    assert rep.returncode == 0, rep.stderr
    html = (tmp_path / "r.html").read_text()
    assert "oledfl.claim.ole_improves_consistency" in html


def test_0_the_schema_is_written_down_in_the_docs():
    from fedtheory.checks.schema import schema_markdown

    text = (ROOT / "docs" / "results.md").read_text()
    assert schema_markdown() in text  # docs/results.md is the schema's own text (regenerate it when it changes)


def test_0_the_full_profiles_record_shapes_pass_the_schema():
    """The shapes the full profile writes that the report refused (records 207 of the full profile: 'measured' an
    object), and every other shape of a results file, pass; a file that breaks the schema is refused by name."""
    from fedtheory.report import check_payload
    rec = {"id": "oledfl.claim.ole_improves_consistency", "paper": "oledfl", "kind": "claim",
           "verdict": "claim_supported", "measured": {"0.3": -0.095, "0.6": -0.163}, "bound": None, "ratio": None,
           "conditions_failed": [], "problem": "p", "params": {}, "seed": 0, "source": "", "detail": "", "extra": {},
           "versions": {}, "elapsed_s": 0.1, "finding": "", "scope": "inside", "self_check": False,
           "vacuous": False, "trivial_bound": None, "family_size": None, "seeds": 10, "quote": "",
           "finding_class": ""}
    check_payload({"results": [rec, dict(rec, measured=[1.0, "inf", None]), dict(rec, measured="nan", ratio="inf")]})
    with pytest.raises(ValueError, match=r"record 0 \(id 'x'\): 'params' is a list, expected an object"):
        check_payload({"results": [dict(rec, id="x", params=[1])]})
    with pytest.raises(ValueError, match=r"extra.series.x holds true/false, expected numbers only"):
        check_payload({"results": [dict(rec, extra={"series": {"x": [True]}})]})


def test_0_a_row_the_report_could_not_read_is_an_error_row_never_a_file():
    """The writer side of the one schema: a check that returns a row the report would refuse gets an 'error' row
    naming the field (exit 3), not a results file that `fedtheory report` refuses afterwards."""
    spec = CheckSpec("t_schema.c", "t_schema", "bound", lambda s: [], ("t_schema.c",))
    good = CheckResult("t_schema.c", "t_schema", "bound", "holds", measured=1.0, bound=2.0, ratio=2.0)
    bad = [CheckResult("t_schema.c", "t_schema", "bound", "holds", measured=sp.Float(1.5)),  # not a JSON value
           CheckResult("t_schema.c", "t_schema", "bound", "holds", measured=1.0, extra={"series": {"x": ["t1"]}}),
           CheckResult("t_schema.c", "t_schema", "bound", "holds", measured=1.0, problem={"n": 3})]
    rows = checked_rows(spec, [good] + bad)
    assert rows[0] is good
    assert [r.verdict for r in rows[1:]] == ["error"] * 3
    assert "measured" in rows[1].detail or "Float" in rows[1].detail
    assert "extra.series.x holds a string" in rows[2].detail and "'problem' is an object" in rows[3].detail


# ------------------------------------------------------------------------------------ 1. symbols named like sympy's


def test_1_a_symbol_named_pi_e_or_exp_is_evaluated_as_itself():
    """Before: D*pi*sp.pi + e*sp.E at D = pi = e = 1 gave 2.0 (the symbols replaced the constants), a symbol named
    exp gave "TypeError: 'numpy.ndarray' object is not callable"."""
    S = SymbolSet("t_names")
    D, pi, e, ex, x = (S.add(n, n, dim="1") for n in ("D", "pi", "e", "exp", "x"))
    kappa = sp.Symbol("kappa", positive=True)
    b = Bound(id="t_names.b", paper="t_names", title="", source="t", symbols=S, lhs="x", lhs_kind="none",
              expr=D * pi * sp.pi + e * sp.E + 0 * kappa,
              conditions=(Condition("small", sp.Le(pi * sp.pi, e * sp.E)),),
              definitions=(Definition("t_names.kappa", "t_names", kappa, ex * sp.exp(x), "t"),))
    v = {"D": 1.0, "pi": 1.0, "e": 1.0, "exp": 2.0, "x": 1e-9}
    assert b.evaluate(v) == pytest.approx(float(sp.pi + sp.E))
    assert b.evaluate_expr(e * sp.E + pi, v) == pytest.approx(float(sp.E) + 1)
    assert b.definition_values(v)["kappa"] == pytest.approx(2.0 * np.exp(1e-9))
    assert b.conditions_failed(v) == ["small: pi*pi <= E*e (3.142 vs 2.718)"]
    assert b.conditions_failed({**v, "e": 2.0}) == []


# ------------------------------------------------------------------------------------ 2. signals end the workers


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(d.name))
    return out


def _alive(pid: int) -> bool:
    """Running or asleep: not gone, not a zombie (a dead child this machine's init has not reaped yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux") or (os.cpu_count() or 1) < 2,
                    reason="reads /proc; the worker lane exists on more than one core")
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGKILL, -9)])
def test_2_a_signal_that_ends_check_ends_its_worker(sig, code):
    """Before: SIGTERM (and SIGKILL) to `fedtheory check` left its worker process running with parent pid 1, asleep on
    a pipe; SIGINT waited for the worker's current check. Now each ends the worker, and the exit status says which
    signal (128 + its number; a SIGKILLed process has no say)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("FEDTHEORY_PLUGINS", None)
    proc = subprocess.Popen([sys.executable, "-m", "fedtheory.cli", "check", "--profile", "quick", "--no-progress"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        workers = []
        for _ in range(3000):  # until the worker lane has started (its process is the check's only child)
            workers = _children(proc.pid)
            if workers or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert workers, "the worker process never started"
        time.sleep(1.0)  # let it take a check
        os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=120)
        # SIGINT: 130, or death by SIGINT where the interrupt landed in code that exec()s a string (CPython then
        # re-raises SIGINT at exit even though fedtheory caught it); a shell shows 130 for both
        assert proc.returncode in ((code, -signal.SIGINT) if sig == signal.SIGINT else (code,)), err
        if sig != signal.SIGKILL:
            assert f"SIG{signal.Signals(sig).name[3:]}" in err and "Traceback" not in err
        for _ in range(600):
            if not any(_alive(w) for w in workers):
                break
            time.sleep(0.1)
        assert not any(_alive(w) for w in workers), f"worker(s) {workers} outlived the check"
    finally:
        if proc.poll() is None:
            proc.kill()
        for w in _children(proc.pid):
            if _alive(w):
                os.kill(w, signal.SIGKILL)


# ------------------------------------------------------------------------------------ 3. check --controls --runs


@pytest.mark.parametrize("case", ["empty", "dev_zero", "inf_test_acc"])
def test_3_controls_read_run_folders_as_check_does(tmp_path, run_dir, capsys, case):
    """Before: `check --controls --runs DIR` accepted an empty folder, a manifest linked to /dev/zero and a run with
    test_acc = inf (exit 3, '0 of 4 controls fail'), which `check --runs` refused (exit 2). Now both refuse alike."""
    d = tmp_path / case
    d.mkdir()
    if case == "dev_zero":
        (d / "r").mkdir()
        (d / "r" / "manifest.json").symlink_to("/dev/zero")
    elif case == "inf_test_acc":
        r = _copy_run(run_dir, d / "r")
        lines = (r / "metrics.csv").read_text().split("\n")
        col = lines[0].split(",").index("test_acc")
        cells = lines[2].split(",")
        cells[col] = "inf"
        lines[2] = ",".join(cells)
        (r / "metrics.csv").write_text("\n".join(lines))
    messages = []
    for args in (["check", "--runs", str(d)], ["check", "--controls", "--runs", str(d)]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and "--runs=" in err
        messages.append(err)
    assert messages[0] == messages[1]  # one reader, one refusal
    if case != "empty":
        assert ("character device" if case == "dev_zero" else "column test_acc: inf is outside its range") \
            in messages[1]


# ------------------------------------------------------------------------------------ 4. --only length


def test_4_a_long_only_pattern_is_refused_by_its_length(capsys):
    """Before: 40,000 '[' took 29-77 s (fnmatch's translation is quadratic), 120,000 never returned."""
    assert main(["check", "--only", "[" * 40000]) == 2
    err = capsys.readouterr().err
    assert "--only=" in err and "at most 240 characters" in err
    assert main(["check", "--only", "fedinit.eq15", "[" * 241]) == 2
    assert "at most 240 characters" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ 5. exponents of dimensions


@pytest.mark.parametrize("text", ["f^I", "f^oo", "f^w", "f^inf", "f^nan", "w^(1/0)", "f^1e400", "f^zoo"])
def test_5_an_exponent_must_be_a_finite_real_number(text):
    """Before: dim="f^I" ended in 'internal error: TypeError' (exit 3); f^oo and f^w were accepted as [f]^(oo)."""
    with pytest.raises(ParameterError, match=r"an exponent must be a finite real number|neither f nor w"):
        parse_dimension(text)


def test_5_a_plug_in_with_an_imaginary_exponent_is_exit_2(tmp_path):
    plug = _plugin(tmp_path, "t5plug", 'S = SymbolSet("t5plug")\nx = S.add("x", "x", dim="f^I")\n')
    out = _cli("list", "--plugin", plug)
    assert out.returncode == 2 and "dim of x='f^I' is invalid" in out.stderr and "Traceback" not in out.stderr


def test_5_finite_exponents_still_read():
    for text, f, w in (("f^2/w^2", 2, -2), ("[f]^2/[w]^2", 2, -2), ("f^(1/2)", sp.Rational(1, 2), 0),
                       ("w^-1", 0, -1), ("f^0.5*w", sp.Rational(1, 2), 1), ("1/w", 0, -1), ("1", 0, 0)):
        d = parse_dimension(text)
        assert (d.f, d.w) == (f, w), text


# ------------------------------------------------------------------------------------ 6. bounded work


def test_6_a_20000_term_formula_is_printed_in_part_and_says_so():
    """Before: explain on a sum of 20,000 symbols ran out of memory in sympy's printer (MemoryError at 3.9 GB)."""
    from fedtheory.theory.printing import MAX_PRINTED_NODES, formula_text

    expr = sp.Add(*sp.symbols("a0:20000", positive=True))
    text = formula_text(expr)
    assert len(text) < 2000
    assert f"a sum of 20000 terms, over the {MAX_PRINTED_NODES} nodes fedtheory prints whole" in text
    small = sp.Symbol("L") * sp.Symbol("x") ** 2 / 2
    assert formula_text(small) == sp.sstr(small)


@pytest.mark.slow
def test_6_an_exponent_of_40_symbols_is_not_simplified_and_says_so(tmp_path):
    """Before: explain (and check) hung in sp.cancel(sp.together(...)) on an exponent that is a 40-symbol sum."""
    plug = _plugin(tmp_path, "t6plug", "from fedtheory.theory.dimensions import Units\n"
                   'S = SymbolSet("t6plug")\n'
                   'a = [S.add(f"a{i}", "a", dim="1") for i in range(40)]\n'
                   'x = S.add("x", "x", dim="f")\n'
                   'register(Bound(id="t6plug.b", paper="t6plug", title="t", source="s", symbols=S, lhs="x", '
                   'lhs_kind="none", units=Units(lhs="f"), '
                   'expr=x ** sp.Add(*[s / (i + 2) / (s + i + 1) for i, s in enumerate(a)])))\n')
    out = _cli("explain", "t6plug.b", "--plugin", plug, timeout=300)
    assert out.returncode == 0, out.stderr
    assert ("units: inconclusive: not decided (statement: an exponent of 40 symbols is not simplified (at most 8 "
            "symbols") in out.stdout


# ------------------------------------------------------------------------------------ 7. texts never run


def test_7_a_dimension_text_or_an_expression_string_never_runs_code(tmp_path):
    """Before: dimension_of and SymbolSet.add(dim=...) evaluated strings with sympify: a text could call os.system."""
    marker = tmp_path / "ran"
    call = f"__import__('os').system('touch {marker}')"
    with pytest.raises(ParameterError, match="dim of x="):
        dimension_of(sp.Symbol("x"), {"x": f"{call} or f"})
    with pytest.raises(ParameterError, match="expr=.*a string"):
        dimension_of(f"{call} + x", {"x": "1"})
    with pytest.raises(ParameterError, match="dim of y="):
        SymbolSet("t7").add("y", "y", dim=f"{call} or w")
    assert not marker.exists()


def test_7_wrong_types_are_fedtheorys_own_errors():
    L = sp.Symbol("L")
    for call, name in ((lambda: dimension_of(object(), {"L": "f/w^2"}), "expr"),
                       (lambda: dimension_of(L, 5), "symbols"),
                       (lambda: dimension_of(L, {"L": 3.5}), "dim of L"),
                       (lambda: dimension_of(L, {"L": "f"}, normalisation="L"), "normalisation"),
                       (lambda: SymbolSet("t7b").add("z", "z", dim=["f"]), "dim of z"),
                       (lambda: SymbolSet("t7c").add("z", "z", domain="positive"), "domain"),
                       (lambda: Bound(id="t7.b", paper="t7", title="", source="", symbols=SymbolSet("t7"),
                                      expr="x**2"), "t7.b: expr")):
        with pytest.raises(ParameterError) as info:
            call()
        assert info.value.name == name
    assert dimension_of(L * 2, {"L": "f/w^2"}) is not None  # sympy input still works


# ------------------------------------------------------------------------------------ 8. new-paper


def _listing(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


@pytest.mark.parametrize("name", ["papéř", "a" * 256, "a" * 250, "a" * 65])
def test_8_new_paper_names_are_ascii_and_short_and_nothing_half_written(tmp_path, capsys, name):
    """Before: papéř wrote a pyproject.toml that is not TOML; 256 characters exited 3 (File name too long); 250 left
    a half-written skeleton (a rerun then said 'exists')."""
    assert main(["new-paper", name, "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "NAME=" in err and "ASCII" in err and "at most 64 characters" in err
    assert _listing(tmp_path) == []


@pytest.mark.parametrize("where", ["file", "missing", "proc"])
def test_8_new_paper_dir_must_be_a_folder_that_can_hold_it(tmp_path, capsys, where):
    """Before: --dir naming a file or /proc/sys exited 3 (NotADirectoryError / FileNotFoundError); a --dir that does
    not exist was created, at the file system's root if asked, without a word."""
    if where == "proc" and not Path("/proc/sys").is_dir():
        pytest.skip("no /proc/sys here")
    d = {"file": tmp_path / "afile", "missing": tmp_path / "no" / "such", "proc": Path("/proc/sys")}[where]
    if where == "file":
        d.write_text("mine")
    assert main(["new-paper", "mypaper4", "--dir", str(d)]) == 2
    err = capsys.readouterr().err
    assert "--dir=" in err and "Traceback" not in err
    assert not (tmp_path / "no").exists() and (where != "file" or d.read_text() == "mine")


def test_8_new_paper_writes_valid_toml_whole_or_nothing(tmp_path, capsys, monkeypatch):
    assert main(["new-paper", "mypaper5", "--dir", str(tmp_path)]) == 0
    meta = tomllib.loads((tmp_path / "mypaper5" / "pyproject.toml").read_text())
    assert meta["project"]["entry-points"]["fedtheory.papers"] == {"mypaper5": "mypaper5"}
    # a write that fails halfway (a full disk) leaves nothing behind, and says so
    real = Path.write_text
    calls = []

    def failing(self, *a, **k):
        calls.append(self)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "write_text", failing)
    assert main(["new-paper", "mypaper6", "--dir", str(tmp_path)]) == 2
    assert "No space left on device: nothing was written" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["mypaper5"]


# ------------------------------------------------------------------------------------ 9 and 10. --out, --report


def _no_checks(monkeypatch):
    import fedtheory.checks as C

    def refuse(*a, **k):
        raise AssertionError("checks ran before --out/--report were refused")

    monkeypatch.setattr(C, "run_checks", refuse)


@pytest.mark.parametrize("flag", ["--out", "--report"])
def test_9_an_unwritable_output_is_refused_before_any_check_runs(tmp_path, capsys, monkeypatch, flag):
    """Before: --out onto a folder (or into a read-only place) was refused only after the checks ran (the full
    profile's minutes), and the table was not printed."""
    _no_checks(monkeypatch)
    for target in (tmp_path, Path("/proc/fedtheory-results.json")):
        assert main(["check", "--only", "fedinit.eq15", flag, str(target)]) == 2
        err = capsys.readouterr().err
        assert f"{flag}=" in err and "Traceback" not in err


def test_10_report_onto_a_folder_names_report_and_writes_nothing(tmp_path, capsys, monkeypatch):
    """Before: `check --out b.json --report DIR` said "--out='DIR' is invalid" after b.json was written, and exit 2
    replaced the run's own exit code."""
    _no_checks(monkeypatch)
    assert main(["check", "--only", "fedinit.eq15", "--out", str(tmp_path / "b.json"), "--report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"--report='{tmp_path}' is invalid" in err and "--out=" not in err
    assert not (tmp_path / "b.json").exists()


def _disk_full_for(monkeypatch, target: Path) -> None:
    """Writes of ``target`` fail as on a full disk (after --out was checked writable); every other file is written."""
    real = files.write_atomic

    def full(path, data):
        if Path(path) == target:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, data)

    monkeypatch.setattr(files, "write_atomic", full)


def test_9_results_are_kept_when_a_write_fails_after_the_run(tmp_path, capsys, monkeypatch):
    """A disk that fills during the run: the table is printed, the results are kept in a file that `fedtheory report`
    reads, and the message names --out, the kept file and the run's own exit status."""
    out = tmp_path / "r.json"
    _disk_full_for(monkeypatch, out)
    assert main(["check", "--only", "fedinit.eq15", "--one-process", "--no-progress", "--out", str(out)]) == 2
    cap = capsys.readouterr()
    assert "fedinit.eq15" in cap.out and "JSON records written" not in cap.out  # the table, not a false claim
    assert f"--out='{out}' is invalid" in cap.err and "No space left on device" in cap.err
    kept = re.search(r"the results are kept in (\S+) ", cap.err).group(1)
    from fedtheory.report import check_payload

    check_payload(json.loads(Path(kept).read_text()))
    assert "the run's own exit status was 0" in cap.err
    os.unlink(kept)


def test_9_controls_keep_their_results_when_the_write_fails_after_the_run(tmp_path, capsys, monkeypatch):
    out = tmp_path / "c.json"
    _disk_full_for(monkeypatch, out)
    assert main(["check", "--controls", "--only", "fedinit.units", "--out", str(out)]) == 2
    cap = capsys.readouterr()
    assert "fedinit.units" in cap.out and "JSON written" not in cap.out
    kept = re.search(r"the results are kept in (\S+) ", cap.err).group(1)
    assert json.loads(Path(kept).read_text())["controls"][0]["check"] == "fedinit.units"
    os.unlink(kept)


# ------------------------------------------------------------------------------------ 11. a full disk in train


def _file_size_limit(limit: int):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs RLIMIT_FSIZE")
def test_11_a_failed_checkpoint_write_names_the_disk_and_leaves_no_temporary(tmp_path):
    """Before: "internal error: RuntimeError: [enforce fail at inline_container.cc:672]" (exit 3) and
    .checkpoint.pt.<pid>.tmp left behind for good. A real failed write: the process may write no file over 20 KB
    (the manifest and metrics.csv are smaller, a checkpoint is not)."""
    d = tmp_path / "run"
    out = _cli("train", "--out", str(d), "--dataset", "digits", "--model", "linear", "--clients", "4", "--rounds", "2",
               "--local-steps", "1", "--batch-size", "8", "--seeds", "0", "1", "--checkpoint-every", "1",
               "--no-progress", preexec_fn=_file_size_limit(20_000))
    assert out.returncode == 2, out.stderr
    assert "checkpoint.pt: the checkpoint of round 1 could not be written (File too large; the disk holding" \
           in out.stderr and "Traceback" not in out.stderr
    assert not [p.name for p in d.iterdir() if p.name.endswith(".tmp")]
    assert (d / "manifest.json").is_file() and (d / "metrics.csv").is_file()


# ------------------------------------------------------------------------------------ 12. ids and printed commands


@pytest.mark.parametrize("rid", ["", "x.t; rm -rf ~", "t12..b", "t12.1b", "t12 .b", "t12." + "b" * 120])
def test_12_record_ids_follow_one_grammar(rid):
    """Before: a plug-in record id '' or 'x.t; rm -rf ~' was accepted and printed unquoted in suggested commands."""
    S = SymbolSet("t12")
    x = S.add("x", "x", dim="1")
    with pytest.raises(ParameterError, match="dotted identifiers"):
        register(Bound(id=rid, paper="t12", title="", source="", symbols=S, lhs="x", lhs_kind="none", expr=x))


def test_12_check_ids_follow_the_grammar_and_a_plug_in_with_a_bad_id_is_exit_2(tmp_path):
    from fedtheory.checks import check

    with pytest.raises(ParameterError, match="check id"):
        check("t12.c; ls", "t12", "bound")
    with pytest.raises(ParameterError, match="paper of check"):
        check("t12.c", "t12 x", "bound")
    plug = _plugin(tmp_path, "t12plug", 'S = SymbolSet("t12plug")\nx = S.add("x", "x", dim="1")\n'
                   'register(Bound(id="t12plug.t; rm -rf ~", paper="t12plug", title="", source="", symbols=S, '
                   'lhs="x", lhs_kind="none", expr=x))\n')
    out = _cli("list", "--plugin", plug)
    assert out.returncode == 2 and "dotted identifiers" in out.stderr


def test_12_printed_commands_are_shell_quoted(tmp_path, capsys):
    d = tmp_path / "my papers; x"
    d.mkdir()
    assert main(["new-paper", "quoted12", "--dir", str(d)]) == 0
    lines = capsys.readouterr().out.splitlines()
    check_line = next(ln for ln in lines if "fedtheory check --plugin" in ln).split("#")[0]
    assert shlex.split(check_line)[3] == f"{d}/quoted12/src/quoted12"
    assert main(["explain", "fedinit.eq15"]) == 0
    out = capsys.readouterr().out
    assert "(`fedtheory check --only fedinit.eq15`)" in out and "`fedtheory explain fedinit.eq15 --run`" in out


# ------------------------------------------------------------------------------------ 13. deep JSON


@pytest.fixture(scope="module")
def deep(tmp_path_factory):
    p = tmp_path_factory.mktemp("deep") / "deep.json"
    p.write_text("[" * 200_000 + "]" * 200_000)
    return p


@pytest.mark.parametrize("what", ["report", "replay", "config", "manifest"])
def test_13_json_nested_200000_deep_is_refused_naming_the_file(tmp_path, capsys, deep, what):
    """Before: "internal error: RecursionError" (exit 3) from report, worst --replay, train --config and a run
    manifest."""
    if what == "manifest":
        (tmp_path / "r").mkdir()
        (tmp_path / "r" / "manifest.json").write_text(deep.read_text())
    args = {"report": ["report", str(deep), "--out", str(tmp_path / "r.html")],
            "replay": ["worst", "--replay", str(deep)],
            "config": ["train", "--config", str(deep), "--out", str(tmp_path / "t")],
            "manifest": ["check", "--runs", str(tmp_path)]}[what]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "nested deeper than the 100 levels" in err and "RecursionError" not in err
    assert (str(deep) if what != "manifest" else "manifest.json") in err


def test_13_read_json_counts_levels_without_recursion(tmp_path):
    ok, deep = tmp_path / "ok.json", tmp_path / "deep.json"
    ok.write_text("[" * files.MAX_JSON_DEPTH + "]" * files.MAX_JSON_DEPTH)
    deep.write_text('{"a": ' * (files.MAX_JSON_DEPTH + 1) + "1" + "}" * (files.MAX_JSON_DEPTH + 1))
    assert files.json_depth(files.read_json(ok, 1 << 20)) == files.MAX_JSON_DEPTH
    with pytest.raises(files.FileRefused, match="nested deeper than the 100 levels"):
        files.read_json(deep, 1 << 20)
    with pytest.raises(files.FileRefused, match="not JSON"):
        files.parse_json("{", "x")


# ------------------------------------------------------------------------------------ 14. plug-ins that are not


def test_14_a_module_that_registers_nothing_is_warned_about_and_blank_entries_are_skipped():
    """Before: FEDTHEORY_PLUGINS=os loaded os as a plug-in with 0 records and 0 checks, silently; a blank entry was
    reported as `plug-in ''` (exit 2)."""
    out = _cli("list", "--plugins", env_extra={"FEDTHEORY_PLUGINS": "os"})
    assert out.returncode == 0, out.stderr
    assert "fedtheory: warning: plug-in 'os' ($FEDTHEORY_PLUGINS: os) registered no record and no check" in out.stderr
    out = _cli("list", "--plugins", env_extra={"FEDTHEORY_PLUGINS": f" {os.pathsep}{os.pathsep} "})
    assert out.returncode == 0 and out.stderr == "", out.stderr


def test_a_current_folder_that_was_removed_is_one_line_and_exit_2(tmp_path):
    """`fedtheory` run from a folder removed under it (a shell left in a deleted build folder): one line, exit 2,
    for a listing (kept or not) as for a check; it was an internal error (exit 3) resolving the plug-ins' paths."""
    gone = tmp_path / "gone"
    for args, cache in ((["list", "--paper", "drori2014"], ""), (["list"], str(tmp_path / "cache")),
                        (["check", "--only", "drori2014.thm3_1", "--profile", "quick"], "")):
        script = (f"mkdir -p {shlex.quote(str(gone))} && cd {shlex.quote(str(gone))} && rmdir "
                  f"{shlex.quote(str(gone))} && exec {shlex.quote(sys.executable)} -m fedtheory.cli "
                  + " ".join(map(shlex.quote, args)))
        r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300,
                           env={**os.environ, "FEDTHEORY_CACHE": cache})
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.strip() == ("fedtheory: error: the current folder no longer exists: run fedtheory from an "
                                    "existing folder"), r.stderr
