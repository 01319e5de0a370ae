"""What explaining an image classifier's output means: a class logit over the image's patches
(playground.analysis.explainer). Key 0 of every attention map is the CLS token when the ViT
pools by CLS; a ViT that pools by mean has no single row that produces its output."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from PIL import Image
from torch import Tensor, nn

from playground.analysis.explain.pointing import patch_mask
from playground.analysis.explain.propagation import entropy
from playground.analysis.explainer import AnalyzeView, FamilyExplainer
from playground.analysis.heads.batches import HeadBatches, chunks, labelled
from playground.analysis.query import Query
from playground.errors import PlaygroundError
from playground.models.attention import attention_modules

if TYPE_CHECKING:  # bundle imports the family registry, which imports this module
    from playground.bundle import Bundle

ABOUT = ("**ViT** · explains a class logit over the image's patches. Upload an image or pick a "
         "validation sample (vit-shapes samples carry the object mask: pointing game).")
MEAN_POOL_SKIPS = {"flow", "norm", "attention_grad", "attention_grad_only"}  # need one query row


class ClassifierExplainer(FamilyExplainer):
    """F = the target class logit; the units are the patches of ``query.grid``."""

    kind = "classifier"
    output_name = "class distribution"
    adversarial_epsilon = 0.01
    unavailable = frozenset({"loo_delete"})
    reads_images = True

    def head_data(self, payload: Any, n: int, seed: int, batch_size: int, device: str) -> HeadBatches:
        """The first ``n`` validation images and their labels."""
        val = payload.val
        parts = chunks(min(n, val.n), batch_size)
        return labelled([val.images[s].to(device) for s in parts], [val.labels[s].to(device) for s in parts])
    uniform_override = {"model.uniform_attention": True}
    label_shuffle_override = {"data.shuffle_labels": True}
    quick_retrain_steps = 300  # the presets train for thousands of steps; a shuffled-label run needs no convergence

    # -- F -------------------------------------------------------------------------------
    def check(self, query: Query) -> None:
        """A classifier needs no positions."""

    def n_units(self, query: Query) -> int:
        if query.grid is None:
            raise ValueError("classifier queries need grid=(rows, cols)")
        return query.grid[0] * query.grid[1]

    def forward_args(self, query: Query) -> tuple[Tensor, ...]:
        return (query.targets,)

    def score_fn(self, query: Query) -> Callable[..., Tensor]:
        model = query.model

        def f_cls(images: Tensor, targets: Tensor) -> Tensor:
            logits = model(images)  # [B,C]
            return logits.gather(1, targets[:, None])[:, 0]
        return f_cls

    def output_rows(self, query: Query, inputs: Tensor, positions: Tensor | None, decoder_inputs: Tensor | None,
                    last_only: bool) -> Tensor:
        return query.model(inputs)  # [N,C]

    # -- attention -----------------------------------------------------------------------
    def explaining_maps(self, model: nn.Module) -> list[str]:
        return [n for n in attention_modules(model) if n.startswith("blocks.")]

    def explained_rows(self, query: Query, attn: Tensor) -> Tensor:
        if query.cls_token:
            return attn[:, :, 0, 1:]  # CLS row over the patches
        return attn.mean(dim=2)  # mean pooling: every patch row counts equally

    def query_row(self, query: Query, b: int) -> int | None:
        return 0 if query.cls_token else None

    def cls_slot(self, query: Query) -> bool:
        return query.cls_token

    def attention_keys(self, query: Query) -> int:
        return query.n_units + 1  # the patches and the CLS slot

    def layer_units(self, query: Query, attr: Tensor) -> Tensor:
        if attr.shape[1] == query.n_units + 1:
            return attr[:, 1:]  # a CLS slot inside the patch embedding output
        return attr

    def check_attention(self, query: Query, method: str) -> None:
        if query.cls_token:
            return
        if method == "flow":
            raise PlaygroundError("Attention flow needs a CLS query; this ViT pools by mean (use rollout).")
        if method == "norm":
            raise PlaygroundError("Norm-weighted attention needs one query row; this ViT pools by mean.")

    # -- leave-one-out and erasure: patch occlusion ------------------------------------------
    def loo_mode(self, mode: str) -> str:
        return "replace"

    def loo_variants(self, query: Query, mode: str) -> tuple[Tensor, Tensor | None]:
        U, x = query.n_units, query.inputs
        rows, cols = query.grid  # type: ignore[misc]
        ph, pw = x.shape[-2] // rows, x.shape[-1] // cols
        out = x.unsqueeze(0).repeat(U, 1, 1, 1, 1)  # [U,B,C,H,W]
        for t in range(U):
            r, c = divmod(t, cols)
            sl = (t, slice(None), slice(None), slice(r * ph, (r + 1) * ph), slice(c * pw, (c + 1) * pw))
            out[sl] = query.baselines[:, :, r * ph:(r + 1) * ph, c * pw:(c + 1) * pw]  # type: ignore[index]
        return out.flatten(0, 1), None

    def erase_units(self, query: Query, keep: Tensor) -> Tensor:
        x, base = query.inputs, query.baselines  # [1,C,H,W]
        N = keep.shape[0]
        gh, gw = query.grid  # type: ignore[misc]
        H, W = x.shape[-2:]
        m = keep.view(N, 1, gh, gw).to(x.dtype)
        m = m.repeat_interleave(H // gh, dim=2).repeat_interleave(W // gw, dim=3)  # [N,1,H,W]
        return x * m + base * (1 - m)  # type: ignore[operator]

    def unit_mask(self, query: Query, mask: Any) -> np.ndarray:
        """Object pixels [H,W] -> the patches that hold any of them, flattened [U]."""
        return patch_mask(mask, query.inputs.shape[-1] // query.grid[1]).reshape(-1)  # type: ignore[index]

    def skipped_methods(self, query: Query) -> set[str]:
        return set(self.unavailable) | (set() if query.cls_token else MEAN_POOL_SKIPS)

    # -- the probe: the CLS row ------------------------------------------------------------
    def probe_keys(self, query: Query) -> tuple[int, Tensor]:
        if not query.cls_token:
            raise PlaygroundError(
                "This ViT pools by averaging (pool='mean'), so no single attention row produces its output; "
                "the attention experiments need a ViT with pool='cls'."
            )
        return 0, torch.arange(-1, query.n_units, device=query.device)  # key 0 is CLS

    def probe_logits(self, query: Query, row: int, prefix: Any, n: int) -> Tensor:
        return query.model(query.inputs.expand(n, *query.inputs.shape[1:]))  # [n,C]

    def permutable_keys(self, query: Query, b: int, n_keys: int) -> Tensor:
        mask = query.units_mask[b].clone()  # type: ignore[index]
        return mask.nonzero().flatten() + (1 if query.cls_token else 0)  # the CLS key stays put

    # -- per input -----------------------------------------------------------------------
    def prepare(self, bundle: Bundle, spec: Any, sample: Any, device: str | torch.device) -> Any:
        # inputs asks playground.families, which imports this module: imported here, not at the top
        from playground.analysis.inputs import prepare_classifier

        image = sample.image if sample is not None else spec.image
        if image is None:
            raise PlaygroundError("Upload an image or pick a sample from the checkpoint's data.")
        return prepare_classifier(bundle.model, image, spec.target, bundle.class_names,
                                  mask=None if sample is None else sample.mask,
                                  true_label=None if sample is None else sample.true_label,
                                  family=bundle.family, device=device)

    def head_maps(self, prepared: Any, full: Tensor, window: int) -> tuple[Tensor, Tensor, list[str], list[str], str]:
        q = prepared.query
        rows_, cols = q.grid
        row = full[:, :, 0] if q.cls_token else full.mean(2)  # [L,H,K]
        ent = entropy(row)  # over the whole row (CLS included)
        patches = row[..., 1:] if q.cls_token else row
        return patches.reshape(*patches.shape[:2], rows_, cols), ent, [], [], "grid"

    def importance_chart(self, result: Any) -> Any:
        from playground.charts.analysis import patch_grids_chart  # plotting loads late (start-up time)

        p = result.prepared
        mask = None if p.mask is None else patch_mask(p.mask, int(p.info["patch_size"]))
        return patch_grids_chart(result.to_frame(), p.query.grid, p.image, mask=mask)

    def summary_lines(self, prepared: Any) -> list[str]:
        true_label = prepared.info.get("true_label")
        return [f"True class of the sample: `{true_label}`."] if true_label else []

    @property
    def view(self) -> AnalyzeView:
        return AnalyzeView(ABOUT, "Text (not used for images)", "Position (not used for images)",
                           "Target class (blank = predicted)", reads_image=True)

    def handoff(self, selection: dict[str, Any], token: Any) -> dict[str, Any]:
        k = selection.get("target_position")
        name = token if token not in (None, "") else (str(k) if k is not None else None)
        return dict(text="", image=_handed_image(selection.get("input"), bool(selection.get("invert"))), target=name,
                    position="", note=f"explaining class `{name}` of the classified image"
                    + (" (inverted, as it was classified)" if selection.get("invert") else "") + ".")


def _handed_image(image: Any, invert: bool) -> Any:
    """The image the Generate tab classified (inverted like it was, when it was)."""
    if image is None or not invert:
        return image
    with Image.open(image) as img:
        return 255 - np.asarray(img.convert("RGB"), dtype=np.uint8)
