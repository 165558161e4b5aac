"""No simulation checks: Theorem 2's statements are O~ / O complexities whose constants were not available (see
records.py), so no simulation row can compare with them; their units are checked by the units check every paper gets
(``koloskova2020.units``). The module keeps the paper's package of the plug-in shape."""
