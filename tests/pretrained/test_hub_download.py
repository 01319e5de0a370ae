"""A Hub download for real: huggingface_hub fetches a tiny save_pretrained GPT-2 from a loopback
Hub (tests/pretrained/loopback_hub.py); the import box and the CLI show its bytes as they arrive,
Stop cuts it off with nothing imported, and the import equals the folder import."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from playground.bundle import load_bundle
from playground.pretrained.importer import import_pretrained, iter_weights, plan_import
from playground.pretrained.progress import human_bytes
from playground.settings import FULL_CAPS, REPO_ROOT
from playground.spaces import Spaces
from playground.ui.import_box import import_model
from playground.workspace import Workspace
from tests.pretrained.conftest import Saved
from tests.pretrained.loopback_hub import LoopbackHub, serve_hub

REPO = "tiny/gpt2"
CHUNK = 8192  # huggingface_hub's download chunk here (10 MB by default: one chunk for a tiny file)
WEIGHTS = "model.safetensors"


@pytest.fixture
def hub(saved: dict[str, Saved], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackHub]:
    """The loopback Hub serving the tiny GPT-2, with this process's huggingface_hub pointed at it
    (online, its cache in tmp_path): its constants are read when it calls, set when it was imported."""
    from huggingface_hub import constants

    with serve_hub({REPO: saved["GPT2LMHeadModel"].folder}) as running:
        monkeypatch.setenv("HF_HUB_OFFLINE", "0")
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(constants, "ENDPOINT", running.url)
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", running.url + "/{repo_id}/resolve/{revision}/{filename}")
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
        monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", CHUNK)
        yield running


@pytest.fixture
def space(tmp_path: Path):
    return Spaces(tmp_path / "root", [tmp_path / "library"], scratch_dir_base=tmp_path / "scratch").space("b-" + "0" * 24, "s1")


def same_model(a: Path | str, b: Path | str) -> None:
    """Two bundles hold identical tensors, model config and tokenizer."""
    x, y = load_bundle(a), load_bundle(b)
    sx, sy = x.model.state_dict(), y.model.state_dict()
    assert sx.keys() == sy.keys() and all(torch.equal(sx[k], sy[k]) for k in sx)
    assert x.model_config.to_dict() == y.model_config.to_dict() and x.tokenizer.to_str() == y.tokenizer.to_str()


def folder_import(saved: dict[str, Saved], tmp_path: Path) -> Path:
    return import_pretrained(str(saved["GPT2LMHeadModel"].folder), Workspace(tmp_path / "folder-ws"), "from-folder")


def test_download_progress_rises_to_the_file_size(hub: LoopbackHub, saved: dict[str, Saved]) -> None:
    size = (saved["GPT2LMHeadModel"].folder / WEIGHTS).stat().st_size
    plan = plan_import(REPO, allow_paths=False)
    assert plan.download_bytes == size and not plan.cached  # the size is known before the download
    weights = iter_weights(plan.source, heartbeat_s=None)  # every event a chunk (no repeats of a slow one)
    events = []
    while True:
        try:
            events.append(next(weights))
        except StopIteration as done:
            tensors = done.value
            break
    assert {e.filename for e in events} == {WEIGHTS} and {e.total for e in events} == {size}
    done = [e.done for e in events]
    assert done == sorted(set(done)) and done[0] == 0 and done[-1] == size  # strictly rising, to the size
    assert done[1:-1] == list(range(CHUNK, size, CHUNK))  # one report per chunk huggingface_hub wrote
    assert events[-1].line() == f"Downloading {WEIGHTS}: {human_bytes(size)} of {human_bytes(size)} (100%)"
    on_disk = load_file(str(saved["GPT2LMHeadModel"].folder / WEIGHTS))
    assert tensors.keys() == on_disk.keys() and all(torch.equal(tensors[k], on_disk[k]) for k in on_disk)


def test_the_import_box_shows_the_bytes_and_imports_what_the_folder_import_gives(
        hub: LoopbackHub, saved: dict[str, Saved], space, tmp_path: Path) -> None:
    size = (saved["GPT2LMHeadModel"].folder / WEIGHTS).stat().st_size
    bars: list[tuple[float | None, str]] = []
    steps = list(import_model(space, FULL_CAPS, REPO, None, "hub-gpt2", 5,
                              progress=lambda fraction, desc=None: bars.append((fraction, desc))))
    fractions = [f for f, _ in bars]
    assert fractions == sorted(fractions) and fractions[0] == 0 and fractions[-1] == 1.0
    assert [d for _, d in bars][-1] == f"Downloading {WEIGHTS}: {human_bytes(size)} of {human_bytes(size)} (100%)"
    lines = [s for s, _ in steps]
    assert lines[0].endswith(f"{human_bytes(size)} of weights to download. Fetching the weights…")  # size first
    downloading = [s for s in lines if "Downloading" in s]
    assert len(downloading) == len(bars) and all("Stop cuts it off" in s for s in downloading)
    assert lines[-2].endswith("Converting…") and steps[-1][1] == 6
    same_model(space.get("models", "hub-gpt2").path, folder_import(saved, tmp_path))


def test_stop_cuts_the_download_off_and_imports_nothing(hub: LoopbackHub, saved: dict[str, Saved], space,
                                                       tmp_path: Path) -> None:
    from huggingface_hub import constants

    size = (saved["GPT2LMHeadModel"].folder / WEIGHTS).stat().st_size
    hub.hold[WEIGHTS] = 5 * CHUNK + 100  # the server waits there until released
    steps = import_model(space, FULL_CAPS, REPO, None, "hub-gpt2", 0)
    seen = []
    for status, _ in steps:
        seen.append(status)
        if f"{human_bytes(5 * CHUNK)} of {human_bytes(size)}" in status:
            break
    steps.close()  # what Stop does: gradio closes the handler's generator
    hub.release.set()
    for worker in [t for t in threading.enumerate() if t.name == f"download {REPO}"]:
        worker.join()  # the download stops at its next chunk (DownloadStopped in the worker)
    assert not space.exists("models", "hub-gpt2")  # nothing half-written in My space
    cache = Path(constants.HF_HUB_CACHE) / "models--tiny--gpt2"
    assert not list(cache.glob(f"snapshots/*/{WEIGHTS}"))  # no weights that look whole
    assert all(b.stat().st_size != size for b in cache.glob("blobs/*"))  # huggingface_hub drops its partial file

    hub.hold.clear()
    bars: list[float | None] = []
    done = list(import_model(space, FULL_CAPS, REPO, None, "hub-gpt2", 0, progress=lambda f, desc=None: bars.append(f)))
    assert bars[0] == 0 and bars == sorted(bars) and bars[-1] == 1.0 and done[-1][1] == 1  # a fresh download
    same_model(space.get("models", "hub-gpt2").path, folder_import(saved, tmp_path))


@pytest.mark.slow
def test_cli_import_prints_the_same_progress(saved: dict[str, Saved], tmp_path: Path) -> None:
    """`python -m playground import tiny/gpt2` in its own process, HF_ENDPOINT at the loopback Hub."""
    size = (saved["GPT2LMHeadModel"].folder / WEIGHTS).stat().st_size
    with serve_hub({REPO: saved["GPT2LMHeadModel"].folder}) as running:
        env = {**os.environ, "HF_ENDPOINT": running.url, "HF_HUB_OFFLINE": "0", "HF_HOME": str(tmp_path / "hf"),
               "HF_HUB_DISABLE_TELEMETRY": "1", "OMP_NUM_THREADS": "1"}
        out = subprocess.run([sys.executable, "-m", "playground", "--workspace", str(tmp_path / "ws"), "import", REPO,
                              "--name", "hub-gpt2"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines[0].startswith(f"{REPO}: GPT2LMHeadModel -> the playground's gpt model")
    assert lines[0].endswith(f"{human_bytes(size)} of weights to download")  # the size before the download
    shown = [line for line in lines if line.startswith(f"Downloading {WEIGHTS}: ")]
    percents = [int(re.search(r"\((\d+)%\)$", line)[1]) for line in shown]
    assert percents[0] == 0 and percents[-1] == 100 and percents == sorted(set(percents))  # once per tenth at most
    assert shown[-1] == f"Downloading {WEIGHTS}: {human_bytes(size)} of {human_bytes(size)} (100%)"
    assert lines[-1].startswith("imported 'hub-gpt2' into the workspace")
    same_model(Workspace(tmp_path / "ws").path("models", "hub-gpt2"), folder_import(saved, tmp_path))


@pytest.mark.slow
def test_the_served_import_box_streams_the_download(hub: LoopbackHub, saved: dict[str, Saved], tmp_path: Path,
                                                    tmp_path_factory: pytest.TempPathFactory) -> None:
    """The real app (this process, so the loopback Hub applies), driven through gradio_client:
    Import streams the download lines to the status, then the model is in the visitor's space."""
    from gradio_client import Client

    from tests.conftest import serve_app

    size = (saved["GPT2LMHeadModel"].folder / WEIGHTS).stat().st_size
    with serve_app(tmp_path_factory, "hub-import") as running:
        client = Client(running.url, verbose=False)
        job = client.submit(REPO, None, "hub-gpt2", api_name="/import_model")
        job.result()
        statuses = [out[0] if isinstance(out, (list, tuple)) else out for out in job.outputs()]
        space = running.space_of(client)
        imported = space.path("models", "hub-gpt2")
        assert imported.is_dir()
        same_model(imported, folder_import(saved, tmp_path))
    assert statuses[0].endswith("Fetching the weights…")
    assert any(f"Downloading {WEIGHTS}: {human_bytes(size)} of {human_bytes(size)} (100%)" in s for s in statuses)
    assert statuses[-1].startswith("Imported **hub-gpt2** into your space")


@pytest.mark.slow
def test_a_served_stop_cuts_the_download_off(hub: LoopbackHub, saved: dict[str, Saved],
                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    """Cancelling the served Import half-way (what Stop does) closes the handler: the download
    ends at its next chunk and nothing reaches the visitor's space."""
    from gradio_client import Client
    from huggingface_hub import constants

    from tests.conftest import serve_app

    size = (saved["GPT2LMHeadModel"].folder / WEIGHTS).stat().st_size
    hub.hold[WEIGHTS] = 5 * CHUNK + 100
    half = f"{human_bytes(5 * CHUNK)} of {human_bytes(size)}"
    with serve_app(tmp_path_factory, "hub-stop") as running:
        client = Client(running.url, verbose=False)
        job = client.submit(REPO, None, "hub-gpt2", api_name="/import_model")
        while not any(half in str(out) for out in job.outputs()):  # the server holds the rest back meanwhile
            assert not job.done(), job.outputs()
            threading.Event().wait(0.05)
        job.cancel()
        hub.release.set()
        for worker in [t for t in threading.enumerate() if t.name == f"download {REPO}"]:
            worker.join()
        assert not running.space_of(client).exists("models", "hub-gpt2")
    cache = Path(constants.HF_HUB_CACHE) / "models--tiny--gpt2"
    assert not list(cache.glob(f"snapshots/*/{WEIGHTS}"))  # the worker was stopped, not left to finish
