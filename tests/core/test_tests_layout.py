"""The test folders have no package files, so pytest imports every test module and helper by
its file name alone: two files of one name in different folders make the whole run fail at
collection ("import file mismatch"), and a helper imported by name finds whichever was loaded
first. Every .py name under tests/ but conftest.py is therefore unique."""

import collections
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_module_name_under_tests_is_unique():
    names = collections.defaultdict(list)
    for path in TESTS.rglob("*.py"):
        if path.name != "conftest.py" and "__pycache__" not in path.parts:
            names[path.name].append(str(path.relative_to(TESTS)))
    twice = {n: sorted(p) for n, p in names.items() if len(p) > 1}
    assert not twice, f"rename one of each: {twice}"
