"""A model or tokenizer as a Hub-ready folder (files + a card), and its upload with huggingface_hub.

The folder holds what someone needs to use and judge the entry, and nothing of the run's private
state: the weights, config, tokenizer and curves (no optimizer or random-stream state), a card
(README.md) that says what was trained, from which preset, what was changed from it, on which
data, for how long, and what it reached on its validation split, and the curves as an image.
Upload is a separate step: offline (HF_HUB_OFFLINE) or without a token it says so in one line and
leaves the folder for later (`hf upload REPO FOLDER`).
"""
from __future__ import annotations

import json
import math
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import huggingface_hub
from huggingface_hub import constants as hub_constants
from huggingface_hub.errors import HFValidationError
from huggingface_hub.utils import validate_repo_id

from playground.analysis.experiments.record import RECORD_DIR, read_records, records_markdown
from playground.bundle import read_metrics_csv
from playground.config import list_presets, load_preset
from playground.errors import ConfigError, PlaygroundError
from playground.training.checkpoint import TRAIN_LOG
from playground.training.config import preset_sections
from playground.training.trackers import TB_FOLDER

MODEL_FILES = ("model.safetensors", "config.json", "tokenizer.json", "metrics.csv", TRAIN_LOG)
TOKENIZER_FILES = ("tokenizer.json", "meta.json")
CURVES_IMAGE = "curves.png"


@dataclass(frozen=True)
class HubFolder:
    """A folder ready to upload: where it is, its files, and its card's text."""

    path: Path
    files: tuple[str, ...]
    card: str


def changed_from_preset(meta: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(section.key, the preset's value, the run's value) for every value the run changed from its
    preset; [] when the preset is not one of the shipped ones (nothing to compare with)."""
    name, sections = meta.get("preset"), meta.get("sections")
    if not isinstance(sections, dict) or name not in list_presets():
        return []
    base = preset_sections(load_preset(str(name), allow_paths=False))
    out = []
    for section in ("model", "data", "train", "log"):
        ours, theirs = sections.get(section) or {}, base.get(section) or {}
        for key in sorted(set(ours) | set(theirs)):
            if ours.get(key) != theirs.get(key):
                out.append((f"{section}.{key}", theirs.get(key), ours.get(key)))
    return out


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else str(value)
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _table(header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_number(v).replace("|", "\\|") for v in row) + " |" for row in rows]
    return "\n".join(lines)


def model_card(name: str, meta: Mapping[str, Any], rows: list[dict[str, Any]], has_curves: bool,
               records: list[dict[str, Any]] | None = None) -> str:
    """The README.md of a trained model: front matter for the Hub, then what it is and what it reached,
    and the debate's experiments run on it (`records`, from playground.analysis.experiments.record)."""
    run = meta.get("run") or {}
    family = str(meta.get("family") or "?")
    changes = changed_from_preset(meta)
    last = rows[-1] if rows else {}
    metrics = [(k, v) for k, v in last.items() if k not in ("step", "elapsed_s") and isinstance(v, (int, float))]
    data = meta.get("data") or {}
    parts = [
        "---",
        "library_name: transformer-playground",
        f"tags:\n- transformer-playground\n- {family}",
        "---",
        "",
        f"# {name}",
        "",
        f"A `{family}` model trained with Transformer Playground "
        f"from the preset `{meta.get('preset')}`: {_number(run.get('parameters', '?'))} parameters, "
        f"{_number(meta.get('step', '?'))} steps in {_number(run.get('elapsed_s', '?'))} s on {run.get('device', '?')} "
        f"({run.get('status', '?')}).",
        "",
        "## Changed from the preset",
        "",
        _table(("setting", "preset", "this run"), changes) if changes else
        ("Nothing: the preset as shipped." if meta.get("preset") in list_presets() else
         "The preset is not a shipped one; its sections are in config.json."),
        "",
        "## Data",
        "",
        _table(("key", "value"), [(k, v) for k, v in data.items() if not isinstance(v, (dict, list))]) if data else "—",
        "",
        f"## Validation, at step {_number(last.get('step', '?'))}",
        "",
        _table(("metric", "value"), metrics) if metrics else "No evaluation was saved.",
        "",
    ]
    if has_curves:
        parts += ["## Curves", "", f"![Loss curves]({CURVES_IMAGE})", ""]
    if records:
        parts += ["## Is its attention an explanation? The experiments run on it", "",
                  "Run in the playground's Analyze tab (Experiments) on held-out examples; the JSON of each is in "
                  f"`{RECORD_DIR}/`.", "", records_markdown(records)]
    parts += ["## Use it", "",
              "Put this folder under a playground workspace's `models/` and open it in Generate or Analyze, or "
              f"`python -m playground --workspace WORKSPACE generate {name} --prompt ...`. Every number above is in "
              "`metrics.csv` (one row per evaluation) and `train_log.csv` (one row per logged step).", ""]
    return "\n".join(parts)


def tokenizer_card(name: str, meta: Mapping[str, Any]) -> str:
    """The README.md of a tokenizer: its kind, size, options and corpus."""
    options = meta.get("options") or {}
    corpus = meta.get("corpus") or {}
    return "\n".join([
        "---", "library_name: tokenizers", "tags:\n- transformer-playground\n- tokenizer", "---", "",
        f"# {name}", "",
        f"A {meta.get('model', '?')} tokenizer of {_number(meta.get('vocab_size', '?'))} tokens built with "
        "Transformer Playground's Tokenizer tab (Hugging Face `tokenizers`).", "",
        "## Options", "",
        _table(("option", "value"), [(k, v) for k, v in options.items()]) if options else "—", "",
        "## Corpus", "", str(corpus.get("description") or corpus.get("name") or "—"), "",
        "## Use it", "", "```python", "from tokenizers import Tokenizer",
        'tok = Tokenizer.from_file("tokenizer.json")', "```", ""])


def curves_image(log: list[dict[str, Any]], rows: list[dict[str, Any]], path: Path) -> bool:
    """Draw train loss per logged step and validation loss per evaluation to `path` (PNG); False
    when there is nothing to draw."""
    train = [(r["step"], r["train_loss"]) for r in log if isinstance(r.get("train_loss"), (int, float))]
    val = [(r["step"], r["val_loss"]) for r in rows if isinstance(r.get("val_loss"), (int, float))]
    if not train and not val:
        return False
    import matplotlib  # captum's dependency; imported here: only a card with curves draws

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    if train:
        ax.plot(*zip(*train), label="train loss", linewidth=1)
    if val:
        ax.plot(*zip(*val), "o-", label="validation loss", linewidth=1.5)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def prepare(workspace: Any, kind: str, name: str, out: Path) -> HubFolder:
    """Write the Hub-ready folder of model or tokenizer `name` (as the user sees it) to `out` (new or
    empty). Imported pretrained models are refused: they are on the Hub already."""
    if kind not in ("model", "tokenizer"):
        raise ConfigError(f"Choose model or tokenizer, not {kind!r}.")
    entry = workspace.get("models" if kind == "model" else "tokenizers", name)
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f"{out} is not empty; give a new folder.")
    out.mkdir(parents=True, exist_ok=True)
    src = Path(entry.path)
    if kind == "model":
        meta = entry.meta
        if meta.get("pretrained"):
            raise PlaygroundError(f"{name!r} was imported from the Hub; it is there already (its card says where).")
        files = [f for f in MODEL_FILES if (src / f).is_file()]
        for f in files:
            shutil.copy2(src / f, out / f)
        if (src / TB_FOLDER).is_dir():
            shutil.copytree(src / TB_FOLDER, out / TB_FOLDER)
            files.append(TB_FOLDER)
        rows, log = read_metrics_csv(src / "metrics.csv"), read_metrics_csv(src / TRAIN_LOG)
        drew = curves_image(log, rows, out / CURVES_IMAGE)
        files += [CURVES_IMAGE] if drew else []
        records = read_records(src)
        if records:
            (out / RECORD_DIR).mkdir()
            for r in records:  # rewritten from the parsed record: only what read_records accepted travels
                (out / RECORD_DIR / f"{r['experiment']}.json").write_text(json.dumps(r, indent=1), encoding="utf-8")
            files.append(RECORD_DIR)
        card = model_card(name, meta, rows, drew, records)
    else:
        files = [f for f in TOKENIZER_FILES if (src / f).is_file()]
        for f in files:
            shutil.copy2(src / f, out / f)
        meta = json.loads((src / "meta.json").read_text(encoding="utf-8")) if (src / "meta.json").is_file() else {}
        card = tokenizer_card(name, meta)
    (out / "README.md").write_text(card, encoding="utf-8")
    return HubFolder(out, (*files, "README.md"), card)


def upload(folder: HubFolder, repo_id: str, token: str | None = None, private: bool = True) -> str:
    """Upload `folder` to the Hub repository `repo_id` (created, private by default, when missing);
    returns the repository's URL. Offline, or when the Hub refuses, one line says why and where
    the folder is, for a later `hf upload`."""
    try:
        validate_repo_id(repo_id)
    except HFValidationError:
        raise ConfigError(f"{repo_id!r} is not a Hub repository id; write it as user/name.") from None
    later = f"the folder is ready at {folder.path}; upload it later with `hf upload {repo_id} {folder.path}`."
    if hub_constants.HF_HUB_OFFLINE:
        raise PlaygroundError(f"Offline (HF_HUB_OFFLINE is set): nothing was uploaded; {later}")
    api = huggingface_hub.HfApi(token=token or None)
    try:
        url = api.create_repo(repo_id, private=private, exist_ok=True)
        api.upload_folder(folder_path=str(folder.path), repo_id=repo_id, commit_message="Upload from Transformer Playground")
    except Exception as exc:  # noqa: BLE001 - no network, no token, no permission: one line, never the token
        raise PlaygroundError(f"The Hub did not take the upload ({type(exc).__name__}); check the token and the "
                              f"repository name; {later}") from None
    return str(url)
