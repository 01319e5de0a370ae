"""Hostile values through the real app's API (loopback): each answered with a message that names
what to change, before anything runs. NaN and infinity cannot travel through gradio_client (its
JSON refuses them), so those go as the raw JSON a hand-written request sends (Python's `NaN`,
`Infinity`); the rest through gradio_client, as the API's users send them."""
from __future__ import annotations

import json
import math
import re
from typing import Any

import httpx
import pytest

from tests.conftest import serve_app
from tests.ui.test_fuzz import _call, _tiny_toml, message_problem

DEMO_GPT = "gpt-python-docs-char"
ANSWER_S = 120.0  # a generous bound for a loaded machine; a refusal itself takes milliseconds


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory):
    with serve_app(tmp_path_factory, "hostile-demo", demo=True) as running:
        yield running


def _api(client) -> dict[str, Any]:
    return client.view_api(return_format="dict", print_info=False)["named_endpoints"]


def _client(url: str):
    """A gradio_client session whose dropdowns list the models (as a page does on load)."""
    from gradio_client import Client

    client = Client(url, verbose=False, download_files=False)
    api = _api(client)
    for refresh in [a for a in api if a.startswith("/refresh_")]:
        _call(client, refresh, [None] * len(api[refresh]["parameters"]))
    return client


def _args(api: dict[str, Any], name: str, **given: Any) -> list[Any]:
    """The endpoint's defaults, with `p<i>=value` replacing argument i."""
    args = [p.get("parameter_default") for p in api[name]["parameters"]]
    for key, value in given.items():
        args[int(key[1:])] = value
    return args


def _raw(url: str, name: str, args: list[Any]) -> tuple[str, str | None]:
    """Call an endpoint with plain JSON that may hold NaN / Infinity; ('ok'|'error', message)."""
    body = json.dumps({"data": args})  # allow_nan: NaN and Infinity literals, as a hand-made request has
    with httpx.Client(timeout=ANSWER_S) as http:
        sent = http.post(f"{url}gradio_api/call{name}", content=body, headers={"Content-Type": "application/json"})
        if sent.status_code != 200:
            return "error", sent.text
        event_id = sent.json()["event_id"]
        event = None
        with http.stream("GET", f"{url}gradio_api/call{name}/{event_id}") as stream:
            for line in stream.iter_lines():
                if line.startswith("event:"):
                    event = line.split(":", 1)[1].strip()
                elif line.startswith("data:") and event in ("error", "complete"):
                    data = line.split(":", 1)[1].strip()
                    if event == "complete":
                        return "ok", None
                    said = json.loads(data) if data and data != "null" else None
                    return "error", said.get("error") if isinstance(said, dict) else said
    return "none", None


def _refused(outcome: tuple[str, str | None], root, *expected: str) -> str:
    kind, message = outcome
    assert kind == "error", f"accepted: {outcome}"
    problem = message_problem(message or "", root)
    assert problem is None, f"{problem}: {message!r}"
    for words in expected:
        assert words in (message or ""), f"{words!r} not in {message!r}"
    return message or ""


def _saved(root, name: str) -> bool:
    return any(root.glob(f"users/*/models/{name}/config.json"))


def _toml(train: dict[str, str] | None = None, model: dict[str, str] | None = None) -> str:
    """The fuzz's tiny preset with [train] / [model] keys set to TOML literals (nan, inf, true...)."""
    text = _tiny_toml()
    for section, edits in (("train", train or {}), ("model", model or {})):
        for key, value in edits.items():
            line = re.compile(rf"(?m)^{key} = .*$")
            text = (line.sub(f"{key} = {value}", text) if line.search(text)
                    else text.replace(f"[{section}]\n", f"[{section}]\n{key} = {value}\n"))
    return text


@pytest.mark.parametrize("seed", [math.nan, math.inf, -math.inf])
def test_a_non_finite_seed_names_the_seed_field(app_server, seed):
    from gradio_client import Client

    api = _api(Client(app_server.url, verbose=False, download_files=False))
    args = _args(api, "/generate_text", p0=DEMO_GPT, p1="def ", p9=5, p10=seed)
    _refused(_raw(app_server.url, "/generate_text", args), app_server.workspace_root, "Seed", "finite number")


def test_unreadable_values_name_their_field_through_gradio_client(app_server):
    client = _client(app_server.url)
    api, root = _api(client), app_server.workspace_root
    for seed in ("abc", [], "1e400"):
        args = _args(api, "/generate_text", p0=DEMO_GPT, p1="def ", p9=5, p10=seed)
        _refused(_call(client, "/generate_text", args), root, "Seed", "expected a number")
    for index, label in ((1, "Vocabulary size"), (2, "d_model"), (6, "Context T")):
        _refused(_call(client, "/lesson_block_parts", _args(api, "/lesson_block_parts", **{f"p{index}": "x"})),
                 root, label, "expected a number")
    _refused(_call(client, "/analyze", _args(api, "/analyze", p1="def f(x):", p6=None)),  # the default checkpoint
             root, "Methods", "list of its choices")
    for name in ("/tokenizer_encode", "/tokenizer_walk"):  # JSON's "\ud800" escape: gradio_client cannot send it
        _refused(_raw(app_server.url, name, ["a\ud800b"]), root, "unpaired surrogate", "U+D800")
    _refused(_call(client, "/experiments_run", _args(api, "/experiments_run", p0=DEMO_GPT, p3="x")),
             root, "Seed", "expected a number")


def test_non_finite_numbers_in_lessons_tokenizers_and_experiments(app_server):
    from gradio_client import Client

    api, url, root = _api(Client(app_server.url, verbose=False, download_files=False)), app_server.url, app_server.workspace_root
    for index, label in ((1, "Vocabulary size"), (2, "d_model"), (6, "Context T")):
        _refused(_raw(url, "/lesson_block_parts", _args(api, "/lesson_block_parts", **{f"p{index}": math.nan})),
                 root, label, "finite number")
    build = _args(api, "/tokenizer_build", p0="paste", p2="the quick brown fox " * 20, p4=300, p5=math.nan)
    _refused(_raw(url, "/tokenizer_build", build), root, "finite number")
    _refused(_raw(url, "/experiments_retrain_uniform", [DEMO_GPT, math.nan]), root, "Retrain steps", "finite number")


@pytest.mark.parametrize("n_perm", [-5, 0])
def test_experiment_permutations_must_be_at_least_one(app_server, n_perm):
    """-5 ran 1 permutation and 0 ran 100: both are refused with what to type."""
    client = _client(app_server.url)
    args = _args(_api(client), "/experiments_run", p0=DEMO_GPT, p1="permutation", p7=n_perm)
    _refused(_call(client, "/experiments_run", args), app_server.workspace_root, "Permutations per example",
             "at least 1")


TRAIN_CASES = {
    "lr-nan": (_toml(train={"lr": "nan"}), ("train.lr", "finite number")),
    "lr-inf": (_toml(train={"lr": "inf"}), ("train.lr", "finite number")),
    "lr-neg": (_toml(train={"lr": "-1"}), ("train.lr", ">= 0")),
    "heads-0": (_toml(model={"n_head": "0"}), ("model.n_head", "at least 1")),
    "compile": (_toml(train={"compile": "true"}), ("train.compile", "false")),
    "nested": ("family = \"gpt\"\n[train]\nx = " + "[" * 3000 + "]" * 3000 + "\n", ("nests", "too deeply")),
}


@pytest.mark.parametrize("case", sorted(TRAIN_CASES))
def test_train_start_refuses_a_bad_preset_before_it_runs(app_server, case):
    from gradio_client import Client

    client = Client(app_server.url, verbose=False, download_files=False)
    toml, expected = TRAIN_CASES[case]
    name = f"hostile-{case}"
    _refused(_call(client, "/train_start", ["nanogpt-cpu-tiny", toml, name, False]), app_server.workspace_root,
             *expected)
    assert not _saved(app_server.workspace_root, name)  # nothing trained


def test_demo_messages_state_the_demo_caps(demo_server):
    """A value above both caps is refused with the cap in force (the demo's 1,024, not 8,192)."""
    from gradio_client import Client

    client = Client(demo_server.url, verbose=False, download_files=False)
    root = demo_server.workspace_root
    for block in ("2000", "10000"):
        said = _refused(_call(client, "/train_start", ["nanogpt-cpu-tiny", _toml(model={"block_size": block}),
                                                        f"wide-{block}", False]), root, "1,024")
        assert "8,192" not in said
    said = _refused(_call(client, "/train_start", ["nanogpt-cpu-tiny", _toml(train={"compile": "true"}), "comp", False]),
                    root, "train.compile", "not available on this server")
    assert not _saved(root, "comp")
