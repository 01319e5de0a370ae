"""Muon for the hidden matrices, AdamW for everything else, as one optimizer to the engine.

Muon (Jordan et al. 2024, `torch.optim.Muon`) replaces each weight matrix's momentum update by
the nearest orthogonal matrix (a few Newton-Schulz iterations), so every direction of the
matrix moves at the same rate instead of the few directions that dominate the gradient. It is
meant for the 2-D weights of hidden layers only: embeddings (a lookup, not a linear map), the
output layer, gains and biases stay with AdamW (`muon_param_groups` draws that line).

:class:`MuonAdamW` holds a `torch.optim.Muon` (:class:`BatchedMuon`: the same update with the
matrices of one shape orthogonalised together) and a `torch.optim.AdamW` and shows their
param groups as one list (AdamW's first, so `param_groups[0]["lr"]` is `train.lr`), so a
single LambdaLR schedules both and a checkpoint holds both states.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import torch
from torch import nn

from playground.errors import ConfigError



def muon_available() -> bool:
    return hasattr(torch.optim, "Muon")


def newton_schulz_dtype(device: torch.device) -> torch.dtype:
    """bf16 on a GPU, as torch.optim.Muon; float32 on a CPU, where bf16 matmuls without native
    instructions (most laptops: AVX2) are emulated: 9.5 ms against 0.32 ms for a batched 4 x 128 x 128
    baddbmm on an AVX2 EPYC, which made the orthogonalisation 85% of a step (docs/time-to-quality.md)."""
    return torch.float32 if device.type == "cpu" else torch.bfloat16


def newton_schulz(G: torch.Tensor, steps: int, coefficients: tuple[float, float, float], eps: float) -> torch.Tensor:
    """torch.optim.Muon's orthogonalisation (same quintic iteration, bf16 on a GPU, Frobenius pre-scaling)
    over a stack of matrices [n, rows, cols] at once: one batched matmul per term for the stack
    instead of one small matmul per matrix, which is what costs on a CPU."""
    a, b, c = coefficients
    X = G.to(newton_schulz_dtype(G.device))
    wide = G.shape[-2] <= G.shape[-1]
    if not wide:
        X = X.mT
    X = X / X.norm(dim=(-2, -1), keepdim=True).clamp(min=eps)
    for _ in range(steps):
        A = X @ X.mT  # [n, r, r]
        B = torch.baddbmm(A, A, A, beta=b, alpha=c)
        X = torch.baddbmm(X, B, X, beta=a)
    return X if wide else X.mT


# the base is picked at import time (torch < 2.9 has no Muon), which mypy cannot check
class BatchedMuon(torch.optim.Muon if muon_available() else torch.optim.Optimizer):  # type: ignore[misc]
    """torch.optim.Muon, same hyper-parameters, state and update, with the Newton-Schulz
    iterations of all same-shaped matrices of a group done as one batch (a GPT's layers share
    their shapes). On 2 CPU cores this takes the orthogonalisation of a 4-layer d-128 GPT from
    about 40 to 30 ms a step."""

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params: list[torch.Tensor] = []
            grads: list[torch.Tensor] = []
            bufs: list[torch.Tensor] = []
            self._init_group(group, params, grads, bufs)
            momentum, lr = group["momentum"], float(group["lr"])
            by_shape: dict[tuple[int, ...], list[tuple[torch.Tensor, torch.Tensor]]] = {}
            for p, g, buf in zip(params, grads, bufs):
                buf.lerp_(g, 1 - momentum)
                update = g.lerp(buf, momentum) if group["nesterov"] else buf
                by_shape.setdefault(tuple(p.shape), []).append((p, update))
            for shape, items in by_shape.items():
                ortho = newton_schulz(torch.stack([u for _, u in items]), group["ns_steps"],
                                      group["ns_coefficients"], group["eps"])
                adjusted = _adjust_lr(lr, group["adjust_lr_fn"], torch.Size(shape))
                for (p, _), o in zip(items, ortho):
                    p.mul_(1 - lr * group["weight_decay"])
                    p.add_(o.to(p.dtype), alpha=-adjusted)
        return loss


def _adjust_lr(lr: float, adjust_lr_fn: str | None, shape: torch.Size) -> float:
    """torch.optim.Muon's lr per matrix shape [A, B]: "original" (default) sqrt(max(1, A/B)),
    "match_rms_adamw" 0.2 sqrt(max(A, B))."""
    A, B = shape[:2]
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(A, B))
    return lr * math.sqrt(max(1, A / B))


def muon_param_groups(model: nn.Module) -> tuple[list[torch.Tensor], list[nn.Parameter]]:
    """(hidden matrices for Muon, the rest for AdamW): Muon gets the weight of every nn.Linear
    except the model's output layers (its ``output_layers``, see ModelBase) and weights shared
    with an embedding (a tied LM head); AdamW gets embeddings, output layers, norms' gains and
    all biases."""
    embedding_ids = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    hidden: list[torch.Tensor] = []  # nn.Linear.weight: a Parameter unless parametrized
    seen: set[int] = set()
    outputs = set(getattr(model, "output_layers", ()))
    for name, module in model.named_modules():
        if not isinstance(module, nn.Linear) or name in outputs:
            continue
        w = module.weight
        if w.requires_grad and w.dim() == 2 and id(w) not in embedding_ids and id(w) not in seen:
            hidden.append(w)
            seen.add(id(w))
    rest = [p for p in model.parameters() if p.requires_grad and id(p) not in seen]
    return hidden, rest


class MuonAdamW(torch.optim.Optimizer):
    """One optimizer over two: `torch.optim.Muon` (groups marked ``"muon": True``) and
    `torch.optim.AdamW`. `param_groups` is AdamW's groups then Muon's (the same dicts the inner
    optimizers read, so a scheduler's lr reaches them); `state_dict` is in the usual format."""

    def __init__(self, adamw_groups: list[dict[str, Any]], muon_groups: list[dict[str, Any]], *, lr: float,
                 betas: tuple[float, float], eps: float, muon_lr: float, muon_momentum: float,
                 muon_weight_decay: float, ns_steps: int = 5, adjust_lr_fn: str | None = None,
                 **adamw_kwargs: Any) -> None:
        if not muon_available():
            raise ConfigError(f"train.optimizer = muon needs torch.optim.Muon (torch >= 2.9); this is torch "
                              f"{torch.__version__}. Use train.optimizer = adamw.")
        self.adamw = torch.optim.AdamW([{**g, "muon": False} for g in adamw_groups], lr=lr, betas=betas, eps=eps,
                                       **adamw_kwargs)
        self.muon = BatchedMuon([{**g, "muon": True} for g in muon_groups], lr=muon_lr,
                                     momentum=muon_momentum, weight_decay=muon_weight_decay,
                                     ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        # the bits of Optimizer.__init__ that schedulers, hooks and state_dict read
        self.defaults = {"lr": lr}
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        self._zero_grad_profile_name = "Optimizer.zero_grad#MuonAdamW.zero_grad"

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        return self.adamw.param_groups + self.muon.param_groups

    @param_groups.setter
    def param_groups(self, value: Any) -> None:  # Optimizer internals may assign; the inner ones own them
        pass

    # a merged read-only view of the inner optimizers' states: a plain dict, not Optimizer's defaultdict
    @property  # type: ignore[override]
    def state(self) -> dict[Any, Any]:
        return {**self.adamw.state, **self.muon.state}

    @state.setter
    def state(self, value: Any) -> None:
        pass

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self.adamw.step()
        self.muon.step()
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.adamw.zero_grad(set_to_none=set_to_none)
        self.muon.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict[str, Any]:
        """Both states as one: parameter indices run over AdamW's groups, then Muon's."""
        a, m = self.adamw.state_dict(), self.muon.state_dict()
        offset = sum(len(g["params"]) for g in a["param_groups"])
        groups = a["param_groups"] + [{**g, "params": [i + offset for i in g["params"]]} for g in m["param_groups"]]
        state = {**a["state"], **{i + offset: s for i, s in m["state"].items()}}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        n_adamw = len(self.adamw.param_groups)
        groups = state_dict["param_groups"]
        if len(groups) != n_adamw + len(self.muon.param_groups):
            raise ValueError("saved optimizer state has a different number of parameter groups")
        offset = sum(len(g["params"]) for g in groups[:n_adamw])
        state = state_dict["state"]
        self.adamw.load_state_dict({"param_groups": groups[:n_adamw],
                                    "state": {i: s for i, s in state.items() if int(i) < offset}})
        self.muon.load_state_dict({
            "param_groups": [{**g, "params": [i - offset for i in g["params"]]} for g in groups[n_adamw:]],
            "state": {int(i) - offset: s for i, s in state.items() if int(i) >= offset}})
