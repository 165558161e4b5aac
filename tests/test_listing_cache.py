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


def _aged(path: Path, text: str | None = None, age_s: float = 60) -> Path:
    if text is not None:
        path.write_text(text)
    t = time.time() - age_s
    os.utime(path, (t, t))
    return path


def _kept(args, cache, cwd, **env) -> str:
    """Run twice with a pause (the first run may write .pyc files: kept by the second); the listing printed."""
    out = _run(args, cache, cwd, **env)
    assert out.returncode == 0, out.stderr
    time.sleep(RACY)
    again = _run(args, cache, cwd, **env)
    assert again.stdout == out.stdout
    return again.stdout


def _title_plugin(path: Path, expr: str, paper: str = "envtest") -> Path:
    text = PLUGIN.replace("cachetest", paper).format(title="T").replace("title='T'", f"title={expr}")
    return _aged(path, "import os\n" + text)


def test_what_the_listing_did_not_see_before_is_seen(tmp_path):
    """The audit's cases (a helper session tried to make a kept listing print what a full load would not): an
    environment variable the plug-in reads, a symbolic link to the plug-in moved to another release, a same-size edit
    with its modification time put back, a folder on sys.path created later that shadows the plug-in, warning options,
    a title that is not text. Each prints what a full load prints."""
    cache, work = tmp_path / "cache", tmp_path / "work"
    work.mkdir()
    env_plugin = _title_plugin(tmp_path / "envp.py", "os.environ.get('RP_TITLE', 'default title')")
    assert "default title" in _kept(["list", "--plugin", str(env_plugin)], cache, work)
    assert "other title" in _run(["list", "--plugin", str(env_plugin)], cache, work, RP_TITLE="other title").stdout

    for release, title in (("v1", "release one"), ("v2", "release two")):
        (tmp_path / release).mkdir()
        _title_plugin(tmp_path / release / "p.py", repr(title), paper="linktest")
    (tmp_path / "cur").symlink_to(tmp_path / "v1")
    target = str(tmp_path / "cur" / "p.py")
    assert "release one" in _kept(["list", "--plugin", target], cache, work)
    (tmp_path / "cur").unlink()
    (tmp_path / "cur").symlink_to(tmp_path / "v2")
    assert "release two" in _run(["list", "--plugin", target], cache, work).stdout

    same = _title_plugin(tmp_path / "same.py", "'AAAA'", paper="sametest")
    assert "AAAA" in _kept(["list", "--plugin", str(same)], cache, work)
    stamp = same.stat()
    same.write_text(same.read_text().replace("AAAA", "BBBB"))
    os.utime(same, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # as `touch -r` or `cp -p` put it back
    assert same.stat().st_mtime_ns == stamp.st_mtime_ns and same.stat().st_size == stamp.st_size
    assert "BBBB" in _run(["list", "--plugin", str(same)], cache, work).stdout

    first, second = tmp_path / "first", tmp_path / "second"  # `first` is on PYTHONPATH before it exists
    second.mkdir()
    _title_plugin(second / "shadowed.py", "'from second'", paper="shadowtest")
    path = f"{first}{os.pathsep}{second}"
    assert "from second" in _kept(["list", "--plugin", "shadowed"], cache, work, PYTHONPATH=path)
    first.mkdir()
    _title_plugin(first / "shadowed.py", "'from first'", paper="shadowtest")
    assert "from first" in _run(["list", "--plugin", "shadowed"], cache, work, PYTHONPATH=path).stdout

    empty = _aged(tmp_path / "empty.py", "X = 1\n")
    quiet = _kept(["list", "--plugin", str(empty)], cache, work, PYTHONWARNINGS="ignore")
    r = _run(["list", "--plugin", str(empty)], cache, work)
    assert r.stdout == quiet and "registered no record and no check" in r.stderr

    odd = _title_plugin(tmp_path / "odd.py", "('part a', 'part b')", paper="oddtest")
    for _ in range(2):  # a title that is not text: never kept, printed as the full load prints it
        assert "('part a', 'part b')" in _run(["list", "--plugin", str(odd)], cache, work).stdout
        time.sleep(RACY)
    assert "('part a', 'part b')" in _run(["list", "--plugin", str(odd)], cache, work).stdout


def test_a_listing_of_another_shape_or_a_link_is_never_printed_nor_written_through(tmp_path):
    cache, work = tmp_path / "cache", tmp_path / "work"
    work.mkdir()
    full = _kept(["list", "--paper", "drori2014"], cache, work)
    path = next(p for p in _files(cache) if p.name.startswith("records-"))
    good = json.loads(path.read_text())
    for change in ({"title": 7}, {"paper": ["x"]}, {"id": None}, {"extra": "leak"}):
        bad = json.loads(json.dumps(good))
        bad["rows"][0].update(change)
        path.write_text(json.dumps(bad))
        r = _run(["list", "--paper", "drori2014", "--format", "json"], cache, work)
        assert r.returncode == 0 and "leak" not in r.stdout and r.stderr == "", change
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    path.unlink()
    path.symlink_to(victim)
    for _ in range(2):
        assert _run(["list", "--paper", "drori2014"], cache, work).stdout == full
        time.sleep(RACY)
    assert victim.read_text() == "mine" and path.is_symlink()
    assert oct(path.parent.stat().st_mode & 0o777) == "0o700"


def test_what_the_second_audit_found_is_seen_or_never_kept(tmp_path):
    """A second pass of the audit: `os.environ | {...}` works while a listing is built (the stand-in is of
    os.environ's own type); `os.environb` is watched; a flag file only tested with `os.path.exists` and a title read
    from an sqlite database are watched; a load that runs another program, counts the environment or reroutes the
    warnings to logging is never kept; a cache folder others can write to is not used."""
    cache, work = tmp_path / "cache", tmp_path / "work"
    work.mkdir()
    merged = _title_plugin(tmp_path / "merged.py", "(os.environ | {'RP_X': 'merged'})['RP_X']", paper="mergetest")
    r = _run(["list", "--plugin", str(merged)], cache, work)
    assert r.returncode == 0 and "merged" in r.stdout, r.stderr

    envb = _title_plugin(tmp_path / "envb.py", "os.environb.get(b'RP_B', b'bytes one').decode()", paper="envbtest")
    assert "bytes one" in _kept(["list", "--plugin", str(envb)], cache, work)
    assert "bytes two" in _run(["list", "--plugin", str(envb)], cache, work, RP_B="bytes two").stdout

    flag = tmp_path / "flags" / "enabled"
    flag.parent.mkdir()
    _aged(flag.parent)
    flagged = _title_plugin(tmp_path / "flagged.py", f"'on' if os.path.exists({str(flag)!r}) else 'off'",
                            paper="flagtest")
    assert "off" in _kept(["list", "--plugin", str(flagged)], cache, work)
    _aged(flag, "", 30)
    _aged(flag.parent, None, 30)  # the folder's times put back: only the stat of the flag tells
    assert " on " in _run(["list", "--plugin", str(flagged)], cache, work).stdout.replace("\n", " ")

    db = tmp_path / "titles.db"
    import sqlite3

    with sqlite3.connect(db) as con:
        con.execute("create table t (v text)")
        con.execute("insert into t values ('db one')")
    con.close()
    _aged(db)
    reader = _title_plugin(tmp_path / "dbp.py", f"__import__('sqlite3').connect({str(db)!r}).execute("
                           "'select v from t').fetchone()[0]", paper="dbtest")
    assert "db one" in _kept(["list", "--plugin", str(reader)], cache, work)
    with sqlite3.connect(db) as con:
        con.execute("update t set v = 'db two'")
    con.close()
    _aged(db, None, 30)
    assert "db two" in _run(["list", "--plugin", str(reader)], cache, work).stdout

    for name, expr in (("runs", "__import__('subprocess').check_output(['echo', 'from a program'], text=True).strip()"),
                       ("counts", "str(len(os.environ) > 0)"),
                       ("logs", "[__import__('logging').captureWarnings(True), 'rerouted'][1]")):
        plugin = _title_plugin(tmp_path / f"{name}.py", expr, paper=f"{name}test")
        kept = _files(cache)
        for _ in range(2):
            assert _run(["list", "--plugin", str(plugin)], cache, work).returncode == 0
            time.sleep(RACY)
        assert [p.stat().st_mtime_ns for p in _files(cache)] == [p.stat().st_mtime_ns for p in kept], name

    shared = tmp_path / "shared"
    (shared / "listing").mkdir(parents=True)
    os.chmod(shared / "listing", 0o777)
    for _ in range(2):
        assert "drori2014.thm3_1" in _run(["list", "--paper", "drori2014"], shared, work).stdout
        time.sleep(RACY)
    assert _files(shared) == []
