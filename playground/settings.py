"""Launch and CLI settings: device, workspace, and the caps demo mode puts on public servers."""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_WORKSPACE = REPO_ROOT / "checkpoints"
SHIPPED_LIBRARY = REPO_ROOT / "checkpoints"  # the demo checkpoints that ship with the repo
DEVICE_CHOICES = ("auto", "cpu", "cuda", "mps")


@dataclass(frozen=True)
class DemoCaps:
    """Limits for a shared or public server; `None` means no limit."""

    max_upload_mb: float | None = None
    max_corpus_chars: int | None = None
    max_vocab_size: int | None = None
    max_train_steps: int | None = None
    max_new_tokens: int | None = None
    max_analysis_examples: int | None = None
    max_ig_steps: int | None = None  # integrated-gradients steps, the auto-raise included
    heavy_slots: int = 2  # training, tokenizer builds, experiments running at once (whole server)
    light_slots: int = 4  # generate, encode, per-input analysis running at once (whole server)
    max_trainings_per_user: int = 1  # live trainings one user may have at once (app only)
    max_experiments_per_user: int = 1  # live experiments one user may have at once (app only)


FULL_CAPS = DemoCaps(max_upload_mb=200.0)
DEMO_CAPS = DemoCaps(
    max_upload_mb=5.0,
    max_corpus_chars=2_000_000,
    max_vocab_size=8192,
    max_train_steps=1000,
    max_new_tokens=300,
    max_analysis_examples=50,
    max_ig_steps=200,
    heavy_slots=1,
    light_slots=3,
)


@dataclass(frozen=True)
class Settings:
    """Everything the app and the CLI need to know about where and how they run."""

    workspace: Path = DEFAULT_WORKSPACE
    device: str = "auto"
    demo: bool = False
    caps: DemoCaps = field(default=FULL_CAPS)
    # Read-only folders (each with tokenizers/ and models/) every app user sees: the shipped
    # checkpoints first, then an instructor's --library folders.
    library: tuple[Path, ...] = (SHIPPED_LIBRARY,)
    # Whether a path typed by the user may reach the file system: True for the CLI (the user
    # owns the machine), False in the app, where corpora and data come only from the embedded
    # list, uploads, or the user's own space.
    user_paths: bool = True

    @property
    def resolved_device(self) -> str:
        """The torch device string `device` stands for on this machine."""
        return resolve_device(self.device)


def resolve_device(requested: str = "auto") -> str:
    """Map auto|cpu|cuda|mps to an available device: auto tries cuda, then mps, then cpu."""
    import torch

    from playground.errors import ConfigError

    if requested not in DEVICE_CHOICES:
        raise ConfigError(f"Unknown device {requested!r}; choose one of {', '.join(DEVICE_CHOICES)}.")
    if requested == "auto":
        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda was asked for but no CUDA GPU is visible; use --device auto or cpu.")
    if requested == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise ConfigError("--device mps was asked for but MPS is not available; use --device auto or cpu.")
    return requested


def make_settings(workspace: str | Path | None = None, device: str = "auto", demo: bool = False, *,
                  library: Sequence[str | Path] = (), app: bool = False) -> Settings:
    """Settings from flags; SPACE_ID in the environment (Hugging Face Spaces) forces demo mode.

    `app=True` is the served app: typed paths never reach the file system, and `library`
    folders are added after the shipped checkpoints as read-only shelves.
    """
    demo = demo or bool(os.environ.get("SPACE_ID"))
    shelves = [SHIPPED_LIBRARY]
    for folder in library:
        path = Path(folder).expanduser().resolve()
        if path not in shelves:
            shelves.append(path)
    return Settings(
        workspace=Path(workspace).expanduser().resolve() if workspace else DEFAULT_WORKSPACE,
        device=device,
        demo=demo,
        caps=DEMO_CAPS if demo else FULL_CAPS,
        library=tuple(shelves),
        user_paths=not app,
    )
