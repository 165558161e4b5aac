"""Bad input to training-run directories, checkpoints, worst-case instance files, results files and manifests.

Reliability round 3 (issue 24), item by item: nothing lost on resume, no input that hangs or eats memory, no
traceback, no impossible metric accepted. Each test names its item; the issue's items 4 and 11 are covered by
tests/test_trust.py (a check returning 42, a NaN measurement)."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedtheory.cli import main
from fedtheory.empirical.config import TrainConfig
from fedtheory.empirical.data import load_digits_images
from fedtheory.empirical.run_directory import FAULT_ENV
from fedtheory.empirical.runs import (
    LOCK,
    MANIFEST,
    MEASURE_RANGES,
    METRICS,
    RunDirError,
    RunDirLock,
    load_run,
    out_of_range,
    scan_metrics,
)
from fedtheory.empirical.trainer import ImpossibleMeasure, train
from fedtheory.files import FileRefused, read_regular

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def digits():
    return load_digits_images()


def _cfg(**kw):
    base = dict(dataset="digits", model="linear", n_clients=4, clients_per_round=2, rounds=3, local_steps=1,
                batch_size=8, seeds=(0, 1), checkpoint_every=2)
    base.update(kw)
    return TrainConfig(**base)


def _frame(d):
    return pd.read_csv(Path(d) / METRICS).drop(columns=["time_s"]).sort_values(["round", "run"]).reset_index(drop=True)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, digits):
    """A completed run: 2 runs x 3 rounds, checkpoints at rounds 2 (checkpoint.prev.pt) and 3."""
    d = tmp_path_factory.mktemp("rel") / "full"
    train(_cfg(), d, dataset=digits)
    return d


def _copy(src, dst):
    shutil.copytree(src, dst)
    return dst


def _cli(args, timeout=300, **env):
    e = dict(os.environ, PYTHONPATH=str(ROOT), **env)
    e.pop(FAULT_ENV, None)
    return subprocess.run([sys.executable, "-m", "fedtheory.cli", *args], capture_output=True, text=True, env=e,
                          timeout=timeout)


# ------------------------------------------------------------------------------------ 1. one writer per run dir


def test_1_a_second_writer_is_refused_while_the_first_holds_the_run_directory(tmp_path, run_dir, digits):
    d = _copy(run_dir, tmp_path / "d")
    with RunDirLock(d):  # what a running `fedtheory train --out d` holds
        with pytest.raises(RunDirError, match=f"another fedtheory process is writing this run directory \\(pid "
                                              f"{os.getpid()} "):
            train(_cfg(rounds=5), d, resume=True, dataset=digits)
        with pytest.raises(RunDirError, match="another fedtheory process"):  # a fresh run in a new directory, too
            with RunDirLock(d):
                pass
    train(_cfg(rounds=5), d, resume=True, dataset=digits)  # released: the resume goes on
    assert _frame(d)["round"].max() == 5 and (d / LOCK).is_file()


@pytest.mark.slow
def test_1_two_resumes_at_once_one_is_refused_and_the_rows_equal_an_uninterrupted_run(tmp_path, run_dir, digits):
    """Before: both ran; one crashed in os.replace and metrics.csv lost or repeated rows. Process A resumes to 40
    rounds; once it holds the run directory it is paused (SIGSTOP), B asks for the same directory and is refused
    (exit 2, naming A); A continues and logs exactly the rows of a run trained to 40 rounds from the start."""
    d = _copy(run_dir, tmp_path / "d")
    args = ["train", "--out", str(d), "--resume", "--rounds", "40", "--no-progress"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop(FAULT_ENV, None)
    a = subprocess.Popen([sys.executable, "-m", "fedtheory.cli", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.time() + 240
        while time.time() < deadline and a.poll() is None:
            if (d / LOCK).is_file() and (d / LOCK).read_text().startswith(f"pid {a.pid} "):
                break
            time.sleep(0.005)
        os.kill(a.pid, signal.SIGSTOP)
        assert a.poll() is None, "A finished before it could be paused"
        b = _cli(args)
        assert b.returncode == 2, b.stderr
        assert f"another fedtheory process is writing this run directory (pid {a.pid} " in b.stderr
        assert "Traceback" not in b.stderr
    finally:
        os.kill(a.pid, signal.SIGCONT)
    out, err = a.communicate(timeout=300)
    assert a.returncode == 0, err
    straight = train(_cfg(rounds=40), tmp_path / "straight", dataset=digits)
    assert len(straight.metrics) == 41 * 2
    pd.testing.assert_frame_equal(_frame(d), _frame(tmp_path / "straight"))


# ------------------------------------------------------------------------------------ 2. a torn metrics.csv


def test_1_the_lock_file_is_never_followed_through_a_link_nor_waited_on(tmp_path, run_dir, digits):
    """Found after the round: a `.writer.lock` that was a symbolic link had its target overwritten with the
    holder's pid (someone's file lost); a FIFO or /dev/zero there was an internal error (exit 3). Now each is
    refused naming the lock file, and the link's target is untouched."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious data")
    d = _copy(run_dir, tmp_path / "link")
    (d / LOCK).unlink(missing_ok=True)
    (d / LOCK).symlink_to(victim)
    with pytest.raises(RunDirError, match=r"\.writer\.lock: the run directory's lock file is a symbolic link"):
        train(_cfg(rounds=5), d, resume=True, dataset=digits)
    assert victim.read_text() == "precious data"
    d = _copy(run_dir, tmp_path / "fifo")
    (d / LOCK).unlink(missing_ok=True)
    os.mkfifo(d / LOCK)
    with pytest.raises(RunDirError, match="lock file is not a regular file"):
        with RunDirLock(d):
            pass


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_2_a_checkpoint_that_is_not_a_regular_file_is_refused_not_waited_on(tmp_path, run_dir, digits, capsys, kind):
    """Found after the round: checkpoint.pt as a FIFO hung `train --resume` (no output); as a link to /dev/zero it
    went to torch.load, whose message advised weights_only=False. Now it is refused by kind and the resume falls
    back to checkpoint.prev.pt: the rows equal the uninterrupted run's."""
    d = _copy(run_dir, tmp_path / kind)
    (d / "checkpoint.pt").unlink()
    if kind == "fifo":
        os.mkfifo(d / "checkpoint.pt")
    else:
        (d / "checkpoint.pt").symlink_to("/dev/zero")
    train(_cfg(rounds=5), d, resume=True, dataset=digits)
    err = capsys.readouterr().err
    assert ("a FIFO, not a regular checkpoint" if kind == "fifo" else "a character device, not a regular checkpoint") \
        in err and "falling back to checkpoint.prev.pt" in err and "weights_only" not in err, err
    ref = _copy(run_dir, tmp_path / f"{kind}_ref")
    train(_cfg(rounds=5), ref, resume=True, dataset=digits)
    pd.testing.assert_frame_equal(_frame(d), _frame(ref))


def test_2_a_truncated_last_line_at_every_byte_offset_resumes_to_the_uninterrupted_rows(tmp_path, monkeypatch):
    """Before: a metrics.csv cut inside its last line (a crash mid-write) resumed to "0 recomputed rows" and the
    row was gone for good (the checkpoint was past it). Now a resume finds the last round whose rows are all
    complete and goes back to the newest checkpoint at or before it (here checkpoint.prev.pt, round 2), recomputing
    round 3. Every byte offset of the last line (round 3, run 1), 0 included (the whole line lost).

    Kept fast (over 300 resumes): a tiny synthetic data set, no fsync and no git call (neither is what is tested),
    and one Trainer that runs every resume (``run`` starts from the files each time, as a new process does)."""
    import fedtheory.empirical.device as device_module
    from fedtheory.empirical.data import load_dataset
    from fedtheory.empirical.trainer import Trainer

    monkeypatch.setattr(device_module, "_git_commit", lambda: None)
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    opts = {"n_train": 48, "n_test": 16, "shape": (1, 4, 4), "n_classes": 3}
    cfg = _cfg(dataset="synthetic", dataset_options=opts, n_clients=3, batch_size=4)
    data_set = load_dataset("synthetic", **opts)
    full_dir = tmp_path / "full"
    train(cfg, full_dir, dataset=data_set)
    full = _frame(full_dir)
    data = {p.name: p.read_bytes() for p in full_dir.iterdir() if p.is_file() and p.name != LOCK}
    metrics = data[METRICS]
    start = metrics[:-1].rfind(b"\n") + 1  # where the last line begins
    assert metrics[start:].startswith(b"3,1,")
    d = tmp_path / "d"
    d.mkdir()
    trainer = Trainer(cfg, d, resume=True, dataset=data_set)
    offsets = range(len(metrics) - start)  # every proper prefix of the last line, its newline excluded
    assert len(offsets) > 100
    for k in offsets:
        for p in d.iterdir():
            if p.name != LOCK:
                p.unlink()
        for name, b in data.items():
            (d / name).write_bytes(b)
        (d / METRICS).write_bytes(metrics[:start + k])
        res = trainer.run()
        assert res.manifest["status"] == "completed", k
        pd.testing.assert_frame_equal(_frame(d), full, obj=f"offset {k}")
        last = res.manifest["resumes"][-1]
        assert last["from_round"] == 2 and last["rows_compared"] == 1 and last["bit_identical"], (k, last)
        assert "past metrics.csv's last complete round (2" in last["checkpoint_fallback"], k
    # a fresh trainer (a new process) does the same
    (d / METRICS).write_bytes(metrics[:start + len(offsets) // 2])
    train(cfg, d, resume=True, dataset=data_set)
    pd.testing.assert_frame_equal(_frame(d), full)
    # the torn file as `check --runs` sees it: the complete rows, round 3 of run 1 missing (resumable), no error
    (d / METRICS).write_bytes(metrics[:start + 7])
    lg = load_run(d)
    assert len(lg.metrics) == len(full) - 1


def test_2_scan_metrics_finds_the_last_complete_round(tmp_path, run_dir):
    d = _copy(run_dir, tmp_path / "d")
    lines = (d / METRICS).read_text().splitlines(keepends=True)
    assert scan_metrics(d / METRICS, 2).complete_through == 3
    (d / METRICS).write_text("".join(lines[:-1]))  # the whole last line lost: round 3 misses run 1
    assert scan_metrics(d / METRICS, 2).complete_through == 2
    (d / METRICS).write_text("".join(lines[:4] + [lines[3]] + lines[4:]))  # a repeated row in round 1
    assert scan_metrics(d / METRICS, 2).complete_through == 0
    (d / METRICS).write_text("".join(lines[:3] + ["garbage\n"] + lines[3:]))  # nothing after a malformed line counts
    assert scan_metrics(d / METRICS, 2).complete_through == 0
    (d / METRICS).write_text(lines[0][:5])
    assert scan_metrics(d / METRICS, 2).complete_through == -1


# ------------------------------------------------------------------------------------ 3. --out F --report F


def test_3_out_and_report_on_one_file_are_refused_and_the_file_is_kept(tmp_path, capsys):
    f = tmp_path / "same.json"
    f.write_text("mine")
    code = main(["check", "--only", "fedinit.eq3", "--out", str(f), "--report", str(tmp_path / "." / "same.json"),
                 "--no-progress"])
    assert code == 2 and "--report=" in capsys.readouterr().err and f.read_text() == "mine"
    link = tmp_path / "link.json"
    link.symlink_to(f)
    assert main(["check", "--only", "fedinit.eq3", "--out", str(f), "--report", str(link), "--no-progress"]) == 2
    # `fedtheory report R --out R` would replace the results with the page
    assert main(["report", str(f), "--out", str(f)]) == 2
    assert "--out=" in capsys.readouterr().err and f.read_text() == "mine"


# ------------------------------------------------------------------------------------ 5. files that are not files


def test_5_read_regular_reads_regular_files_only_within_a_limit(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"x" * 10)
    assert read_regular(f, 10) == b"x" * 10
    (tmp_path / "link").symlink_to(f)
    assert read_regular(tmp_path / "link", 10) == b"x" * 10  # a link to a regular file is one
    with pytest.raises(FileRefused, match="over the 9 bytes"):
        read_regular(f, 9)
    with pytest.raises(FileRefused, match="a character device"):
        read_regular("/dev/zero", 1 << 20)
    with pytest.raises(FileRefused, match="a directory"):
        read_regular(tmp_path, 1 << 20)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(FileRefused, match="a FIFO"):  # refused at once: never waits for a writer
        read_regular(tmp_path / "fifo", 1 << 20)
    with pytest.raises(FileRefused, match="no such"):
        read_regular(tmp_path / "missing", 10)


@pytest.mark.parametrize("which, how, needle", [
    (MANIFEST, "zero", "a character device, not a regular run manifest"),
    (METRICS, "fifo", "a FIFO, not a regular metrics file"),
])
def test_5_check_runs_refuses_devices_and_fifos_naming_the_file(tmp_path, run_dir, which, how, needle):
    """Before: manifest.json -> /dev/zero ate 17.8 GB (MemoryError, exit 3); a FIFO as metrics.csv hung. A
    subprocess with a time limit, so that the old behaviour fails the test instead of hanging the suite."""
    d = _copy(run_dir, tmp_path / "d")
    (d / which).unlink()
    if how == "zero":
        (d / which).symlink_to("/dev/zero")
    else:
        os.mkfifo(d / which)
    r = _cli(["check", "--runs", str(d), "--only", "empirical", "--no-progress"], timeout=120)
    assert r.returncode == 2, r.stderr
    assert f"{d / which}: {needle}" in r.stderr and "Traceback" not in r.stderr


def test_5_a_metrics_file_larger_than_the_manifest_allows_is_refused_unread(tmp_path, run_dir, capsys):
    """200,000 rows under a manifest of 3 rounds x 2 runs: refused by size before pandas reads a byte."""
    d = _copy(run_dir, tmp_path / "d")
    text = (d / METRICS).read_text()
    header, body = text.split("\n", 1)
    (d / METRICS).write_text(header + "\n" + body * (200_000 // 8 + 1))
    assert main(["check", "--runs", str(d), "--only", "empirical", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{d / METRICS}: " in err and "over the" in err and "3 rounds + round 0 x 2 run(s)" in err


# ------------------------------------------------------------------------------------ 6, 7. worst-case inputs


@pytest.fixture(scope="module")
def instance_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("worst")
    assert main(["worst", "fedinit.thm2", "--budget", "10", "--popsize", "5", "--no-progress", "--out-dir",
                 str(out)]) in (0, 1)
    return out / "fedinit.thm2.json"


def _edited(instance_file, tmp_path, edit):
    data = json.loads(instance_file.read_text())
    edit(data)
    f = tmp_path / "edited.json"
    f.write_text(json.dumps(data))
    return f


@pytest.mark.parametrize("edit, needle", [
    (lambda d: d.__setitem__("seeds", list(range(10**6))), "fewer seeds than its 1000000"),
    (lambda d: d["params"].__setitem__("runs", 10**8), "runs=100000000 is invalid: runs must be an integer of "
                                                       "magnitude at most 1000000"),
    (lambda d: d["params"].__setitem__("T", 10**9), "T=1000000000 is invalid"),
    (lambda d: d["params"].update(T=100_000, K=200_000), "K=200000 is invalid: K must be small enough"),
    (lambda d: d.__setitem__("seeds", [0, -1]), "'seeds' are non-negative integers"),
    (lambda d: d.__setitem__("instance", [1, 2]), "'instance' is a JSON object"),
    (lambda d: d["instance"].__setitem__("X", "abc"), "X (C,S,d)"),
])
def test_6_replay_validates_sizes_before_allocating(instance_file, tmp_path, capsys, edit, needle):
    """Before: 1e6 seeds ran for minutes (2 GB), runs = 1e8 was a MemoryError, T = 1e9 asked 238 GiB."""
    f = _edited(instance_file, tmp_path, edit)
    t0 = time.perf_counter()
    assert main(["worst", "--replay", str(f)]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err, err
    assert time.perf_counter() - t0 < 30


def test_6_replay_refuses_what_is_not_a_regular_instance_file(tmp_path, capsys):
    assert main(["worst", "--replay", "/dev/zero"]) == 2
    assert "a character device" in capsys.readouterr().err


def test_6_an_instance_file_is_strict_json_and_still_replays(instance_file, capsys):
    json.loads(instance_file.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in an instance file"))
    assert main(["worst", "--replay", str(instance_file)]) == 0
    assert json.loads(capsys.readouterr().out)["replay"]["reproduced"]


@pytest.mark.parametrize("setting, needle", [
    ("T=-1", "T=-1 is invalid: T must be an integer >= 1 (it is the runs' rounds)"),
    ("T=0", "T=0 is invalid: T must be an integer >= 1"),
    ("eta=-1", "eta=-1 is invalid: eta must be a finite real number > 0.0 (it is the runs' lr)"),
    ("T=2.5", "T=2.5 is invalid: T must be an integer"),
    ("T=1e308", "T=1e+308 is invalid: T must be an integer of magnitude at most 1000000"),
    ("C=1000000", "C=1000000 is invalid: C must be small enough that runs x clients x dim"),  # was blamed on N
    ("K=1e6", "K=1000000 is invalid: K must be small enough that"),
])
def test_7_worst_set_is_validated_naming_the_parameter(tmp_path, capsys, setting, needle):
    """Before: T=-1, T=0, eta=-1 were internal errors inside the search (exit 3); T=2.5 ran T = 2; T=1e308 hung."""
    code = main(["worst", "fedinit.thm2", "--budget", "10", "--popsize", "5", "--no-progress", "--out-dir",
                 str(tmp_path), "--set", setting])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and "internal error" not in err, err
    assert not list(tmp_path.iterdir())  # nothing searched, nothing written


def test_7_a_diverging_setting_prints_strict_json(tmp_path, capsys):
    """Before: --set eta=1e308 printed Infinity and NaN, which no JSON reader but Python's accepts."""
    code = main(["worst", "fedinit.thm2", "--budget", "10", "--popsize", "5", "--no-progress", "--out-dir",
                 str(tmp_path), "--set", "eta=1e308"])
    out = capsys.readouterr()
    rec = json.loads(out.out, parse_constant=lambda c: pytest.fail(f"{c} printed"))
    assert code == 0 and rec["verdict"] == "not_applicable" and rec["diverged"] and rec["worst_measured"] == "inf"
    assert "RuntimeWarning" not in out.err
    json.loads((tmp_path / "fedinit.thm2.json").read_text(), parse_constant=lambda c: pytest.fail(c))
    # found after the round: its replay said 'not reproduced' (relative difference nan) and exited 1; a
    # divergence reproduced is reproduced
    assert main(["worst", "--replay", str(tmp_path / "fedinit.thm2.json")]) == 0
    replayed = json.loads(capsys.readouterr().out)["replay"]
    assert replayed["reproduced"] and replayed["relative_difference"] == 0.0


# ------------------------------------------------------------------------------------ 8. report inputs


@pytest.fixture(scope="module")
def results_file(tmp_path_factory):
    f = tmp_path_factory.mktemp("report") / "r.json"
    assert main(["check", "--only", "fedinit.eq3", "--out", str(f), "--no-progress"]) == 0
    return f


_SERIES = {"series": {"x": [1, 2, 3], "measured": [1.0, 0.5, 0.3], "bound": [2.0, 1.0, 0.6]}}


@pytest.mark.parametrize("edit, needle", [
    (lambda d: d["results"][0].__setitem__("id", None), "record 0: no 'id'"),
    (lambda d: d["results"].append({}), "record 1: no 'id'"),
    (lambda d: d["results"].append("x"), "record 1 is a string, expected an object"),
    (lambda d: d["results"][0].__setitem__("params", [1, 2]), "record 0 (id 'fedinit.eq3'): 'params' is a list"),
    (lambda d: d["results"][0].__setitem__("extra", {"series": "abc"}), "'series' is a string, expected an object"),
    (lambda d: d["results"][0].__setitem__("extra", {"series": {"x": [1, [2]]}}), "extra.series.x holds a list"),
    (lambda d: d["results"][0].__setitem__("conditions_failed", [{}]), "'conditions_failed' holds something else"),
    (lambda d: d.__setitem__("findings", {"findings": {"x": 3}}), "'findings'.findings['x'] is an integer"),
    (lambda d: d.__setitem__("results", {}), "'results' is an object, expected a list"),
])
def test_8_a_malformed_results_file_is_bad_input_naming_the_record(results_file, tmp_path, capsys, edit, needle):
    """Before: each of these was an AttributeError / TypeError traceback (exit 3)."""
    data = json.loads(results_file.read_text())
    edit(data)
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(data))
    assert main(["report", str(f), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert f"RESULTS='{f}'" in err and needle in err, err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("field", ["id", "setting", "lhs"])
def test_8_text_is_never_parsed_as_mathtext(results_file, tmp_path, field):
    """Before: '$\\frac{$' in an id or a setting was a ValueError from matplotlib's mathtext parser (exit 3)."""
    data = json.loads(results_file.read_text())
    r = data["results"][0]
    r.update(kind="bound", extra=json.loads(json.dumps(_SERIES)))
    text = r"x.$\frac{$ $a_b$"
    if field == "id":
        r["id"] = text
    elif field == "setting":
        r["params"]["setting"] = text
    else:
        r["extra"]["lhs"] = text
    f = tmp_path / "m.json"
    f.write_text(json.dumps(data))
    assert main(["report", str(f), "--out", str(tmp_path / "m.html")]) == 0
    page = (tmp_path / "m.html").read_text()
    svg = page[page.index('data-figure="series"'):]
    assert r"$\frac{$ $a_b$" in svg[:svg.index("</svg>")]  # drawn as written, inside the figure


# ------------------------------------------------------------------------------------ 9. manifests, columns, plug-ins


def test_9_a_manifest_that_is_a_json_list_is_bad_input(tmp_path, run_dir, capsys):
    d = _copy(run_dir, tmp_path / "d")
    (d / MANIFEST).write_text("[1, 2]")
    assert main(["check", "--runs", str(d), "--only", "empirical", "--no-progress"]) == 2
    assert f"{d / MANIFEST}: not a fedtheory run manifest (a JSON list" in capsys.readouterr().err
    assert main(["train", "--out", str(d), "--resume", "--no-progress"]) == 2  # the resume reads it the same way
    assert f"{d / MANIFEST}: not a fedtheory run manifest" in capsys.readouterr().err


def test_9_a_missing_column_is_bad_input_not_error_rows(tmp_path, run_dir, capsys):
    """Before: metrics.csv without test_acc gave `error` rows (KeyError) from every empirical check."""
    d = _copy(run_dir, tmp_path / "d")
    pd.read_csv(d / METRICS).drop(columns=["test_acc"]).to_csv(d / METRICS, index=False)
    code = main(["check", "--runs", str(d), "--only", "fedinit.exp", "empirical", "--no-progress",
                 "--format", "json"])
    cap = capsys.readouterr()
    assert code == 2 and f"{d / METRICS}: no column test_acc (the manifest's columns" in cap.err
    assert '"error"' not in cap.out


def test_9_a_plugin_that_exits_at_import_is_a_plugin_error(tmp_path, capsys):
    """Before: sys.exit(0) at import ended fedtheory with status 0, no output and no --out."""
    p = tmp_path / "quits.py"
    p.write_text("import sys\n\nsys.exit(0)\n")
    code = main(["check", "--plugin", str(p), "--only", "fedinit.eq3", "--out", str(tmp_path / "o.json")])
    err = capsys.readouterr().err
    assert code == 2 and f"failed to import: it called sys.exit(0) while being imported at {p}:3" in err


def test_9_a_plugin_package_named_like_an_imported_module_is_refused(tmp_path):
    from fedtheory.plugins import PluginError, load_plugin

    pkg = tmp_path / "json"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("X = 1\n")
    with pytest.raises(PluginError, match="the package name 'json' is the name of a module already imported"):
        load_plugin(str(pkg))
    assert sys.modules["json"].dumps  # the standard library's module is still there


# ------------------------------------------------------------------------------------ 10. impossible values


@pytest.mark.parametrize("column, value, needle", [
    ("test_acc", np.inf, "column test_acc: inf is outside its range: a finite number in [0, 1]"),
    ("train_acc", 7.0, "column train_acc: 7.0 is outside its range: a finite number in [0, 1] (an accuracy)"),
    ("delta", -5.0, "column delta: -5.0 is outside its range: a finite number >= 0"),
    ("cos_max", 1.5, "column cos_max: 1.5 is outside its range"),
    ("diverged", 2, "column diverged: 2.0 is outside its range"),
    ("round", 9, "column round: 9 is beyond the manifest's 3 rounds"),
    ("run", 5, "column run: 5 is beyond the manifest's 2 run(s)"),
    ("seed", 7, "column seed: 7, but the manifest's run 1 has seed 1"),
    ("test_acc", "abc", "column test_acc: 'abc' is not a number"),
])
def test_10_values_outside_their_declared_range_are_bad_input(tmp_path, run_dir, capsys, column, value, needle):
    """Before: test_acc = inf, train_acc = 7, delta = -5 were accepted (exit 0, 'holds')."""
    d = _copy(run_dir, tmp_path / "d")
    m = pd.read_csv(d / METRICS)
    if isinstance(value, str):
        m[column] = m[column].astype(object)
    m.loc[m.index[-1], column] = value  # the last row: line 9 of the file
    m.to_csv(d / METRICS, index=False)
    assert main(["check", "--runs", str(d), "--only", "empirical", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{d / METRICS}, line 9, {needle}" in err, err


def test_10_rows_the_manifest_does_not_describe_are_bad_input(tmp_path, run_dir, capsys):
    """Before: rows repeated to 200,000 under a 5-round manifest gave '5 rounds complete' while d_t used them all
    (refused by size: test_5_...); a few repeated rows, within the size limit, are named by line."""
    d = _copy(run_dir, tmp_path / "d")
    lines = (d / METRICS).read_text().splitlines(keepends=True)
    (d / METRICS).write_text("".join(lines + lines[1:3]))
    assert main(["check", "--runs", str(d), "--only", "fedmrur.exp", "empirical", "--no-progress"]) == 2
    assert f"{d / METRICS}, line 10: (round 0, run 0) again (first on line 2); 2 repeated row(s)" in \
        capsys.readouterr().err
    (d / METRICS).write_text("".join(lines[:5] + ["1,0,0\n"] + lines[5:]))
    assert main(["check", "--runs", str(d), "--only", "empirical", "--no-progress"]) == 2
    assert f"{d / METRICS}, line 6: 3 fields, the header has" in capsys.readouterr().err


def test_10_a_diverged_run_is_reported_with_where_it_diverged(tmp_path, digits):
    """Before: `empirical.runs` said 'holds: 1 run(s) x 4 rounds complete' of a run whose measures were NaN."""
    from fedtheory.checks import run_checks

    train(_cfg(lr=1e6, seeds=(0,), rounds=4), tmp_path / "div", dataset=digits)
    (r,) = run_checks(only=["empirical.runs"], runs_dir=str(tmp_path))
    first = int(pd.read_csv(tmp_path / "div" / METRICS).query("diverged == 1")["round"].min())
    assert f"1 of 1 run(s) diverged (measures NaN from then on): run 0 at round {first}" in r.detail
    assert r.extra["diverged_at_round"] == {"0": first} and r.verdict == "holds"  # the directory itself is intact


def test_10_the_trainer_checks_its_rows_against_the_same_declaration(tmp_path, digits, monkeypatch):
    """A value the trainer computes outside its declared range is a bug: never written, the rounds before it kept."""
    from fedtheory.empirical.trainer import Trainer

    real = Trainer._state_measures

    def broken(self, state, evaluate, alive):
        out = real(self, state, evaluate, alive)
        if self._broken_calls == 2:
            out["train_acc"] = out["train_acc"] + 7.0
        self._broken_calls += 1
        return out

    monkeypatch.setattr(Trainer, "_state_measures", broken)
    monkeypatch.setattr(Trainer, "_broken_calls", 0, raising=False)
    with pytest.raises(ImpossibleMeasure, match=r"round 2, run 0: train_acc = 7\.\d+ is outside its range"):
        train(_cfg(), tmp_path / "d", dataset=digits)
    assert sorted(set(pd.read_csv(tmp_path / "d" / METRICS)["round"])) == [0, 1]


def test_10_every_measure_the_trainer_writes_has_a_declared_range():
    from fedtheory.empirical.runs import CORE_COLUMNS, MEASURES

    assert set(CORE_COLUMNS) <= set(MEASURE_RANGES) and set(MEASURES) <= set(MEASURE_RANGES)
    bad = out_of_range({"test_acc": [0.5, np.nan, 1.0 + 1e-9, 1.1], "delta": [0.0, -1e-3], "d_t": [np.inf]})
    assert [(c, i) for c, i, _, _ in bad] == [("test_acc", 3), ("delta", 1)]


# ------------------------------------------------------------------------------------ 12. new-paper names


@pytest.mark.parametrize("name, needle", [
    ("fedinit", "a name no loaded paper has"),
    ("empirical", "a name no loaded paper has"),
    ("os", "shadow the standard library's module 'os'"),
    ("sys", "shadow the standard library's module 'sys'"),
    ("numpy", "shadow the module 'numpy' importable here"),
    ("fedtheory", "shadow the module 'fedtheory' importable here"),
])
def test_12_new_paper_refuses_names_that_would_not_load(tmp_path, capsys, name, needle):
    assert main(["new-paper", name, "--dir", str(tmp_path)]) == 2
    assert needle in capsys.readouterr().err and not list(tmp_path.iterdir())


# ------------------------------------------------------------------------------------ 13. report figure caps


def test_13_a_long_series_is_thinned_and_says_so(results_file, tmp_path):
    """Before: a 2,000,000-point series made a 68 MB page (2.5 GB while drawing). 200,000 points here (the cap,
    report.MAX_POINTS = 2000 per line, is what is tested)."""
    from fedtheory.report import MAX_POINTS

    data = json.loads(results_file.read_text())
    n = 200_000
    x = list(range(1, n + 1))
    data["results"][0].update(kind="bound", extra={"series": {"x": x, "measured": [1.0 / i for i in x],
                                                              "bound": [2.0 / i for i in x]}})
    f = tmp_path / "big.json"
    f.write_text(json.dumps(data))
    assert main(["report", str(f), "--out", str(tmp_path / "big.html")]) == 0
    page = (tmp_path / "big.html").read_text()
    drawn = re.search(r"([\d,]+) of 200,000 points \(log-spaced\) drawn", page)
    assert len(page) < 1_000_000 and drawn and 1000 < int(drawn.group(1).replace(",", "")) <= MAX_POINTS + 3
