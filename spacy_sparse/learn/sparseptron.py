"""Sparseptron (Martins et al. 2011, Alg. 1): template selection by online
proximal gradient with a group lasso, one group per template.

The learner itself is the component's own (prefix hinge or perceptron
updates); this module adds the proximal steps. Every `every` instances, if
more than `budget` groups are nonzero, the gravity is set between the
budget-th and the next group's weighted norm (budget-driven shrinkage) and
the group-lasso prox (Eq. 14) scales every group, zeroing all but `budget`
of them. Weights are kept as w_m = c_m * v_m with |v_m|^2 maintained by the
learner (model.groups.scale, model.groups.norm2), so a prox step changes one number per
template; a zeroed group's features are deleted (their memory freed) and may
grow back from later gradients, as in the paper.
"""
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..checks import check_choice, check_number
from ..model import SparseLinearModel

# below this a template scale is folded into its weights, so v = w / c
# stays in a sane range
MIN_SCALE = 1e-3


def soft_threshold(w: np.ndarray, tau: float) -> np.ndarray:
    """The lasso prox (Eq. 13): sign(w) * max(0, |w| - tau)."""
    return np.sign(w) * np.maximum(0.0, np.abs(w) - tau)


def group_prox_factor(norms: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """The group-lasso prox (Eq. 14) as a factor per group: w_m becomes
    w_m * max(0, 1 - tau_m / |w_m|) (0 for an all-zero group)."""
    norms = np.asarray(norms, dtype=np.float64)
    safe = np.where(norms > 0, norms, 1.0)
    return np.where(norms > 0, np.maximum(0.0, 1.0 - np.asarray(tau, dtype=np.float64) / safe), 0.0)


def group_lasso_prox(w: np.ndarray, groups: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Eq. 14 on a flat vector whose entries belong to `groups` (ids)."""
    norms = np.sqrt(np.bincount(groups, weights=w.astype(np.float64) ** 2, minlength=len(tau)))
    return w * group_prox_factor(norms, tau)[groups]


def budget_gravity(norms: np.ndarray, d: np.ndarray, budget: int) -> float:
    """The gravity (lambda * step) that leaves `budget` groups: the mean of
    the budget-th and next largest |w_m| / d_m (0 when at most `budget`
    groups are nonzero)."""
    ratio = np.asarray(norms, dtype=np.float64) / np.asarray(d, dtype=np.float64)
    nonzero = np.sort(ratio[ratio > 0])[::-1]
    if nonzero.size <= budget:
        return 0.0
    if budget == 0:
        return float(nonzero[0]) * 1.0000001
    return float(0.5 * (nonzero[budget - 1] + nonzero[budget]))


def group_weights(sizes: np.ndarray, kind: str) -> np.ndarray:
    """d_m per group: log2 of its number of features (Martins' choice: the
    bits a feature of the group costs) or 1 ("uniform")."""
    if kind == "uniform":
        return np.ones(len(sizes))
    return np.log2(np.maximum(np.asarray(sizes, dtype=np.float64), 2.0))


def coarse_groups(template_names: List[str]) -> np.ndarray:
    """Coarse group id per template: templates over the same attributes
    (e.g. every POS n-gram) form one coarse group (Martins et al. §3.1)."""
    keys: Dict[str, int] = {}
    out = []
    for name in template_names:
        attrs = "+".join(sorted({atom.split("@")[0] for atom in name.split("+")}))
        out.append(keys.setdefault(attrs, len(keys)))
    return np.array(out, dtype=np.int64)


@dataclass
class SparseptronSettings:
    """budget: groups (templates) kept; every: instances between prox steps;
    epochs: epochs of selection before the debiasing refit; group_weight:
    "log2" or "uniform"; coarse_to_fine: also shrink coarse groups of
    templates over the same attributes, as a second prox layer; loss:
    "perceptron" (Martins' structured-perceptron loss while selecting: only
    a mistake's features enter a gradient) or "component" (the component's
    own objective and learner); refit: "frozen" (the refit learns the
    weights of the features the selection made and kept, and makes no
    others, as Martins' refit does) or "fresh" (it makes every feature of
    the surviving templates anew)."""

    budget: int = 30
    every: int = 1000
    epochs: int = 3
    group_weight: str = "log2"
    coarse_to_fine: bool = False
    loss: str = "perceptron"
    refit: str = "frozen"

    def __post_init__(self) -> None:
        for name in ("budget", "every", "epochs"):
            check_number(getattr(self, name), f"sparseptron.{name}", whole=True, low=1)
        check_choice(self.group_weight, "sparseptron.group_weight", ("log2", "uniform"))
        check_choice(self.coarse_to_fine, "sparseptron.coarse_to_fine", (True, False))
        check_choice(self.loss, "sparseptron.loss", ("perceptron", "component"))
        check_choice(self.refit, "sparseptron.refit", ("frozen", "fresh"))


def template_norms(model: SparseLinearModel) -> np.ndarray:
    """|w_m| per template, from the kept |v_m|^2 and scales: O(#templates)."""
    return model.groups.scale.astype(np.float64) * np.sqrt(np.maximum(model.groups.norm2, 0.0))


def _prox_factors(norms: np.ndarray, d: np.ndarray, tau: float, coarse: Optional[np.ndarray],
                  coarse_d: Optional[np.ndarray]) -> np.ndarray:
    """Per-template factors of the prox at gravity tau: the fine layer
    (Eq. 14 per template), then, with coarse groups, the coarse layer on
    what the fine one left (sequential prox steps over the two layers)."""
    factor = group_prox_factor(norms, tau * d)
    if coarse is not None:
        c_norms = np.sqrt(np.bincount(coarse, weights=(norms * factor) ** 2))
        factor = factor * group_prox_factor(c_norms, tau * coarse_d)[coarse]
    return factor


def budget_factors(norms: np.ndarray, d: np.ndarray, budget: int, coarse: Optional[np.ndarray] = None,
                   coarse_d: Optional[np.ndarray] = None) -> Tuple[float, np.ndarray]:
    """The gravity and per-template factors of a budget step: at most
    `budget` templates survive. With one layer the gravity sits between the
    budget-th and next |w_m|/d_m; with coarse groups too, it is the smallest
    gravity (by bisection) at which both layers together leave at most
    `budget`, which may be fewer when a coarse group goes at once (never
    none: then the fine layer alone decides)."""
    tau = budget_gravity(norms, d, budget)
    if tau == 0:
        return 0.0, np.ones_like(norms, dtype=np.float64)
    if coarse is None:
        return tau, _prox_factors(norms, d, tau, None, None)
    lo, hi = 0.0, tau
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if np.count_nonzero(_prox_factors(norms, d, mid, coarse, coarse_d)) <= budget:
            hi = mid
        else:
            lo = mid
    factor = _prox_factors(norms, d, hi, coarse, coarse_d)
    if not factor.any():
        return tau, _prox_factors(norms, d, tau, None, None)
    return hi, factor


def prox_step(model: SparseLinearModel, settings: SparseptronSettings) -> Dict[str, float]:
    """One budget-driven group-lasso step on the model; returns what it did."""
    norms = template_norms(model)
    d = group_weights(model.tab_count, settings.group_weight)
    coarse = coarse_d = None
    if settings.coarse_to_fine:
        coarse = coarse_groups(model.template_names)
        coarse_d = group_weights(np.bincount(coarse, weights=model.tab_count.astype(np.float64)),
                                 settings.group_weight)
    tau, factor = budget_factors(norms, d, settings.budget, coarse, coarse_d)
    if tau > 0:
        model.groups.scale *= factor.astype(np.float32)
        dead = (factor == 0) & (model.tab_count > 0)
        if dead.any():
            model.drop_templates(dead)
        small = (model.groups.scale > 0) & (model.groups.scale < MIN_SCALE)
        if small.any():
            model.fold_scale()
        model.changed()
    alive = int(np.count_nonzero(template_norms(model) > 0))
    return {"gravity": tau, "templates_alive": alive, "features": int(model.n_rows[0])}


def survivors(model: SparseLinearModel) -> List[str]:
    """Names of the templates with a nonzero group, in model order."""
    norms = template_norms(model)
    return [name for name, n in zip(model.template_names, norms) if n > 0]


def start_selection(model: SparseLinearModel) -> None:
    """Switch a fresh model to the sparseptron's representation."""
    model.groups.selecting = True
    model.changed()


def debias_templates(model: SparseLinearModel, settings: Optional[SparseptronSettings] = None) -> List[str]:
    """End selection with one last prox step, so at most `budget` groups
    survive, and return them (the refit trains these from scratch)."""
    if settings is not None:
        prox_step(model, settings)
    chosen = survivors(model)
    model.groups.selecting = False
    model.fold_scale()
    model.changed()
    return chosen
