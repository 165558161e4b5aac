"""Files a user gets (``fedtheory check --out/--report``, ``fedtheory report``, a run directory's manifest) are
written whole and with the user's umask, like any file the user writes: not mkstemp's 0600."""
from __future__ import annotations

import json
import os
import stat

import pytest

from fedtheory import files
from fedtheory.cli import main
from fedtheory.empirical.runs import MANIFEST, write_manifest


@pytest.fixture
def umask():
    """Set the process umask for one test; the old one comes back."""
    old = os.umask(0o022)
    yield os.umask
    os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002, 0o077])
def test_a_written_file_gets_the_users_umask(tmp_path, umask, mask):
    umask(mask)
    path = tmp_path / "out.json"
    files.write_atomic(path, "{}")
    assert _mode(path) == 0o666 & ~mask
    with open(tmp_path / "plain.txt", "w"):  # what any file the user writes gets
        pass
    assert _mode(path) == _mode(tmp_path / "plain.txt")
    files.write_atomic(path, b"[]")  # replacing keeps the rule, and leaves no temporary file
    assert path.read_text() == "[]" and _mode(path) == 0o666 & ~mask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "plain.txt"]


def test_check_out_and_report_are_readable_by_the_group(tmp_path, umask):
    umask(0o027)
    out, report = tmp_path / "res" / "check.json", tmp_path / "check.html"
    code = main(["check", "--only", "fedinit.eq3", "--no-progress", "--out", str(out), "--report", str(report)])
    assert code == 0
    assert json.loads(out.read_text())["results"] and report.read_text().lstrip().startswith("<!")
    assert _mode(out) == _mode(report) == 0o640
    page = tmp_path / "again.html"
    assert main(["report", str(out), "--out", str(page)]) == 0
    assert _mode(page) == 0o640


def test_a_run_directory_manifest_gets_the_users_umask(tmp_path, umask):
    umask(0o002)
    write_manifest(tmp_path, {"schema": "x"})
    assert _mode(tmp_path / MANIFEST) == 0o664


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "keep.json"
    path.write_text("old")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", broken_replace)
    with pytest.raises(OSError, match="No space"):
        files.write_atomic(path, "new")
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["keep.json"]
