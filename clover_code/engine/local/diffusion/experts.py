"""Block-level expert selection and expert counting on the loaded model's MoE routers.

Hooks sit on the router modules of the model as loaded (any module with
``top_k``, ``num_experts`` and a ``[num_experts, hidden]`` ``weight`` whose
forward returns ``(router_logits, top_k_weights, top_k_indices)``, as
transformers' Qwen3.5-MoE ``TopKRouter`` does); the model's code is not copied
or changed. A forward hook may replace a module's output, which is all this
needs.

Per block, with ``mass`` set: at the block's first denoising forward each
router sums its softmax probabilities per expert over the block's tokens and
keeps the smallest set of experts covering ``mass`` of the total (never fewer
than ``top_k``). From then on, that forward included, routing is restricted
to the set: the top-k is taken among the kept experts and its weights are
renormalised to sum to one, as the router does over all experts. The set
holds for every denoising step of the block and for its commit forward, and
is released after. ``mass`` 1.0 keeps every expert (the logits equal those
without selection).

Counting runs with or without selection: the distinct experts each router
sent a token to, per block (prefill forwards are not counted).
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["ExpertRouting", "find_routers"]


def find_routers(model: Any) -> list[Any]:
    """The model's MoE router modules, in layer order."""
    found = []
    for module in model.modules():
        weight = getattr(module, "weight", None)
        experts = getattr(module, "num_experts", None)
        if (
            isinstance(getattr(module, "top_k", None), int)
            and isinstance(experts, int)
            and isinstance(weight, torch.Tensor)
            and weight.dim() == 2
            and weight.shape[0] == experts
        ):
            found.append(module)
    return found


class ExpertRouting:
    """Counts the experts each block touches and, with ``mass``, restricts them."""

    def __init__(self, routers: list[Any], mass: float | None = None) -> None:
        if mass is not None and not 0.0 < mass <= 1.0:
            raise ValueError("expert_mass must be above 0 and at most 1")
        self.routers = routers
        self.mass = mass
        self.mode = "idle"
        """idle (prefill: nothing done), select (the block's first forward), restrict, count."""
        self.kept: list[torch.Tensor | None] = [None] * len(routers)
        """Bool [num_experts] per router: the block's kept set (None: not selected)."""
        self._seen: list[torch.Tensor | None] = [None] * len(routers)
        self._handles = [
            router.register_forward_hook(self._hook(i)) for i, router in enumerate(routers)
        ]

    def begin_block(self) -> None:
        """A block starts: select at its first forward (with ``mass``), count from now."""
        self.mode = "select" if self.mass is not None else "count"
        self.kept = [None] * len(self.routers)
        self._seen = [None] * len(self.routers)

    def end_block(self) -> list[int]:
        """The block is committed: release the set; the distinct experts per router."""
        touched = [int(s.sum()) if s is not None else 0 for s in self._seen]
        self.release()
        return touched

    def release(self) -> None:
        """Back to unrestricted, uncounted routing (a cancelled block, the next prefill)."""
        self.mode = "idle"
        self.kept = [None] * len(self.routers)

    def remove(self) -> None:
        """Take the hooks off the model."""
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _hook(self, index: int) -> Any:
        def hook(module: Any, args: Any, output: Any) -> Any:
            if self.mode == "idle" or not (isinstance(output, tuple) and len(output) == 3):
                return None
            logits, weights, indices = output
            if self.mode == "select":
                self.kept[index] = self._select(logits, module.top_k)
            kept = self.kept[index]
            if kept is not None:
                weights, indices = _restricted(logits, kept, module.top_k, weights.dtype)
                output = (logits, weights, indices)
            seen = self._seen[index]
            if seen is None:
                seen = self._seen[index] = torch.zeros(
                    module.num_experts, dtype=torch.bool, device=indices.device
                )
            seen[indices.reshape(-1)] = True
            return output

        return hook

    def _select(self, logits: torch.Tensor, top_k: int) -> torch.Tensor:
        """The smallest set of experts holding ``mass`` of the block's routing probability."""
        experts = logits.shape[-1]
        kept = torch.zeros(experts, dtype=torch.bool, device=logits.device)
        assert self.mass is not None
        if self.mass >= 1.0:
            return kept.fill_(True)
        total = torch.softmax(logits.reshape(-1, experts).float(), dim=-1).sum(dim=0)
        share, order = torch.sort(total / total.sum(), descending=True)
        # Experts before the one that brings the running share to ``mass``, plus it.
        count = int((torch.cumsum(share, 0) < self.mass).sum()) + 1
        kept[order[: max(count, top_k)]] = True
        return kept

    def in_kept_sets(self, indices: torch.Tensor, index: int) -> bool:
        """Whether every expert in ``indices`` is in router ``index``'s kept set (tests)."""
        kept = self.kept[index]
        return kept is None or bool(kept[indices.reshape(-1)].all())


def _restricted(
    logits: torch.Tensor, kept: torch.Tensor, top_k: int, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k weights and indices among the kept experts, renormalised (the router's own math)."""
    probs = torch.softmax(logits.float(), dim=-1).masked_fill(~kept, 0.0)
    values, indices = torch.topk(probs, top_k, dim=-1)
    values /= values.sum(dim=-1, keepdim=True)
    return values.to(dtype), indices
