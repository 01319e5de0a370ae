"""The repository as a Hugging Face Space: front matter, requirements.txt, and (slow) a fresh venv
built from requirements.txt alone serving launch.py in demo mode with the shipped checkpoints."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import free_port

REPO = Path(__file__).resolve().parent.parent
NETWORK_TROUBLE = ("NewConnectionError", "Network is unreachable", "Max retries exceeded", "Temporary failure in name",
                   "Could not fetch URL", "ConnectionError", "ReadTimeoutError", "No matching distribution found")


def front_matter() -> dict[str, str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n"), "README.md must start with the Spaces front matter"
    block = text[4:text.index("\n---\n", 4)]
    lines = [line for line in block.splitlines() if not line.startswith(("-", " "))]  # list items: read where needed
    return {k.strip(): v.strip().strip('"') for k, _, v in (line.partition(":") for line in lines)}


def requirement_lines() -> list[str]:
    lines = (REPO / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_front_matter_is_a_gradio_space_on_launch_py():
    from packaging.requirements import Requirement

    meta = front_matter()
    # The Space runs the sdk_version it names; it must be one the project supports (a newer gradio
    # on PyPI must not fail this test: the pin is updated when the Space is tested on it).
    deps = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    gradio_spec = Requirement(next(d for d in deps if d.startswith("gradio"))).specifier
    assert meta["sdk"] == "gradio" and gradio_spec.contains(meta["sdk_version"])
    assert meta["app_file"] == "launch.py" and (REPO / meta["app_file"]).is_file()
    assert meta["pinned"] == "false" and meta["title"] and meta["emoji"]
    assert re.fullmatch(r"3\.\d+", meta["python_version"])
    assert len(meta.get("short_description", "")) <= 60  # the Hub's limit


ZEROGPU_TORCH = ("2.8", "2.9", "2.10", "2.11")  # the torch versions ZeroGPU supports
ZEROGPU_PYTHONS = ("3.10", "3.12")  # ZeroGPU runs Python 3.10.13 or 3.12.12


def test_requirements_match_pyproject_with_torch_pinned_for_zerogpu():
    from packaging.requirements import Requirement

    deps = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    others = [line for line in requirement_lines() if not line.startswith("torch")]
    assert sorted(others) == sorted(d for d in deps if not d.startswith("torch"))  # one list, two files
    pin = Requirement(next(line for line in requirement_lines() if line.startswith("torch")))
    (spec,) = pin.specifier
    assert spec.operator == "==" and spec.version.rsplit(".", 1)[0] in ZEROGPU_TORCH
    project = Requirement(next(d for d in deps if d.startswith("torch")))
    assert project.specifier.contains(spec.version) and project.specifier.contains("2.13.0")  # the range stays wide


def test_front_matter_is_what_zerogpu_accepts():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    meta = front_matter()
    assert meta["python_version"] in ZEROGPU_PYTHONS
    assert meta["hf_oauth"] == "true"  # "Sign in with Hugging Face" (playground.ui.signin)
    block = text[4:text.index("\n---\n", 4)]
    preload = block.split("preload_from_hub:", 1)[1].splitlines()[1:]
    models = [line.strip()[2:].split()[0] for line in preload if line.strip().startswith("- ")]
    assert models and all(re.fullmatch(r"[\w.-]+/[\w.-]+", m) for m in models)


@pytest.mark.slow
@pytest.mark.timeout(1500)  # pip (up to 600 s) and the launch must be able to skip, not be killed
def test_fresh_venv_from_requirements_serves_the_space(tmp_path):
    """`pip install -r requirements.txt` in an empty venv, then `python launch.py` as a Space runs it."""
    venv = tmp_path / "venv"
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    try:
        # The Space's Python where this machine has it (pyenv's 3.12), else this one.
        subprocess.run([space_python(), "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
        python = venv / "bin" / "python"
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        try:
            pip = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check",
                                  "-r", str(REPO / "requirements.txt")], cwd=tmp_path, env=env, capture_output=True,
                                 text=True, timeout=600)
        except subprocess.TimeoutExpired:
            pytest.skip("pip install -r requirements.txt took over 10 minutes (a slow package registry?)")
        timings["venv + pip install"] = time.monotonic() - t0
        if pip.returncode != 0:
            log = pip.stdout + pip.stderr
            if any(sign in log for sign in NETWORK_TROUBLE):
                pytest.skip(f"pip could not reach the package registry: {log.strip().splitlines()[-1][:200]}")
            raise AssertionError(f"pip install -r requirements.txt failed:\n{log[-4000:]}")

        port = free_port()
        env.update(SPACE_ID="test/space", GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1")
        t1 = time.monotonic()
        proc = subprocess.Popen([str(python), "launch.py", "--host", "127.0.0.1", "--port", str(port),
                                 "--workspace", str(tmp_path / "ws")],
                                cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        url = f"http://127.0.0.1:{port}/"
        try:
            config = _wait_for_config(url, proc)
            timings["launch until /config"] = time.monotonic() - t1
            header = [c for c in config["components"] if (c.get("props") or {}).get("elem_id") == "header"]
            assert header and "demo mode" in header[0]["props"]["value"]
            names = _checkpoint_names(url)
            assert {"gpt-python-docs-char", "vit-digits"} <= names, names
        finally:
            proc.terminate()
            out, _ = proc.communicate(timeout=30)
        assert "Traceback" not in out, out[-3000:]
    finally:
        shutil.rmtree(venv, ignore_errors=True)  # ~1.6 GB
        timings["total"] = time.monotonic() - t0
        print("fresh-venv Space timings: " + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items()))


def space_python() -> str:
    """A Python of the Space's version (front matter `python_version`) if one is installed, else this one."""
    version = front_matter()["python_version"]
    candidates = [shutil.which(f"python{version}"), *sorted(Path.home().glob(f".pyenv/versions/{version}.*/bin/python3"))]
    for candidate in candidates:
        if candidate and subprocess.run([str(candidate), "--version"], check=False, capture_output=True).returncode == 0:
            return str(candidate)
    return sys.executable


def _wait_for_config(url: str, proc: subprocess.Popen, limit_s: float = 180) -> dict:
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        if proc.poll() is not None:
            raise AssertionError(f"launch.py exited early:\n{proc.stdout.read()[-4000:]}")
        try:
            with urllib.request.urlopen(url + "config", timeout=5) as resp:
                return json.loads(resp.read())
        except OSError:
            time.sleep(0.5)
    raise AssertionError("the Space did not serve /config")


def _checkpoint_names(url: str) -> set[str]:
    """Model names the app lists to a fresh visitor (its refresh endpoints, as the page calls them)."""
    from gradio_client import Client

    client = Client(url, verbose=False)
    endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    names: set[str] = set()
    for api_name, info in endpoints.items():
        if api_name.startswith("/refresh_") and "model" in api_name:
            result = client.predict(*[None] * len(info["parameters"]), api_name=api_name)
            for update in result if isinstance(result, tuple) else (result,):
                for choice in (update or {}).get("choices", []) if isinstance(update, dict) else []:
                    names.add(choice[0] if isinstance(choice, (list, tuple)) else choice)
    return names
