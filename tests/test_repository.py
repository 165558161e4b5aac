"""The repository holds only its own files: no symlink (a link committed from one machine points into that
machine's folders, and is broken everywhere else) and no tracked file that names a machine's temporary folder (a
link stored as a plain file, or a path copied from a run)."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SYMLINK, SUBMODULE = "120000", "160000"  # git's modes of a link and of a pointer to another repository
# the folders that mktemp ('tmp.' + 10 characters), Python's tempfile ('tmp' + 8) and pytest ('pytest-of-' + user)
# make under /tmp, macOS's per-user temporary folders under /var/folders, Windows' AppData Local Temp
TEMP_PATH = re.compile(rb"(/private)?(/var)?/tmp/(tmp|pytest-of-)|/var/folders/[\w-]+/|AppData[\\/]+Local[\\/]+Temp")


def tracked_entries(root: Path) -> list[tuple[str, str]]:
    """(mode, path) of every file git tracks under ``root``."""
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("not a git checkout (an unpacked source distribution): nothing is tracked")
    out = subprocess.run(["git", "ls-files", "-s", "-z"], cwd=root, capture_output=True, check=True).stdout
    rows = [entry.split(b"\t", 1) for entry in out.split(b"\0") if entry]
    return [(meta.split()[0].decode(), path.decode()) for meta, path in rows]


def points_outside(root: Path, mode: str, path: str) -> str | None:
    """Why the tracked file points outside the repository, or None."""
    if mode in (SYMLINK, SUBMODULE):
        return f"a {'symlink' if mode == SYMLINK else 'submodule'} (mode {mode})"
    file = root / path
    if file.is_symlink():
        return "a symlink in the working tree"
    if not file.is_file():
        return None  # deleted in the working tree, not yet in a commit
    data = file.read_bytes()
    found = TEMP_PATH.search(data)
    if found:
        line = data[:found.start()].count(b"\n") + 1
        return f"names a machine's temporary folder at line {line}: {found.group().decode(errors='replace')!r}"
    return None


def test_no_symlink_and_no_file_pointing_outside_the_repository():
    bad = {path: why for mode, path in tracked_entries(ROOT) if (why := points_outside(ROOT, mode, path))}
    assert bad == {}


def test_the_rule_catches_a_link_and_a_temp_path(tmp_path):
    """What the test above would report: a committed link, and a file holding the path of a mktemp folder."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    mktemp_folder = "/tmp/" + "tmp.OyxqDGODt2"  # written in two pieces: this file is tracked too
    (tmp_path / "sudo").symlink_to(mktemp_folder + "/bin/sudo")
    (tmp_path / "notes.txt").write_text(f"see\n{mktemp_folder}/out.json\n")
    (tmp_path / "fine.md").write_text("fedtheory check --out /tmp/check.json\n")
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    found = {path: points_outside(tmp_path, mode, path) for mode, path in tracked_entries(tmp_path)}
    assert found["sudo"] == "a symlink (mode 120000)"
    assert found["notes.txt"].startswith("names a machine's temporary folder at line 2")
    assert found["fine.md"] is None
