"""`fedtheory list` keeps its listings between runs (fedtheory/cli/listing.py, issue 42's 0.5 s budget): a listing read
back prints what a full load prints, imports no sympy, and is read only while everything it was built from is
unchanged; anything it cannot trust (a changed plug-in, a warning, a damaged or odd file, an unwritable folder) falls
back to the full load. Each run is a fresh process, as a user's is."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RACY = 2.1  # s: a listing is not kept while a file it depends on is younger than 2 s

PLUGIN = """import sympy as sp
from fedtheory.theory import Bound, SymbolSet, register

S = SymbolSet("cachetest", strict=True)
D = S.add("D", "gap", sp.Interval(0, sp.oo), dim="f")
register(Bound(id="cachetest.thm1", paper="cachetest", title={title!r}, source="test", symbols=S, assumptions=(),
               lhs="opt_error", lhs_description="x", expr=D))
"""


def _run(args, cache: Path, cwd: Path, **env):
    e = {k: v for k, v in os.environ.items() if k != "FEDTHEORY_PLUGINS"}
    e.update({"FEDTHEORY_CACHE": str(cache), **env})
    return subprocess.run([sys.executable, "-m", "fedtheory.cli", *args], cwd=cwd, env=e, capture_output=True,
                          text=True, timeout=300)


def _plugin(path: Path, title: str, age_s: float) -> None:
    path.write_text(PLUGIN.format(title=title))
    t = time.time() - age_s  # older than the 2 s a listing waits before trusting a file's time
    os.utime(path, (t, t))


def _files(cache: Path) -> list[Path]:
    return sorted((cache / "listing").glob("*.json")) if (cache / "listing").is_dir() else []


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """A cache folder after one listing of each kind (each kept), and what the full load printed."""
    root = tmp_path_factory.mktemp("listing")
    cache, tmp = root / "cache", root / "work"  # the cache outside the folder run in (sys.path[0], whose time counts)
    (root / "plugins").mkdir()
    tmp.mkdir()
    plugin = root / "plugins" / "cachetest.py"
    _plugin(plugin, "first title", 60)
    argsets = [["list"], ["list", "--format", "json"], ["list", "--paper", "drori2014"], ["list", "--kind", "bound"],
               ["list", "--checks"], ["list", "--checks", "--paper", "fedinit"], ["list", "--plugins"],
               ["list", "--plugin", str(plugin)]]
    full = {}
    for a in argsets:
        r = _run(a, tmp / "off", tmp, FEDTHEORY_CACHE="")
        assert r.returncode == 0, r.stderr
        full[tuple(a)] = r.stdout
    for a in (["list"], ["list", "--checks"], ["list", "--plugins"], ["list", "--plugin", str(plugin)]):
        assert _run(a, cache, tmp).returncode == 0
    return tmp, cache, plugin, argsets, full


def test_a_listing_read_back_prints_what_the_full_load_prints(warm):
    tmp, cache, _, argsets, full = warm
    assert len(_files(cache)) == 3  # records, checks, plug-ins (the --plugin listing replaced the plain one's file)
    for a in argsets:
        r = _run(a, cache, tmp)
        assert r.returncode == 0 and r.stderr == "", (a, r.stderr)
        assert r.stdout == full[tuple(a)], a
    assert not list(tmp.joinpath("off").glob("**/*.json"))  # FEDTHEORY_CACHE='' kept nothing


def test_a_listing_read_back_imports_no_sympy_and_a_damaged_one_is_rebuilt(warm):
    """The read-back path never imports sympy nor a plug-in (the budget's cause); the control: a listing whose rows
    are edited in its file (its key and files intact) prints the edit, so the file is what was read; a damaged file
    (not JSON, rows of another shape, a FIFO) is rebuilt, the listing unchanged."""
    tmp, cache, _, _, full = warm
    code = ("import sys; from fedtheory.cli import main; code = main(['list']); "
            "print('SYMPY', 'sympy' in sys.modules, 'fedtheory.papers.fedinit' in sys.modules)")
    env = {**os.environ, "FEDTHEORY_CACHE": str(cache)}
    seen = [subprocess.run([sys.executable, "-c", code], cwd=tmp, env=env, capture_output=True, text=True,
                           timeout=300).stdout.splitlines()[-1] for _ in range(2)]  # the first keeps its listing
    assert seen == ["SYMPY True True", "SYMPY False False"], seen
    for _ in range(2):
        _run(["list"], cache, tmp)
    path = next(p for p in _files(cache) if p.name.startswith("records-"))
    data = json.loads(path.read_text())
    data["rows"][0]["title"] = "EDITED IN THE CACHE"
    path.write_text(json.dumps(data))
    assert "EDITED IN THE CACHE" in _run(["list"], cache, tmp).stdout
    for damage in ("{not json", json.dumps({**data, "rows": [{"id": "x"}]}), json.dumps([1, 2]), ""):
        path.write_text(damage)
        r = _run(["list"], cache, tmp)
        assert r.returncode == 0 and r.stdout == full[("list",)] and r.stderr == "", damage[:20]
    os.unlink(path)
    os.mkfifo(path)  # never opened for reading (it would block) nor replaced by a file: rebuilt
    try:
        r = _run(["list"], cache, tmp)
        assert r.returncode == 0 and r.stdout == full[("list",)]
        assert path.is_fifo()
    finally:
        os.unlink(path)


def test_a_changed_plugin_is_listed_as_it_is_now(warm):
    tmp, cache, plugin, _, _ = warm
    assert "first title" in _run(["list", "--plugin", str(plugin)], cache, tmp).stdout
    _plugin(plugin, "second title", 30)
    r = _run(["list", "--plugin", str(plugin)], cache, tmp)
    assert "second title" in r.stdout and "first title" not in r.stdout
    _plugin(plugin, "third title", 0)  # changed just now: listed, but not kept until its time is older than 2 s
    assert "third title" in _run(["list", "--plugin", str(plugin)], cache, tmp).stdout
    assert "third title" in _run(["list", "--plugin", str(plugin)], cache, tmp).stdout
    # a plug-in named through $FEDTHEORY_PLUGINS instead: another key, never the --plugin listing's rows
    r = _run(["list"], cache, tmp, FEDTHEORY_PLUGINS=str(plugin))
    assert "third title" in r.stdout
    assert "cachetest" not in _run(["list"], cache, tmp).stdout


def test_a_file_the_plugin_reads_is_watched_too(tmp_path):
    """A plug-in whose title comes from a data file it reads at import: the data file edited in place (same size)
    changes the listing, as does a file the plug-in looked for and did not find appearing."""
    cache, work = tmp_path / "cache", tmp_path / "work"
    work.mkdir()
    data, extra = tmp_path / "title.json", tmp_path / "extra.txt"
    plugin = tmp_path / "datatest.py"
    plugin.write_text(PLUGIN.replace("cachetest", "datatest").format(title="T").replace(
        "title='T'", "title=__import__('json').loads(open(" + repr(str(data)) + ").read())"
        " + (open(" + repr(str(extra)) + ").read() if __import__('os').path.exists(" + repr(str(extra)) + ") else '')"))

    def put(path, text, age_s):
        path.write_text(text)
        t = time.time() - age_s
        os.utime(path, (t, t))

    put(data, '"title A"', 60)
    os.utime(plugin, (time.time() - 60, time.time() - 60))
    os.utime(tmp_path, (time.time() - 60, time.time() - 60))
    for _ in range(2):  # the first run writes the plug-in's .pyc (a fresh file): kept by the second
        r = _run(["list", "--plugin", str(plugin)], cache, work)
        assert "title A" in r.stdout, r.stderr
        time.sleep(RACY)
    assert _files(cache)
    put(data, '"title B"', 30)  # same size, another time
    assert "title B" in _run(["list", "--plugin", str(plugin)], cache, work).stdout
    time.sleep(RACY)
    assert "title B" in _run(["list", "--plugin", str(plugin)], cache, work).stdout
    put(extra, " and more", 20)  # looked for at import, absent until now
    assert "title B and more" in _run(["list", "--plugin", str(plugin)], cache, work).stdout


def test_a_load_that_warned_is_not_kept_and_warns_again(tmp_path):
    cache = tmp_path / "cache"
    (tmp_path / "notaplugin.py").write_text("X = 1\n")
    t = time.time() - 60
    os.utime(tmp_path / "notaplugin.py", (t, t))
    for _ in range(2):
        r = _run(["list", "--plugin", str(tmp_path / "notaplugin.py")], cache, tmp_path)
        assert r.returncode == 0 and "registered no record and no check" in r.stderr
    assert _files(cache) == []


def test_a_folder_that_cannot_be_written_leaves_the_listing_unkept(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    r = _run(["list", "--paper", "drori2014"], blocker, tmp_path)
    assert r.returncode == 0 and "drori2014.thm3_1" in r.stdout and r.stderr == ""
    assert blocker.read_text() == "x"


def test_in_a_process_that_registered_records_the_listing_is_built(tmp_path, monkeypatch, capsys):
    """A Python session (or a test) that has imported the records may have registered some outside any plug-in:
    `main(['list'])` there builds its listing and never reads one back."""
    from fedtheory.cli import main
    from fedtheory.cli.listing import listing_path

    monkeypatch.setenv("FEDTHEORY_CACHE", str(tmp_path))
    path = listing_path("records")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"format": "fedtheory.listing/1", "key": {}, "files": [],
                                "rows": [{"id": "bogus.thm", "paper": "bogus", "kind": "bound", "title": "",
                                          "source": ""}]}))
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "bogus.thm" not in out and "drori2014.thm3_1" in out


def test_the_cache_folder_follows_its_environment(monkeypatch, tmp_path):
    from fedtheory.files import cache_dir

    monkeypatch.setenv("FEDTHEORY_CACHE", "")
    assert cache_dir("listing") is None
    monkeypatch.setenv("FEDTHEORY_CACHE", str(tmp_path))
    assert cache_dir("listing") == tmp_path / "listing"
    monkeypatch.delenv("FEDTHEORY_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir("symbolic") == tmp_path / "xdg" / "fedtheory" / "symbolic"
    monkeypatch.delenv("XDG_CACHE_HOME")

    def no_home():
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert cache_dir("listing") is None  # no cache rather than a folder named '~' in the current one
