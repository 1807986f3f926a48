"""The locked environments, the learner zip's set-up (install.py, README.md) and the repository's address.

The zip's set-up run for real, from a built site, is tests/site/test_learner_zip.py.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tx.exercises.learner import CLONE, LEARNER_INSTALL, _repository, readme, write_learner_edition

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"
PLACEHOLDERS = ("&repository_url", "your-org", "{repository}", "](<>)", "]()")
BUILD_AND_TEST_TOOLS = ("jupyter-book", "sphinx", "pytest", "nbval", "playwright", "onnx", "onnxruntime", "myst-nb")


def _spec(line: str) -> tuple[str, str] | None:
    """``("name", "==1.0")`` of a requirement line, None for comments, options and blank lines."""
    line = line.split("#", 1)[0].strip()
    if not line or line.startswith("-"):
        return None
    match = re.match(r"([A-Za-z0-9._-]+)\s*(.*)", line)
    return match.group(1).lower().replace("_", "-"), match.group(2).strip()


def _pins(lock: Path) -> dict[str, str]:
    """``{name: version}`` of every package a lock pins."""
    return {m.group(1).lower(): m.group(2) for m in re.finditer(r"^([A-Za-z0-9._-]+)==(\S+)", lock.read_text(), re.M)}


def _names(requirements: Path) -> set[str]:
    return {spec[0] for line in requirements.read_text().splitlines() if (spec := _spec(line))}


def _install_module():
    spec = importlib.util.spec_from_file_location("learner_install", ROOT / "learner" / "install.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ----------------------------------------------------------------- the locks


@pytest.mark.parametrize("lock", ["requirements.lock", "requirements-learner.lock", "requirements-uv.lock"])
def test_every_locked_package_is_pinned_with_a_hash(lock):
    text = (ROOT / lock).read_text()
    entries = re.findall(r"^([A-Za-z0-9._-]+==\S+)((?:[ \t]*\\\n[ \t]+--hash=sha256:[0-9a-f]{64})*)", text, re.M)
    requirement_lines = [line for line in text.splitlines() if line and not line.startswith((" ", "#"))]
    assert entries and len(entries) == len(requirement_lines), "a line of the lock is no pinned requirement"
    unhashed = [name for name, hashes in entries if not hashes]
    assert not unhashed, f"{lock} pins {unhashed} without a hash: run `make lock`"
    assert not re.search(r"^-e |^tx==|file://", text, re.M), f"{lock} names tx or a local path"


def test_make_installs_the_uv_it_locks_with():
    """`make lock` pins UV_VERSION in requirements-uv.lock; `make` installs the lock with that uv."""
    version = re.search(r"^UV_VERSION := (\S+)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    assert _pins(ROOT / "requirements-uv.lock") == {"uv": version}, "run `make lock`"


@pytest.mark.parametrize("lock", ["requirements.lock", "requirements-learner.lock"])
def test_the_locks_name_pytorchs_cpu_build(lock):
    pins = _pins(ROOT / lock)
    assert pins["torch"] == "2.13.0+cpu"
    assert not [name for name in pins if name.startswith(("nvidia-", "triton"))], "CUDA packages in the lock"


@pytest.mark.parametrize("source, lock", [("requirements.txt", "requirements.lock"),
                                          ("requirements-learner.txt", "requirements-learner.lock")])
def test_the_lock_holds_every_requirement_and_tx_dependency(source, lock):
    """A requirement added to the .txt without `make lock` would install unlocked, or not at all."""
    import tomllib

    pins = _pins(ROOT / lock)
    wanted = _names(ROOT / source) - {"tx"}
    if source == "requirements.txt":
        wanted |= _names(ROOT / "requirements-learner.txt")
    wanted |= {re.match(r"[A-Za-z0-9._-]+", d).group(0).lower()
               for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    assert wanted - set(pins) == set(), f"{lock} lacks these: run `make lock`"


def test_the_learner_set_has_no_build_or_test_tools():
    for path in (ROOT / "requirements-learner.txt", ROOT / "requirements-learner.lock"):
        names = _names(path) if path.suffix == ".txt" else set(_pins(path))
        assert not names & set(BUILD_AND_TEST_TOOLS), f"{path.name}: {sorted(names & set(BUILD_AND_TEST_TOOLS))}"
        assert not {n for n in names if n.startswith("sphinx")}


def test_the_learner_lock_has_the_versions_the_tests_run():
    """Every package a learner gets is the version the book's tests ran with."""
    full, learner = _pins(ROOT / "requirements.lock"), _pins(ROOT / "requirements-learner.lock")
    differ = {name: (version, full.get(name)) for name, version in learner.items() if full.get(name) != version}
    assert not differ, f"learner lock and full lock disagree (learner, full): {differ}; run `make lock`"


def test_the_learner_lock_says_how_much_it_downloads():
    install = _install_module()
    match = install.SIZES.search((ROOT / "requirements-learner.lock").read_text())
    assert match, "no tx-download-bytes line: run `make lock`"
    total, torch = int(match.group(1)), int(match.group(2))
    assert 0 < torch < total


# ----------------------------------------------------------------- install.py


def test_install_takes_the_torch_requirement_with_its_hashes_from_the_lock():
    install = _install_module()
    lines = install.torch_lines((ROOT / "requirements-learner.lock").read_text())
    assert lines.startswith("torch==2.13.0+cpu")
    assert re.findall(r"--hash=sha256:[0-9a-f]{64}", lines) and "# via" not in lines


def test_install_asks_pytorchs_index_unless_told_none(monkeypatch):
    install = _install_module()
    monkeypatch.setattr(install.sys, "platform", "linux")
    monkeypatch.setattr(install.platform, "machine", lambda: "x86_64")
    monkeypatch.delenv(install.TORCH_INDEX_ENV, raising=False)
    assert install.torch_index() == "https://download.pytorch.org/whl/cpu"
    for value in ("none", "None", ""):
        monkeypatch.setenv(install.TORCH_INDEX_ENV, value)
        assert install.torch_index() is None
    monkeypatch.setenv(install.TORCH_INDEX_ENV, "https://mirror.invalid/whl/cpu")
    assert install.torch_index() == "https://mirror.invalid/whl/cpu"
    monkeypatch.setattr(install.sys, "platform", "darwin")  # PyPI's macOS build is a CPU build
    assert install.torch_index() is None


def test_install_turns_jupyterlabs_news_off_and_keeps_other_overrides(tmp_path):
    install = _install_module()
    path = tmp_path / "share/jupyter/lab/settings/overrides.json"
    # the settings `make lab` gives JupyterLab, which the zip carries as jupyterlab-settings.json
    settings = ROOT / LEARNER_INSTALL["jupyterlab-settings.json"]
    assert install.quiet_jupyterlab(tmp_path, settings) == path  # no overrides yet: written
    notification = "@jupyterlab/apputils-extension:notification"
    assert json.loads(path.read_text())[notification] == {"fetchNews": "false", "checkForUpdates": False}
    path.write_text(json.dumps({"@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"},
                                notification: {"doNotDisturbMode": True}}))
    install.quiet_jupyterlab(tmp_path, settings)  # run again: the learner's other settings stay
    assert json.loads(path.read_text()) == {
        "@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"},
        notification: {"doNotDisturbMode": True, "fetchNews": "false", "checkForUpdates": False}}


def test_install_refuses_a_python_outside_an_environment(tmp_path):
    """It would install into the system's Python: it says how to make a venv instead, and does nothing."""
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    if not base.is_file():
        pytest.fail(f"no base interpreter at {base} to run install.py outside a venv")
    done = subprocess.run([str(base), str(ROOT / "learner" / "install.py")], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 2
    assert "not a virtual environment" in done.stderr and "-m venv .venv" in done.stderr
    assert "pip install" not in done.stdout


# ----------------------------------------------------------------- the repository's address


def _config(tmp_path: Path, repository_block: str) -> Path:
    (tmp_path / "_config.yml").write_text(f"title: x\n{repository_block}execute:\n  timeout: 1\n")
    return tmp_path


@pytest.mark.parametrize("block, expected", [
    ('repository:\n  url: &repository_url ""\n  branch: &repository_branch main\n', ""),
    ("repository:\n  url: ''\n", ""),
    ("repository:\n  url:\n  branch: main\n", ""),
    ("repository:\n  branch: main\n", ""),
    ("", ""),
    ('repository:\n  url: &repository_url "https://github.com/ann/tx-book"  # the book\n  branch: main\n',
     "https://github.com/ann/tx-book"),
    ("repository:\n  branch: main\n  url: https://codeberg.org/ann/tx-book\n", "https://codeberg.org/ann/tx-book"),
])
def test_the_repository_is_read_from_config_or_left_empty(tmp_path, block, expected):
    assert _repository(_config(tmp_path, block)) == expected


def test_no_repository_no_clone_paragraph_and_no_placeholder(tmp_path):
    text = readme(_config(tmp_path, 'repository:\n  url: &repository_url ""\n'))
    for placeholder in PLACEHOLDERS:
        assert placeholder not in text
    assert "git clone" not in text and "make lab" not in text and "github" not in text
    assert "install.py" in text and "python3.11 -m venv .venv" in text


def test_a_repository_gets_its_clone_paragraph(tmp_path):
    url = "https://github.com/ann/tx-book"
    text = readme(_config(tmp_path, f'repository:\n  url: &repository_url "{url}"\n'))
    assert CLONE.format(repository=url) in text and "make lab" in text
    for placeholder in PLACEHOLDERS:
        assert placeholder not in text


def test_the_readme_sets_up_with_install_py_then_starts_jupyterlab():
    """The zip test runs the first block and starts the second; both must be there, in that order."""
    blocks = re.findall(r"```bash\n(.*?)```", readme(ROOT), re.S)
    assert len(blocks) == 2
    set_up, start = blocks
    assert set_up.splitlines() == ["python3.11 -m venv .venv", ".venv/bin/python install.py"]
    assert start.strip() == ".venv/bin/jupyter lab"


# ----------------------------------------------------------------- the zip


def _fake_wheel(tmp_path: Path) -> Path:
    wheel = tmp_path / "tx-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("tx/__init__.py", "")
    return wheel


def test_the_zip_carries_what_its_readme_installs(tmp_path):
    zip_path = tmp_path / "edition.zip"
    wheel = _fake_wheel(tmp_path)
    write_learner_edition(tmp_path / "out", CHAPTERS, zip_path, wheel=wheel)
    with zipfile.ZipFile(zip_path) as archive:
        names = set(archive.namelist())
        assert {f"tx-book-learner-edition/{n}" for n in LEARNER_INSTALL} <= names
        assert f"tx-book-learner-edition/{wheel.name}" in names
        for name, path in LEARNER_INSTALL.items():
            assert archive.read(f"tx-book-learner-edition/{name}") == (ROOT / path).read_bytes()
    # the folder make lab opens gets the notebooks and the README only
    assert not (tmp_path / "out" / "install.py").exists() and not list((tmp_path / "out").glob("*.whl"))


@pytest.mark.parametrize("bad", ["missing.whl", "notes.txt"])
def test_a_wheel_that_is_not_tx_is_refused_before_anything_is_written(tmp_path, bad):
    if bad == "notes.txt":
        (tmp_path / bad).write_text("x")
    with pytest.raises(ValueError, match=r"--wheel .*not a wheel of tx"):
        write_learner_edition(tmp_path / "out", CHAPTERS, tmp_path / "edition.zip", wheel=tmp_path / bad)
    assert not (tmp_path / "out").exists() and not (tmp_path / "edition.zip").exists()


def test_a_wheel_without_a_zip_is_refused(tmp_path):
    with pytest.raises(ValueError, match="without --zip"):
        write_learner_edition(tmp_path / "out", CHAPTERS, wheel=_fake_wheel(tmp_path))


def test_install_knows_what_is_installed_already(monkeypatch):
    # Issue 47: run again, install.py announced the whole 357 MB download, which pip then skipped.
    install = _install_module()
    lock = "numpy==2.3.0 \\\n    --hash=sha256:aa\ntorch==2.13.0+cpu \\\n    --hash=sha256:bb\n    # via tx\n"
    installed = {"numpy": "2.3.0", "torch": "2.12.0"}

    def version(name):
        if name not in installed:
            raise install.metadata.PackageNotFoundError(name)
        return installed[name]

    monkeypatch.setattr(install.metadata, "version", version)
    assert install.missing(lock) == ["torch==2.13.0+cpu"]  # another torch is not the locked one
    installed["torch"] = "2.13.0+cpu"
    assert install.missing(lock) == []
    del installed["numpy"]
    assert install.missing(lock) == ["numpy==2.3.0"]


def test_install_names_the_torch_index_setting_when_pip_fails(monkeypatch, capsys):
    # Issue 47: where PyTorch's index cannot be reached, the failure named no way out.
    install = _install_module()
    monkeypatch.setattr(install.subprocess, "run", lambda command: subprocess.CompletedProcess(command, 1))
    with pytest.raises(SystemExit):
        install.pip("torch", advice=" set TX_TORCH_INDEX to a mirror")
    assert "TX_TORCH_INDEX" in capsys.readouterr().err
    source = (ROOT / "learner" / "install.py").read_text()
    assert "advice=f\" PyTorch's CPU build comes from {where}" in source and "{TORCH_INDEX_ENV} to an index" in source
