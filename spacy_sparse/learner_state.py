"""Per-method learner state a SparseLinearModel carries, each in a small object with its own interface, so a
method's code says what it changes (`model.groups.start_selection()`) instead of setting the model's fields.

The arrays are what the training kernels read and write (SparseLinearModel.learner_state); the objects only
give them a home and names.
"""
from dataclasses import dataclass, field
from typing import Optional

import numpy as np


@dataclass
class GroupScales:
    """Sparseptron (Martins et al. 2011): per template, w = scale * v, with |v|^2 kept up to date by the
    learner, so a group-lasso prox step costs O(#templates). While `selecting`, predictions use the current
    iterate (the selection phase does not average)."""

    scale: np.ndarray
    norm2: np.ndarray
    selecting: bool = False

    @classmethod
    def for_templates(cls, n_templates: int) -> "GroupScales":
        return cls(np.ones(n_templates, dtype=np.float32), np.zeros(n_templates, dtype=np.float64))

    def reset(self, templates: np.ndarray) -> None:
        """Templates whose features were all deleted start over unscaled."""
        self.norm2[templates] = 0.0
        self.scale[templates] = 1.0


@dataclass
class AdmmPull:
    """DC-ADMM (Suzuki & Nagata 2013): the w-step pulls each weight row toward `target` (u - alpha) by
    `pull` = 1 - step * rho per decision, lazily (`stamp`: the decision a row was last pulled at); `fixed`
    holds u, the discrete weights the model predicts with and saves once an iteration has run."""

    pull: float = 1.0
    target: np.ndarray = field(default_factory=lambda: np.zeros((1, 1), dtype=np.float32))
    stamp: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.float64))
    fixed: Optional[np.ndarray] = None

    @property
    def pulling(self) -> bool:
        return self.pull < 1.0

    def begin(self, pull: float, n_rows: int, n_labels: int, now: float) -> None:
        """Start the first w-step: pull toward 0 (u = alpha = 0) from decision `now` on."""
        self.pull = pull
        self.target = np.zeros((n_rows, n_labels), dtype=np.float32)
        self.stamp = np.full(n_rows, now, dtype=np.float64)
