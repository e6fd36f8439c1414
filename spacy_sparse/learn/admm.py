"""DC-ADMM (Suzuki & Nagata 2013): weights restricted to a small set
S = {+-(eta * kappa^x + delta) : 0 <= x < zeta} U {0}, learned by ADMM.

One ADMM iteration per training epoch:
- w-step: the epoch itself, the component's own learner with the biased L2
  term rho/2 |w - (u - alpha)|^2, applied lazily per feature by the kernels
  (model.admm.target, model.admm.pull; kernels/learner.py catch_up);
- u-step (Fig. 2): soft-threshold b' = rho/(lambda2 + rho) (w + alpha) by
  lambda1' = lambda1/(lambda2 + rho), then the nearest value of S; with
  lambda0 (our addition, an L0 term lambda0 [u != 0]), a weight keeps that
  value only if it pays for lambda0, else it is 0. L0 removes weights
  without shrinking the ones it keeps, which L1 does;
- alpha += xi (w - u); stop when both residuals are below their epsilons.
The model predicts with and saves u (model.admm.fixed) while ADMM runs.

QT, the baseline: the u-step alone (alpha = 0) on a trained float model.
"""
from dataclasses import dataclass
from typing import Dict, Optional, Union

import numpy as np

from ..checks import check_number
from ..model import SparseLinearModel


def value_set(eta: float, delta: float, kappa: float, zeta: int) -> np.ndarray:
    """S, sorted: 0 and +-(eta * kappa^x + delta) for x < zeta."""
    pos = eta * kappa ** np.arange(zeta, dtype=np.float64) + delta
    return np.concatenate([-pos[::-1], [0.0], pos]).astype(np.float32)


def nearest_in_set(x: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each entry of x replaced by the nearest value of the sorted `values`
    (ties go to the smaller magnitude)."""
    x = np.asarray(x, dtype=np.float32)
    hi = np.searchsorted(values, x).clip(1, len(values) - 1)
    lo = hi - 1
    lo_v, hi_v = values[lo], values[hi]
    d_lo, d_hi = np.abs(x - lo_v), np.abs(hi_v - x)
    take_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (np.abs(hi_v) < np.abs(lo_v)))
    return np.where(take_hi, hi_v, lo_v).astype(np.float32)


# rows per slice of the u-step and residuals: their float64 temporaries over a
# parser's whole dense matrix (millions of rows x ~100 actions) took over 18 GB
CHUNK_ROWS = 1 << 15


def u_step(w: np.ndarray, alpha: np.ndarray, values: np.ndarray, rho: float = 1.0,
           lambda1: float = 0.0, lambda2: float = 0.0, lambda0: float = 0.0,
           lambda0_feature: float = 0.0) -> np.ndarray:
    """The u-update of Suzuki & Nagata Fig. 2: argmin over u in S of
    lambda1 |u| + lambda2/2 u^2 + rho/2 (u - (w + alpha))^2, plus our L0
    terms: lambda0 per nonzero weight, lambda0_feature per feature (row of
    a 2-d w) with any nonzero weight. The nearest nonzero value is a
    weight's only nonzero candidate, and a row's only nonzero candidate is
    its per-weight optimum, so each L0 term is one comparison with 0.
    Rows are independent, so they are done a slice at a time."""
    u = np.empty(w.shape, dtype=np.float32)
    for lo in range(0, w.shape[0], CHUNK_ROWS):
        part = slice(lo, lo + CHUNK_ROWS)
        u[part] = _u_step_rows(w[part], alpha[part], values, rho, lambda1, lambda2, lambda0, lambda0_feature)
    return u


def _u_step_rows(w, alpha, values, rho, lambda1, lambda2, lambda0, lambda0_feature) -> np.ndarray:
    b = (rho / (lambda2 + rho)) * (w.astype(np.float64) + alpha)
    lam = lambda1 / (lambda2 + rho)
    soft = np.sign(b) * np.maximum(0.0, np.abs(b) - lam)
    u = nearest_in_set(soft, values)
    if lambda0 > 0 or lambda0_feature > 0:
        scale = (lambda2 + rho) / 2
        zero_cost = scale * b ** 2
        cost = np.minimum(scale * (u - b) ** 2 + lambda1 * np.abs(u) + lambda0, zero_cost)
        u[cost >= zero_cost] = 0.0
        if lambda0_feature > 0 and u.ndim == 2:
            u[cost.sum(axis=1) + lambda0_feature >= zero_cost.sum(axis=1)] = 0.0
    return u


def _mean_squared_difference(a: np.ndarray, b: np.ndarray) -> float:
    """mean((a - b)^2), a slice of rows at a time."""
    if a.size == 0:
        return 0.0
    total = sum(float(np.sum((a[lo:lo + CHUNK_ROWS] - b[lo:lo + CHUNK_ROWS]) ** 2))
                for lo in range(0, a.shape[0], CHUNK_ROWS))
    return total / a.size


def auto_eta(w: np.ndarray, kappa: float, zeta: int, sample: int = 200_000, seed: int = 0,
             floor: float = 0.0) -> float:
    """The scale eta of S (delta = eta / 2) that quantizes the nonzero
    weights of magnitude >= floor (those an L0 term keeps) with the least
    squared error, by a search over a grid (the paper tunes eta per zeta on
    dev data; this picks it from the weights)."""
    nz = np.abs(w[(w != 0) & (np.abs(w) >= floor)]).astype(np.float64)
    if nz.size == 0:
        return 1.0
    if nz.size > sample:
        # sorted first, so the sample (and eta) depend on the weights, not
        # on the order of the rows (which a saved and loaded model changes)
        nz = np.random.default_rng(seed).choice(np.sort(nz), sample, replace=False)
    top = (kappa ** (zeta - 1) + 0.5)
    grid = np.quantile(nz, np.linspace(0.5, 0.999, 40)) / top
    grid = np.unique(grid[grid > 0])
    best, best_err = float(grid[0]) if grid.size else 1.0, np.inf
    for eta in grid:
        values = value_set(float(eta), float(eta) / 2, kappa, zeta)
        err = float(np.sum((nearest_in_set(nz, values) - nz) ** 2))
        if err < best_err:
            best, best_err = float(eta), err
    return best


def cover_eta(w: np.ndarray, kappa: float, zeta: int, delta: Optional[float] = None) -> float:
    """The eta whose largest value of S (eta * kappa^(zeta-1) + delta,
    delta = eta / 2 when None) is the largest |w|: no weight is clipped.
    Rounding a trained model (QT) needs this: the few largest weights
    decide the most, and auto_eta's least squares clips them (a float
    parser lost 0.45 dev LAS with auto_eta, none with this)."""
    top = float(np.max(np.abs(w))) if w.size else 0.0
    if delta is None:
        return top / (kappa ** (zeta - 1) + 0.5) if top > 0 else 1.0
    return (top - delta) / kappa ** (zeta - 1) if top > delta else 1.0


@dataclass
class AdmmSettings:
    """zeta: values per sign (|S| = 2 zeta + 1); kappa, eta ("auto": fit to
    the weights at the first u-step by least squares; "cover": the largest
    value of S is the largest weight), delta (None: eta / 2): the shape of S;
    rho, xi, lambda1, lambda2, eps_primal, eps_dual: as in the paper (its
    defaults); lambda0, lambda0_feature: L0 terms per weight and per
    feature (ours; 0 = off; they mirror what a weight and a feature's key
    cost in the file); step: the w-step's step
    size for the L2 pull, per decision (the pull per decision is
    1 - step * rho); start_epoch: the first epoch
    run as a w-step (after a sparseptron's selection when both run);
    max_iterations: stop after this many iterations (None: one per epoch to
    the end of training); closed: from the start of DC-ADMM, learn only the
    features the model already has (compressing a trained model: memory
    stays that of its saved features). Once stopped, the model keeps the last u, so every
    later checkpoint is the same finished model."""

    zeta: int = 4
    kappa: float = 4.0
    eta: Union[float, str] = "auto"
    delta: Optional[float] = None
    rho: float = 1.0
    xi: float = 1.0
    lambda1: float = 0.0
    lambda2: float = 0.0
    lambda0: float = 0.0
    lambda0_feature: float = 0.0
    eps_primal: float = 1e-4
    eps_dual: float = 1e-4
    step: float = 5e-6
    start_epoch: int = 0
    max_iterations: Optional[int] = None
    closed: bool = False

    def __post_init__(self) -> None:
        check_number(self.zeta, "dc_admm.zeta", whole=True, low=1, high=127)
        if self.eta not in ("auto", "cover"):
            check_number(self.eta, "dc_admm.eta ('auto', 'cover' or a positive number)", low=0, low_open=True)
        for name in ("kappa", "rho", "xi", "step"):
            check_number(getattr(self, name), f"dc_admm.{name}", low=0, low_open=True)
        for name in ("lambda0", "lambda0_feature", "lambda1", "lambda2", "eps_primal", "eps_dual"):
            check_number(getattr(self, name), f"dc_admm.{name}", low=0)
        check_number(self.delta, "dc_admm.delta", low=0, allow_none=True)
        if self.step * self.rho >= 1:
            raise ValueError("dc_admm.step * rho must be below 1")
        check_number(self.start_epoch, "dc_admm.start_epoch", whole=True, low=0)
        check_number(self.max_iterations, "dc_admm.max_iterations", whole=True, low=1, allow_none=True)
        if not isinstance(self.closed, bool):
            raise ValueError(f"dc_admm.closed must be true or false, got {self.closed!r}")

    def values(self, w: np.ndarray) -> np.ndarray:
        """S for these settings; "auto" fits eta to the weights the L0 term
        would keep (at alpha = 0: |b'| above sqrt(2 lambda0 / (lambda2 + rho)))."""
        floor = np.sqrt(2 * self.lambda0 / (self.lambda2 + self.rho)) * (self.lambda2 + self.rho) / self.rho
        if self.eta == "auto":
            eta = auto_eta(w, self.kappa, self.zeta, floor=floor)
        elif self.eta == "cover":
            eta = cover_eta(w, self.kappa, self.zeta, self.delta)
        else:
            eta = float(self.eta)
        delta = eta / 2 if self.delta is None else float(self.delta)
        return value_set(eta, delta, self.kappa, self.zeta)



def quantize(model: SparseLinearModel, settings: AdmmSettings) -> Dict[str, float]:
    """QT: the u-step alone on the model's float weights; the model then
    predicts with and saves the quantized weights."""
    w = model.float_average()
    values = settings.values(w)
    model.admm.fixed = u_step(w, np.zeros_like(w), values, settings.rho, settings.lambda1, settings.lambda2,
                         settings.lambda0, settings.lambda0_feature)
    model.changed()
    return {"distinct_weights": int(np.unique(model.admm.fixed[model.admm.fixed != 0]).size)}


class DcAdmm:
    """ADMM state for one model: alpha, u and S, kept across epochs."""

    def __init__(self, settings: AdmmSettings):
        self.settings = settings
        self.values: Optional[np.ndarray] = None
        self.alpha = np.zeros((0, 0), dtype=np.float32)
        self.u = np.zeros((0, 0), dtype=np.float32)
        self.iterations = 0
        self.converged = False

    def begin(self, model: SparseLinearModel) -> None:
        """Start the first w-step: switch on the lazy pull (toward 0, as
        u = alpha = 0) from this decision on."""
        model.ensure_training_layout()
        model.admm.begin(1.0 - self.settings.step * self.settings.rho, model.W.shape[0], model.W.shape[1],
                         float(model.steps[0]))

    def iterate(self, model: SparseLinearModel) -> Dict[str, float]:
        """End a w-step: u-step, alpha-step, residuals; the next epoch is the
        next w-step, pulled toward the new u - alpha."""
        s = self.settings
        _catch_up_all(model)
        n = int(model.n_rows[0])
        w = model.float_average()
        if self.values is None:
            self.values = s.values(w)
        alpha, u_old = _resize(self.alpha, w.shape), _resize(self.u, w.shape)
        u = u_step(w, alpha, self.values, s.rho, s.lambda1, s.lambda2, s.lambda0, s.lambda0_feature)
        primal = _mean_squared_difference(w, u)
        dual = _mean_squared_difference(u, u_old)
        for lo in range(0, w.shape[0], CHUNK_ROWS):
            part = slice(lo, lo + CHUNK_ROWS)
            alpha[part] += s.xi * (w[part] - u[part])
        self.alpha, self.u = alpha, u
        self.iterations += 1
        self.converged = primal < s.eps_primal and dual < s.eps_dual
        model.admm.target = np.zeros(model.W.shape, dtype=np.float32)
        model.admm.target[:n] = u - alpha
        model.admm.fixed = u
        _restart_average(model)
        model.changed()
        return {"admm_iter": self.iterations, "primal": primal, "dual": dual, "converged": self.converged,
                "distinct_weights": int(np.unique(u[u != 0]).size)}


def _resize(arr: np.ndarray, shape) -> np.ndarray:
    """Rows made since the last iteration start with u = alpha = 0 (the
    array itself when nothing changed: they are large)."""
    if arr.shape == tuple(shape):
        return arr
    out = np.zeros(shape, dtype=np.float32)
    r, c = min(arr.shape[0], shape[0]), min(arr.shape[1], shape[1]) if arr.ndim == 2 else 0
    if r and c:
        out[:r, :c] = arr[:r, :c]
    return out


def _catch_up_all(model: SparseLinearModel) -> None:
    """Apply every row's pending pull (the kernels do it when a row is read)."""
    n = int(model.n_rows[0])
    if model.admm.pull >= 1.0 or n == 0:
        return
    now = model.steps[0]
    f = (model.admm.pull ** np.maximum(0.0, now - model.admm.stamp[:n]))[:, None]
    target = model.admm.target[:n]
    new = target + (model.W[:n] - target) * f.astype(np.float32)
    model.U[:n] += now * (new - model.W[:n])
    model.W[:n] = new
    model.admm.stamp[:n] = now


def _restart_average(model: SparseLinearModel) -> None:
    """Each w-step's output is the average over that step's pass only."""
    n = int(model.n_rows[0])
    if model.steps[0] > 0:
        model.W[:n] = model.W[:n] - (model.U[:n] / model.steps[0]).astype(np.float32)
    model.U[:n] = 0.0
    # `steps` is both the averaging clock and the lazy pull's clock, and
    # every row was just caught up: restart both at 0 together
    model.admm.stamp[:] = 0.0
    model.steps[0] = 0.0
