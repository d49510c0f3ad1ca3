"""`make test` runs across the cores (pytest-xdist, --dist loadgroup): the tests that share an expensive session
fixture must land in one worker, or each worker builds it (the executed book is minutes of CPU). Checked with
the suite's own conftest, the installed pytest and xdist, in a subprocess run of a few stand-in tests."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("xdist")

REPO = Path(__file__).resolve().parents[1]

STAND_INS = '''
import pytest

@pytest.fixture(scope="session")
def built_book():
    return None

@pytest.fixture(scope="session")
def smollm2():
    return None

@pytest.mark.parametrize("i", range(6))
def test_book(i, built_book):
    pass

@pytest.mark.parametrize("i", range(6))
def test_lm(i, smollm2):
    pass

@pytest.mark.parametrize("i", range(6))
def test_free(i):
    pass

def test_fails_with_its_output():
    print("the words a failing test printed")
    assert 1 == 2
'''


def test_tests_sharing_a_session_fixture_run_in_one_worker_and_a_failure_names_its_test(tmp_path):
    shutil.copy(REPO / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_stand_ins.py").write_text(STAND_INS)
    r = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p",
                        "no:cacheprovider", "-o", "addopts=", "test_stand_ins.py"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    ran = re.findall(r"\[(gw\d)\].*? (PASSED|FAILED) test_stand_ins\.py::(test_\w+)", out)
    assert len(ran) == 19, out[-3000:]
    workers = {name: {gw for gw, _, n in ran if n == name} for name in ("test_book", "test_lm", "test_free")}
    assert len(workers["test_book"]) == 1, f"the book's tests ran in {workers['test_book']}:\n{out[-3000:]}"
    assert len(workers["test_lm"]) == 1, f"the pretrained model's tests ran in {workers['test_lm']}"
    assert len(workers["test_free"] | workers["test_book"] | workers["test_lm"]) == 2, "one worker did all"
    # a failure in a worker reads as in a serial run: the test's name, its assertion and what it printed
    assert r.returncode == 1
    assert "FAILED test_stand_ins.py::test_fails_with_its_output" in out
    assert "assert 1 == 2" in out and "the words a failing test printed" in out
