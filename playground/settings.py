"""Launch and CLI settings: device, workspace, and the caps demo mode puts on public servers."""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from playground.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_WORKSPACE = REPO_ROOT / "checkpoints"
SHIPPED_LIBRARY = REPO_ROOT / "checkpoints"  # the demo checkpoints that ship with the repo
FIRST_MODEL = "gpt-python-docs-char"  # what a checkpoint list opens on when the user has not picked one
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
    light_slots: int = 4  # generate, classify, encode running at once (whole server)
    analysis_slots: int = 1  # per-input analyses running at once: their own lane, so a generate never waits for one
    max_trainings_per_user: int = 1  # live trainings one user may have at once (app only)
    max_experiments_per_user: int = 1  # live experiments one user may have at once (app only)
    max_entries_per_user: int | None = None  # models (and, apart, tokenizers) one user's space may hold (app only)
    max_space_mb: float | None = None  # an upload is refused past this much in the user's space (uploads, models, tokenizers)
    max_spaces_total_mb: float | None = None  # ...or past this much in all users' spaces together
    max_job_s: float | None = None  # a training in the app asks to stop (and saves) after this long (demo mode)
    # Sizes a user can type, checked before anything is allocated (playground.limits).
    max_params: int | None = None  # model parameters (tied weights counted once)
    max_train_memory_gb: float | None = None  # estimated training memory: weights, grads, optimizer, activations
    max_batch_size: int | None = None  # sequences / images / pairs per micro-batch
    max_grad_accum: int | None = None  # micro-batches per optimizer step
    max_seq_len: int | None = None  # model.block_size, model.max_len, data.max_len
    max_eval_batches: int | None = None  # train.eval_iters / train.eval_examples per evaluation
    max_examples: int | None = None  # data.n: generated pairs / images
    max_image_size: int | None = None  # data.image_size in pixels
    max_seed: int = 2**63 - 1  # seeds are 0..max_seed (torch.Generator.manual_seed takes up to 2**64-1)
    max_permutations: int | None = None  # experiments: n_perm and random draws
    max_adversarial_steps: int | None = None  # experiments: adversarial / diagnostic optimisation steps
    max_adversaries: int | None = None  # experiments: adversaries per example (k)
    max_extra_seeds: int | None = None  # experiments: retrainings for the seed-variance experiment
    max_encode_chars: int | None = None  # tokenizer tab: text to encode or compare
    max_walk_chars: int | None = None  # tokenizer tab: the merge walk's word or line
    max_prompt_chars: int | None = None  # generate prompts / seq2seq sources and analyze inputs
    max_pretoken_chars: int | None = None  # BPE build: longest "word" the pre-tokenizer leaves (cost ~ length²)
    max_bpe_work: float | None = None  # BPE build: corpus characters x vocabulary size
    allow_compile: bool = True  # train.compile (minutes of CPU before the first step on a shared server)
    trackers: tuple[str, ...] = ("none", "tensorboard", "trackio", "wandb")  # [log] tracker values allowed
    max_import_params: int | None = None  # pretrained imports (playground.pretrained); None: max_params
    max_patch_cells: int | None = None  # activation patching: cells (one patched row each) per request


# Generous but finite: sized for a 24 GiB, few-core server (and what the CLI enforces). The older
# fields above max_params stay None here because the UI reads a value as "demo cap";
# playground.limits.UNCAPPED_BOUNDS bounds them instead.
FULL_CAPS = DemoCaps(
    max_upload_mb=200.0,
    max_params=300_000_000,
    max_train_memory_gb=16.0,
    max_batch_size=4096,
    max_grad_accum=1024,
    max_seq_len=8192,
    max_eval_batches=100_000,
    max_examples=2_000_000,
    max_image_size=512,
    max_permutations=10_000,
    max_adversarial_steps=20_000,
    max_adversaries=100,
    max_extra_seeds=10,
    max_encode_chars=500_000,
    max_walk_chars=2000,
    max_prompt_chars=100_000,
    max_pretoken_chars=20_000,
    max_bpe_work=5e12,
    max_import_params=800_000_000,  # up to gpt2-large
    max_patch_cells=1_000_000,
)
DEMO_CAPS = DemoCaps(
    max_upload_mb=5.0,
    max_corpus_chars=2_000_000,
    max_vocab_size=8192,
    max_train_steps=1000,
    max_new_tokens=300,
    max_analysis_examples=50,
    max_ig_steps=200,
    max_params=25_000_000,
    max_train_memory_gb=6.0,
    max_batch_size=256,
    max_grad_accum=16,
    max_seq_len=1024,
    max_eval_batches=2000,
    max_examples=100_000,
    max_image_size=128,
    max_permutations=500,
    max_adversarial_steps=1000,
    max_adversaries=10,
    max_extra_seeds=2,
    max_encode_chars=20_000,
    max_walk_chars=1000,
    max_prompt_chars=5000,
    max_pretoken_chars=2000,
    max_bpe_work=2e10,
    allow_compile=False,
    # A public server's runs report only into their own folder: trackio's one local database would
    # mix every visitor's runs, and wandb would send them out under the server's account.
    trackers=("none", "tensorboard"),
    max_import_params=82_000_000,  # distilgpt2-sized (81.9 M)
    max_patch_cells=4096,
    heavy_slots=1,
    light_slots=3,
    analysis_slots=1,
    max_entries_per_user=20,
    max_space_mb=300.0,
    max_spaces_total_mb=20_000.0,
    max_job_s=1800.0,
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
    # Whether long jobs (training) run in a child process: the served app does, so a run has its
    # own GIL and memory (given back when it ends) and cannot take the server down with it.
    isolate_jobs: bool = False
    # Whether gradio may send its usage analytics home (off unless asked for: --analytics).
    analytics: bool = False
    # Whether GPU work goes through ZeroGPU (a Hugging Face Space with SPACES_ZERO_GPU set):
    # decorated calls from the request's thread instead of child processes (playground.zerogpu).
    zerogpu: bool = False

    @property
    def resolved_device(self) -> str:
        """The torch device string `device` stands for on this machine."""
        return resolve_device(self.device)


def resolve_device(requested: str = "auto") -> str:
    """Map auto|cpu|cuda|mps to an available device: auto tries cuda, then mps, then cpu."""
    import torch  # function-level: torch takes ~1.5 s to import; launch.py and tokenizer children load settings without it

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
                  library: Sequence[str | Path] = (), app: bool = False, analytics: bool = False) -> Settings:
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
        isolate_jobs=app,
        analytics=analytics,
        zerogpu=app and on_zerogpu(),
    )


def on_zerogpu() -> bool:
    """Whether this process runs on a ZeroGPU Space (the variable the `spaces` package reads)."""
    return os.environ.get("SPACES_ZERO_GPU", "").lower() in ("1", "t", "true")
