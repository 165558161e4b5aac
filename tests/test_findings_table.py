"""scripts/findings_table.py writes README's "What it found" table from a results file: counted findings per paper
and class, fragile ones marked, the zoo in one row; README holds a table of that form (not a placeholder)."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("findings_table", ROOT / "scripts" / "findings_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_table_counts_each_finding_once_by_paper_and_class():
    payload = {"findings": {"classes": {"erratum": ["pa.x|p1", "pa.y|p1"], "false_as_stated": ["pb.z|p2"],
                                        "inconsistent_rate": ["zoo1.t|p"]},
                            "fragile": ["pb.z|p2"]},
               "collections": {"zoo": {"papers": ["zoo1"], "tested": ["zoo1.t"], "rows": 7, "counted": 1}}}
    lines = _script().findings_table(payload).splitlines()
    assert lines[2] == "| pa | 2 | erratum: `pa.x`, `pa.y` |"
    assert lines[3] == "| pb | 1 | false as stated: `pb.z` (fragile) |"
    assert lines[4] == "| the zoo (1 papers of trusted theorems, 1 theorems tested, 7 rows) | 1 | - |"
    assert len(lines) == 5  # the zoo's finding is in the zoo's row, not a paper's


def test_readme_holds_the_table():
    text = (ROOT / "README.md").read_text()
    assert "FINDINGS_TABLE" not in text
    assert "| paper | counted findings | by class |" in text and "| the zoo (" in text
