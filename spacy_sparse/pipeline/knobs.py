"""The settings a loaded sparse component may change at run time (stop margins, threads, min-update's k), and
the usage counts that say how many templates dynamic feature selection scored per token.

A mixin of SparsePipe (base.py): the settings live in the component's `cfg`, so they are saved with it.
"""
import threading
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from ..kernels.layout import stop_margins
from .batching import DocBatch, SegmentPool
from .settings import COMMON_DEFAULTS, MODES, check_margin, check_margin_decay, check_min_updates, check_threads


# tokens whose template counts may wait to be summed (_record_usage)
PENDING_TOKENS = 1 << 16


class Knobs:
    """Run-time settings and template usage for SparsePipe."""

    cfg: Dict
    _usage: Dict[str, int]
    # the last stop rule made: ((margin, decay, templates), thresholds)
    _made_rule: Optional[Tuple[Tuple[float, float, int], Optional[np.ndarray]]] = None
    _pool: SegmentPool
    _stats_lock: threading.Lock

    @property
    def margin(self) -> Optional[float]:
        """Stop adding templates once the best label leads by this much;
        None scores all templates (slowest, most accurate)."""
        return self.cfg["margin"]

    @margin.setter
    def margin(self, value: Optional[float]) -> None:
        self.cfg["margin"] = check_margin(value)

    @property
    def margin_decay(self) -> float:
        """The stop margin shrinks by this factor with every template scored:
        after template t (0-based) a lead of margin * margin_decay**t stops.
        1.0 keeps one margin for all templates (Strubell et al. 2015)."""
        return self.cfg["margin_decay"]

    @margin_decay.setter
    def margin_decay(self, value: float) -> None:
        self.cfg["margin_decay"] = check_margin_decay(value)

    def _stop_rule(self, n_templates: int) -> Tuple[float, Optional[np.ndarray]]:
        """(margin, thresholds) as the prediction kernels take them: margin
        -1 for none; thresholds per template, or None for one margin. The
        thresholds are made once per setting: a new array per call cost a
        short nlp(text) its making and a kernel argument check (the array is
        only read)."""
        margin = -1.0 if self.margin is None else self.margin
        key = (margin, self.margin_decay, n_templates)
        made = self._made_rule
        if made is None or made[0] != key:
            made = self._made_rule = (key, stop_margins(margin, self.margin_decay, n_templates))
        return margin, made[1]

    @property
    def min_updates(self) -> int:
        """Min-update pruning's k. The setting lives in cfg (it is saved with
        it); the model, whose averages it filters, reads it from here."""
        return self.cfg["min_updates"]

    @min_updates.setter
    def min_updates(self, value: int) -> None:
        self.cfg["min_updates"] = check_min_updates(value)
        if self.sparse is not None:
            self.sparse.min_updates = self.cfg["min_updates"]
            self.sparse.changed()

    @property
    def n_threads(self) -> int:
        """Threads that label one batch together (1: the calling thread)."""
        return self.cfg["n_threads"]

    @n_threads.setter
    def n_threads(self, value: int) -> None:
        self.cfg["n_threads"] = check_threads(value)

    def _over_segments(self, batch: DocBatch, run: Callable[[np.ndarray, np.ndarray], None]) -> None:
        """run(seg_off_part, seg_new_doc_part) over the batch's docs on this
        component's threads (batching.SegmentPool)."""
        self._pool.run(batch, self.n_threads, run)

    @property
    def objective(self) -> int:
        return MODES[self.cfg["mode"]]

    @property
    def adagrad(self) -> bool:
        return self.cfg.get("learner", COMMON_DEFAULTS["learner"]) == "adagrad"

    @property
    def usage(self) -> Dict[str, int]:
        """Tokens labelled, and the templates they scored, since reset_usage."""
        with self._stats_lock:
            self._fold_usage()
            return self._usage

    def reset_usage(self) -> None:
        with self._stats_lock:
            self._usage = {"tokens": 0, "templates": 0}
            self._pending: List[Tuple[np.ndarray, bool]] = []
            self._pending_tokens = 0

    def _record_usage(self, used: np.ndarray, scored_only: bool = False) -> None:
        """Count the templates each token scored (`used`); with scored_only, only tokens that scored any
        count (labels fixed in advance are not decisions). The arrays wait until the counts are read, or
        until PENDING_TOKENS of them do: summing them at every call cost an nlp(text) of a short text
        microseconds per component."""
        with self._stats_lock:
            self._pending.append((used, scored_only))
            self._pending_tokens += used.shape[0]
            if self._pending_tokens > PENDING_TOKENS:
                self._fold_usage()

    def _fold_usage(self) -> None:
        """Add the waiting arrays to the counts (the caller holds _stats_lock)."""
        for used, scored_only in self._pending:
            self._usage["tokens"] += int(np.count_nonzero(used)) if scored_only else used.shape[0]
            self._usage["templates"] += int(used.sum())
        self._pending = []
        self._pending_tokens = 0

    @property
    def templates_per_token(self) -> float:
        u = self.usage
        return u["templates"] / u["tokens"] if u["tokens"] else 0.0
