"""No path from a user reaches the file system: the real app, normal and demo, over gradio_client.

Every TOML data field, the upload box, and every text / choice / file field of every named
endpoint is tried with server paths; each request must fail (with the upload message where it
names data) and no line of the target files may appear in any output.
"""
from __future__ import annotations

import stat
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from playground.settings import REPO_ROOT
from playground.training.config import preset_to_toml
from tests.conftest import RunningApp, serve_app
from tests.training.conftest import tiny_preset

SETTINGS_PY = str(REPO_ROOT / "playground" / "settings.py")
ATTACKS = ["/etc/passwd", "../../etc/passwd", "~/.ssh/id_rsa", SETTINGS_PY, "file:///etc/passwd"]
REFUSED = "Paths are not accepted on a shared server"


def _secret_lines() -> list[str]:
    """Distinctive lines of the target files that exist here (what must never be shown)."""
    lines: list[str] = []
    for target in ("/etc/passwd", str(Path("~/.ssh/id_rsa").expanduser())):
        try:
            text = Path(target).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        lines += [ln.strip() for ln in text.splitlines() if len(ln.strip()) >= 8]
    markers = ("DemoCaps", "max_upload_mb", "user_paths", "SHIPPED_LIBRARY", "resolve_device")  # settings.py's own
    lines += [ln.strip() for ln in Path(SETTINGS_PY).read_text(encoding="utf-8").splitlines()
              if any(m in ln for m in markers)]
    assert any("root:" in ln for ln in lines) and any("class DemoCaps" in ln for ln in lines)
    return lines


SECRETS = _secret_lines()


def _shown(value: Any) -> str:
    """Everything a result shows: its text, and the text of any file it hands back."""
    parts = [repr(value)]
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, str) and "\n" not in item and len(item) < 1024 and "/tmp" in item:
            try:
                parts.append(Path(item).read_text(encoding="utf-8", errors="replace"))
            except OSError:  # not a file handed back
                pass
    return "\n".join(parts)


def _assert_no_leak(text: str) -> None:
    leaked = [ln for ln in SECRETS if ln in text]
    assert not leaked, f"target file content shown: {leaked[:2]}"


def _call(client: Any, api_name: str, *args: Any) -> tuple[bool, str]:
    """(succeeded, everything shown) for one request."""
    try:
        result = client.predict(*args, api_name=api_name)
    except Exception as exc:  # noqa: BLE001 - the server's refusal is what is tested
        text = f"{type(exc).__name__}: {exc}"
        _assert_no_leak(text)
        return False, text
    text = _shown(result)
    _assert_no_leak(text)
    return True, text


def _file_data(path: str) -> dict[str, Any]:
    """A FileData payload naming a server path directly (what a hostile client can send)."""
    return {"path": path, "meta": {"_type": "gradio.FileData"}, "orig_name": Path(path).name}


def _zip(path: Path, extra: list[tuple[zipfile.ZipInfo | str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for cls in ("a", "b"):
            zf.writestr(f"{cls}/0.png", b"\x89PNG\r\n\x1a\n")
        for info, data in extra:
            zf.writestr(info, data)
    return path


def _symlink(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningApp]:
    """The real app in demo mode (made like the session's `app_server`)."""
    with serve_app(tmp_path_factory, "demo", demo=True) as running:
        yield running


@pytest.fixture(params=["normal", "demo"])
def client(request: pytest.FixtureRequest) -> Any:
    from gradio_client import Client

    server = request.getfixturevalue("app_server" if request.param == "normal" else "demo_server")
    return Client(server.url, verbose=False)


def _toml(family: str, **data: Any) -> str:
    preset = tiny_preset(family, Path("python-docs"), max_steps=2, eval_interval=2)
    preset.data.update(data)
    return preset_to_toml(preset)


@pytest.mark.parametrize("target", ATTACKS)
def test_toml_data_paths_are_refused_with_the_upload_message(client, target):
    for family, data in (("gpt", {"corpus": target}), ("rnn_seq2seq", {"pairs": "tsv", "path": target, "n": 0}),
                         ("vit", {"dataset": "zip", "path": target, "n": 0})):
        ok, shown = _call(client, "/train_start", "nanogpt-cpu-tiny", _toml(family, **data), "no-paths", False)
        assert not ok and REFUSED in shown and "Upload box in the Train tab" in shown, (family, shown)
        ok, shown = _call(client, "/train_start", "nanogpt-cpu-tiny", _toml(family, **data), target, False)
        assert not ok  # a path as the run name is no name


def test_upload_box_refuses_symlinks_slips_and_server_paths(client, tmp_path):
    from gradio_client import handle_file

    toml = _toml("vit", dataset="digits")
    for name, extra, message in (("link.zip", [(_symlink("a/1.png"), b"/etc/passwd")], "symbolic link"),
                                 ("slip.zip", [("../../evil.png", b"x")], "unsafe path"),
                                 ("abs.zip", [("/etc/evil.png", b"x")], "unsafe path")):
        ok, shown = _call(client, "/train_upload", toml, handle_file(str(_zip(tmp_path / name, extra))))
        assert not ok and message in shown, shown
    for target in ATTACKS:
        ok, _ = _call(client, "/train_upload", toml, _file_data(target))
        assert not ok
        ok, _ = _call(client, "/tokenizer_build", "upload", [_file_data(target)], "", "bpe", 300, "none",
                      "byte-level", [], "bytes")
        assert not ok
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("a\tb\n" * 20, encoding="utf-8")
    ok, shown = _call(client, "/train_upload", _toml("rnn_seq2seq"), handle_file(str(tsv)))
    assert ok and 'path = "upload:pairs.tsv"' in shown  # a real upload is taken, as a name in the user's space


def _api(client: Any) -> dict[str, Any]:
    return client.view_api(return_format="dict", print_info=False)["named_endpoints"]


def _texty(param: dict[str, Any]) -> str | None:
    kind = str(param.get("python_type", {}).get("type", ""))
    if "filepath" in kind:
        return "list[file]" if kind.startswith("list") else "file"
    if kind.startswith("list[Literal") or kind == "list[str]":
        return "list"
    if kind == "str" or kind.startswith("Literal") or kind.startswith("str |"):
        return "text"
    return None


@pytest.mark.slow
def test_every_text_choice_and_file_field_of_every_endpoint(client):
    tried = 0
    for api_name, endpoint in _api(client).items():
        params = endpoint["parameters"]
        for i, param in enumerate(params):
            kind = _texty(param)
            if kind is None:
                continue
            for target in ATTACKS:
                value = {"file": _file_data(target), "list[file]": [_file_data(target)], "list": [target],
                         "text": target}[kind]
                args = [None] * len(params)
                args[i] = value
                _call(client, api_name, *args)
                tried += 1
    assert tried > 100
