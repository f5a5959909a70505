"""Block-level expert selection and expert counting on the loaded model's MoE routers.

Hooks sit on the router modules of the model as loaded (any module with
``top_k``, ``num_experts`` and a ``[num_experts, hidden]`` ``weight`` whose
forward returns ``(router_logits, top_k_weights, top_k_indices)``, as
transformers' Qwen3.5-MoE ``TopKRouter`` does); the model's code is not copied
or changed. A forward hook may replace a module's output, which is all this
needs.

Tokens are counted and restricted per *group*: the tokens of one block of one
sequence, over every forward of that block (its denoising steps and the
forward that commits it). Before a forward the decoder says which group each
of its tokens belongs to (padding belongs to none) and what each group does
at this forward (``plan``):

* ``select``: each router sums its softmax probabilities over the group's
  tokens and keeps the smallest set of experts holding ``mass`` of the total,
  chosen among the experts those tokens route to (so the set is never larger
  than what routing without selection touches at that forward, and never
  smaller than ``top_k``); routing is then restricted to it;
* ``hold``: routing is restricted to the group's kept set: the top-k is taken
  among the kept experts and its weights renormalised to sum to one, as the
  router does over all experts;
* ``free``: the router's own routing, counted.

When the set is chosen is the policy (``expert_select``): ``block`` at the
block's first (all-mask) forward and held to its commit; ``filled`` at the
forward after the first step has filled a position (the first forward runs
free); ``half`` at the first forward and once more when half of the block's
free positions are filled; ``step`` at every forward (for comparison).
``mass`` 1.0 keeps every expert: routing is untouched, bit for bit.

Counting runs with or without selection: per group and router, the distinct
experts its tokens were sent to (``seen``) and those the router itself would
have picked (``would``); prefill forwards are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch

__all__ = ["POLICIES", "ExpertRouting", "Plan", "Policy", "find_routers"]

Policy = Literal["block", "filled", "half", "step"]
POLICIES: tuple[Policy, ...] = ("block", "filled", "half", "step")
Plan = Literal["select", "hold", "free"]


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


@dataclass(slots=True)
class _Group:
    chosen: int = 0
    """Times a set was chosen for the group."""
    refreshed: bool = False


class ExpertRouting:
    """Counts the experts each block touches and, with ``mass``, restricts them."""

    def __init__(
        self, routers: list[Any], mass: float | None = None, policy: Policy = "block"
    ) -> None:
        if mass is not None and not 0.0 < mass <= 1.0:
            raise ValueError("expert_mass must be above 0 and at most 1")
        if policy not in POLICIES:
            raise ValueError(f"expert_select must be one of {', '.join(POLICIES)}")
        self.routers = routers
        self.mass = mass
        self.policy: Policy = policy
        self.experts = max((int(r.num_experts) for r in routers), default=0)
        self._tokens: torch.Tensor | None = None
        self._select: list[int] = []
        self._restrict: torch.Tensor | None = None
        self._groups: dict[int, _Group] = {}
        self._kept: list[torch.Tensor] = []
        self._seen: list[torch.Tensor] = []
        self._would: list[torch.Tensor] = []
        self._handles = [
            router.register_forward_hook(self._hook(i)) for i, router in enumerate(routers)
        ]

    @property
    def selecting(self) -> bool:
        """Whether routing is restricted at all (a mass below 1)."""
        return self.mass is not None and self.mass < 1.0

    def open_group(self) -> int:
        """A new group (a block of a sequence); its id."""
        gid = next(i for i in range(len(self._groups) + 1) if i not in self._groups)
        self._groups[gid] = _Group()
        self._grow(gid + 1)
        for table in (*self._kept, *self._seen, *self._would):
            table[gid] = False
        return gid

    def plan(self, gid: int, forwards: int, filled: int, free: int) -> Plan:
        """What group ``gid`` does at its block's next denoising forward: ``forwards`` done
        before it, ``filled`` of its ``free`` positions filled."""
        group = self._groups[gid]
        if not self.selecting:
            return "free"
        if self.policy == "step":
            return "select"
        if self.policy == "block":
            return "select" if group.chosen == 0 else "hold"
        if self.policy == "filled":
            if group.chosen:
                return "hold"
            return "select" if filled else "free"
        # half: chosen at the first forward, again once half the positions are filled
        if group.chosen == 0:
            return "select"
        if not group.refreshed and free and 2 * filled >= free:
            group.refreshed = True
            return "select"
        return "hold"

    def commit_plan(self, gid: int) -> Plan:
        """What group ``gid`` does in the forward that commits its block: its held set."""
        return "hold" if self.selecting and self._groups[gid].chosen else "free"

    def prepare(self, tokens: torch.Tensor | None, plans: dict[int, Plan]) -> None:
        """Before a forward: each token's group (-1: none) and each group's plan; None: an
        uncounted forward (prefill)."""
        self._tokens = tokens
        self._select = [g for g, p in plans.items() if p == "select"]
        for g in self._select:
            self._groups[g].chosen += 1
        if tokens is None:
            self._restrict = None
            return
        restrict = torch.zeros(max(self._groups, default=0) + 1, dtype=torch.bool)
        for g, p in plans.items():
            restrict[g] = p in ("select", "hold") and self.selecting
        self._restrict = restrict.to(tokens.device)

    def forward_groups(self) -> list[int]:
        """The groups with tokens in the forward being run (tests and checks)."""
        if self._tokens is None:
            return []
        present = torch.unique(self._tokens).tolist()
        return sorted(int(g) for g in present if g >= 0)

    def end_group(self, gid: int) -> list[int]:
        """The group's block is done: the distinct experts per router; the group is freed."""
        touched = [int(table[gid].sum()) for table in self._seen]
        del self._groups[gid]
        return touched

    def would(self, gid: int) -> list[int]:
        """Per router, the distinct experts the group's tokens would have used unrestricted."""
        return [int(table[gid].sum()) for table in self._would]

    def kept(self, gid: int) -> list[torch.Tensor]:
        """Per router, the group's kept set (bool [num_experts]; all False before a choice)."""
        return [table[gid].clone() for table in self._kept]

    def release(self) -> None:
        """Forget every group (a decode ended or failed)."""
        self._groups.clear()
        self._tokens = None

    def remove(self) -> None:
        """Take the hooks off the model."""
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _grow(self, size: int) -> None:
        if self._kept and self._kept[0].shape[0] >= size:
            return
        rows = max(size, 2 * (self._kept[0].shape[0] if self._kept else 4))
        for name in ("_kept", "_seen", "_would"):
            tables: list[torch.Tensor] = getattr(self, name)
            grown = []
            for i, router in enumerate(self.routers):
                device = router.weight.device
                table = torch.zeros(
                    (rows, int(router.num_experts)), dtype=torch.bool, device=device
                )
                if i < len(tables):
                    table[: tables[i].shape[0]] = tables[i]
                grown.append(table)
            setattr(self, name, grown)

    def _hook(self, index: int) -> Any:
        def hook(module: Any, args: Any, output: Any) -> Any:
            tokens = self._tokens
            if tokens is None or not (isinstance(output, tuple) and len(output) == 3):
                return None
            logits, weights, indices = output
            if logits.shape[0] != tokens.shape[0]:
                return None  # tokens laid out in a way this cannot map
            real = tokens >= 0
            group = tokens.clamp(min=0)
            kept_table = self._kept[index]
            for gid in self._select:
                rows = tokens == gid
                kept_table[gid] = self._choose(logits[rows], indices[rows], module.top_k)
            own = indices
            assert self._restrict is not None
            restricted = real & self._restrict[group]
            if self._select or bool(restricted.any()):
                kept = kept_table[group]
                new_weights, new_indices = _restricted(logits, kept, module.top_k, weights.dtype)
                weights = torch.where(restricted[:, None], new_weights, weights)
                indices = torch.where(restricted[:, None], new_indices, indices)
                output = (logits, weights, indices)
            width = indices.shape[1]
            flat = real[:, None].expand(-1, width).reshape(-1)
            rows = group[:, None].expand(-1, width).reshape(-1)[flat]
            self._seen[index].index_put_((rows, indices.reshape(-1)[flat]), real.new_ones(()))
            self._would[index].index_put_((rows, own.reshape(-1)[flat]), real.new_ones(()))
            return output

        return hook

    def _choose(self, logits: torch.Tensor, own: torch.Tensor, top_k: int) -> torch.Tensor:
        """The smallest set of experts holding ``mass`` of the tokens' routing probability,
        among the experts they route to (never fewer than ``top_k``)."""
        experts = logits.shape[-1]
        kept = torch.zeros(experts, dtype=torch.bool, device=logits.device)
        if logits.shape[0] == 0:
            return kept
        assert self.mass is not None
        total = torch.softmax(logits.reshape(-1, experts).float(), dim=-1).sum(dim=0)
        candidates = torch.zeros(experts, dtype=torch.bool, device=logits.device)
        candidates[own.reshape(-1)] = True
        share = (total / total.sum()).masked_fill(~candidates, -1.0)
        values, order = torch.sort(share, descending=True)
        # Experts before the one that brings the running share to ``mass``, plus it.
        count = int((torch.cumsum(values.clamp(min=0.0), 0) < self.mass).sum()) + 1
        count = min(max(count, top_k), int(candidates.sum()))
        kept[order[:count]] = True
        return kept


def _restricted(
    logits: torch.Tensor, kept: torch.Tensor, top_k: int, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k weights and indices among the kept experts, renormalised (the router's own math)."""
    probs = torch.softmax(logits.float(), dim=-1).masked_fill(~kept, 0.0)
    values, indices = torch.topk(probs, top_k, dim=-1)
    values /= values.sum(dim=-1, keepdim=True)
    return values.to(dtype), indices
