"""What `--out` and `--report` may replace: a new path, or a regular file fedtheory wrote (any regular file with
--force), never a FIFO, a device, an input of the run or a file under --runs; an existing file keeps its mode, a
symbolic link is written through. Each case here once replaced what it should not."""
from __future__ import annotations

import json
import os
import stat

import pytest

from fedtheory import files
from fedtheory.cli import main

ONLY = ["--only", "drori2014.thm3_1", "--no-progress"]


def test_a_fifo_or_a_device_is_never_replaced(tmp_path, capsys):
    """Before: `--out` on a FIFO or a character device replaced it with a regular file (as root, `--out /dev/null`
    would replace the system's /dev/null)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for flag in ("--out", "--report"):
        assert main(["check", *ONLY, flag, str(fifo)]) == 2
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
        assert "a FIFO, not a regular file" in capsys.readouterr().err
    # a character device of the test's own (never the system's /dev/null: a tree without the fix would replace it)
    device = tmp_path / "null"
    try:
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        device = None
    if device is not None:
        assert main(["check", *ONLY, "--out", str(device)]) == 2
        assert main(["report", str(fifo), "--out", str(device)]) == 2
        assert stat.S_ISCHR(os.lstat(device).st_mode)
    # and the writer itself refuses, whoever calls it
    with pytest.raises(OSError, match="not a regular file"):
        files.write_atomic(fifo, "x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_an_input_of_the_run_is_never_replaced_even_with_force(tmp_path, capsys):
    """Before: `check --plugin mine.py --out mine.py` overwrote the plug-in's source with JSON."""
    plugin = tmp_path / "mine.py"
    source = "X = 1\n"
    plugin.write_text(source)
    for extra in ([], ["--force"]):
        assert main(["check", "--plugin", str(plugin), *ONLY, "--out", str(plugin), *extra]) == 2
        assert "an input of this run" in capsys.readouterr().err
        assert plugin.read_text() == source


def test_a_file_fedtheory_did_not_write_is_replaced_only_with_force(tmp_path, capsys):
    """Before: `--out notes.txt` replaced the user's file without a word."""
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    assert main(["check", *ONLY, "--out", str(notes)]) == 2
    assert "fedtheory did not write" in capsys.readouterr().err and notes.read_text() == "my notes\n"
    assert main(["check", *ONLY, "--out", str(notes), "--force"]) == 0
    assert json.loads(notes.read_text())["fedtheory"]
    # a file fedtheory wrote is replaced without --force: a results file, a report, an empty file
    assert main(["check", *ONLY, "--out", str(notes), "--report", str(tmp_path / "r.html")]) == 0
    assert main(["check", *ONLY, "--report", str(tmp_path / "r.html")]) == 0
    empty = tmp_path / "empty.json"
    empty.touch()
    assert main(["check", *ONLY, "--out", str(empty)]) == 0
    user_html = tmp_path / "page.html"
    user_html.write_text("<html>mine</html>")
    assert main(["report", str(notes), "--out", str(user_html)]) == 2
    assert user_html.read_text() == "<html>mine</html>"
    assert main(["report", str(notes), "--out", str(user_html), "--force"]) == 0


def test_an_existing_file_keeps_its_mode(tmp_path):
    """Before: a 0444 results file came back 0644."""
    out = tmp_path / "r.json"
    assert main(["check", *ONLY, "--out", str(out)]) == 0
    os.chmod(out, 0o444)
    assert main(["check", *ONLY, "--out", str(out)]) == 0
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o444


def test_a_symbolic_link_is_written_through(tmp_path, capsys):
    """Before: the link became a regular file. Now the file it points to is written, the link kept, and the line
    that says where the results went says so."""
    target = tmp_path / "results.json"
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    assert main(["check", *ONLY, "--out", str(link)]) == 0
    assert os.path.islink(link) and json.loads(target.read_text())["fedtheory"]
    assert "written through to" in capsys.readouterr().out
    dangling_to_fifo = tmp_path / "to_fifo"
    os.mkfifo(tmp_path / "fifo2")
    dangling_to_fifo.symlink_to(tmp_path / "fifo2")
    assert main(["check", *ONLY, "--out", str(dangling_to_fifo)]) == 2


def test_an_empty_out_is_a_usage_error(capsys):
    """Before: `--out ""` was ignored (nothing written, exit 0)."""
    assert main(["check", *ONLY, "--out", ""]) == 2
    assert "--out" in capsys.readouterr().err
    assert main(["check", *ONLY, "--report", ""]) == 2
    assert main(["report", "x.json", "--out", ""]) == 2


def test_a_file_under_runs_is_never_replaced(tmp_path, capsys):
    runs = tmp_path / "runs"
    (runs / "r1").mkdir(parents=True)
    metrics = runs / "r1" / "metrics.csv"
    metrics.write_text("round,loss\n")
    with pytest.raises(files.FileRefused, match="which this run reads"):
        files.check_writable(metrics, force=True, input_dirs=[runs])
    files.check_writable(runs / "r1" / "new.json", input_dirs=[runs])  # a new file there is no input


def test_written_by_fedtheory_reads_the_head_only(tmp_path):
    big = tmp_path / "big.json"
    big.write_text('{\n  "fedtheory": "0.2.0",\n' + " " * 10_000_000 + "}")
    assert files.written_by_fedtheory(big)
    assert not files.written_by_fedtheory(tmp_path / "missing")
    other = tmp_path / "other.json"
    other.write_text('{"results": [], "fedtheory": "x"}')  # not fedtheory's own layout
    assert not files.written_by_fedtheory(other)


def test_report_refuses_a_results_file_over_its_limit_before_reading_it(tmp_path, capsys):
    """Before: a 200 MB results file (under the 512 MiB limit) peaked at 3.8 GB and ended in MemoryError (exit 3). The
    limit is now what drawing a file costs within ~1 GB (13x its size, measured), and the refusal names it."""
    from fedtheory.report import MAX_RESULTS_BYTES

    assert MAX_RESULTS_BYTES <= 64 << 20
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(MAX_RESULTS_BYTES + 1)  # sparse: nothing to read before the size says no
    assert main(["report", str(big), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "64 MiB" in err and len(err.strip().splitlines()) == 1
