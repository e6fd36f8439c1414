"""Template orders (Strubell et al. 2015, §4.5 and Appendix B), all written
as the same ordering file (a JSON list of template names):

- wrapper: forward selection by dev accuracy: starting from no templates,
  try each remaining template appended to the order so far, train briefly,
  keep the one that helps the dev score most, repeat. Made practical by
  training on a subsample for a few epochs, and by searching only the first
  `max_steps` positions (the rest keep the set's default order);
- group lasso: the order in which templates enter the regularization path:
  a sparseptron run whose budget shrinks from all templates to one; a
  template ranks by the last prox step it survived;
- GOMP: stagewise, add the template whose one-hot features best fit the
  residual of a softmax model on the templates chosen so far, with the
  regularized covariance of Appendix B (lambda_i = columns_i ** alpha),
  then refit;
- weights: read off a model trained on all templates, largest group norm
  (the L2 norm of all the template's weights) first: the group lasso's
  criterion without its path, and the only one of these that costs no
  training beyond the model a recipe makes anyway.
"""
import math
import random
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence

import numpy as np
import spacy
from spacy.training import Example
from tqdm import tqdm

from ..pipeline.settings import ACCURACY_KEYS
from ..lexicon import ambiguity_classes
from ..model import SparseLinearModel
from ..pipeline.base import SparsePipe


@dataclass(frozen=True)
class ProbeSettings:
    """How every ordering method trains its probe models: the component
    (`factory` with `config` over the candidate templates), the size of the
    training sample, its seed, a word-cluster table, and where progress goes."""

    factory: str = "sparse_tagger"
    config: Optional[dict] = None
    lang: str = "en"
    train_words: int = 20000
    seed: int = 0
    clusters: Optional[str] = None
    log: Callable[[str], None] = print


def _take_words(examples: List[Example], n_words: int) -> List[Example]:
    out, total = [], 0
    for eg in examples:
        if n_words and total >= n_words:
            break
        out.append(eg)
        total += len(eg.reference)
    return out


def wrapper_order(
    train: List[Example],
    dev: List[Example],
    templates: Sequence[str],
    probe_settings: ProbeSettings = ProbeSettings(),
    *,
    dev_words: int = 10000,
    epochs: int = 2,
    max_steps: int = 0,
) -> List[str]:
    """Return `templates` reordered by forward selection on dev accuracy."""
    factory, seed = probe_settings.factory, probe_settings.seed
    train = _sample(train, probe_settings.train_words, seed)
    dev = _take_words(list(dev), dev_words)
    nlp, probe, cfg, labels, classes = _probe(train, templates, probe_settings)
    lexicon = probe.lexicon
    dev_docs = [eg.predicted for eg in dev]

    def score(candidate: List[str]) -> float:
        pipe = nlp.create_pipe(factory, config={**cfg, "templates": candidate})
        pipe.lexicon = lexicon
        pipe._build_model(labels, None, classes)
        order = list(range(len(train)))
        for epoch in range(epochs):
            random.Random(seed + epoch).shuffle(order)
            for i in range(0, len(order), 64):
                pipe.update([train[j] for j in order[i:i + 64]])
        pipe.set_annotations(dev_docs, pipe.predict(dev_docs))
        scores = pipe.score([Example(d, eg.reference) for d, eg in zip(dev_docs, dev)])
        return next(float(scores[k]) for k in ACCURACY_KEYS if scores.get(k) is not None)

    remaining = list(templates)
    chosen: List[str] = []
    steps = len(remaining) if max_steps <= 0 else min(max_steps, len(remaining))
    for step in range(steps):
        results = [(score(chosen + [t]), -i, t) for i, t in enumerate(tqdm(remaining, leave=False, desc=f"position {step + 1}"))]
        best_score, _, best = max(results)
        chosen.append(best)
        remaining.remove(best)
        probe_settings.log(f"{step + 1:>3} {best:<45} dev {best_score:.4f}")
    return chosen + remaining


def _sample(train: Sequence[Example], n_words: int, seed: int) -> List[Example]:
    rng = random.Random(seed)
    train = list(train)
    rng.shuffle(train)
    return _take_words(train, n_words)


def _probe(train: List[Example], templates: Sequence[str], settings: ProbeSettings):
    """A pipe of `factory` over `templates` with the labels and ambiguity
    classes of `train` and an empty model (the examples' strings live in
    their vocab: the probe shares it)."""
    if not train:
        raise ValueError("No training examples to learn a template order from")
    nlp = spacy.blank(settings.lang, vocab=train[0].predicted.vocab)
    cfg = {"mode": "full", "train_margin": 0.0, **(settings.config or {})}
    probe: SparsePipe = nlp.add_pipe(settings.factory, name="probe", config={**cfg, "templates": list(templates)})
    labels = probe._labels_from(train)
    classes = ambiguity_classes(probe._word_labels(train))
    probe._build_model(labels, None, classes)
    probe.use_clusters(settings.clusters, settings.lang)  # candidates share the probe's lexicon, and so its clusters
    return nlp, probe, cfg, labels, classes


def group_lasso_order(
    train: List[Example],
    templates: Sequence[str],
    probe_settings: ProbeSettings = ProbeSettings(),
    *,
    epochs: int = 2,
    every: Optional[int] = None,
    group_weight: str = "log2",
) -> List[str]:
    """The group-lasso path order: sparseptron prox steps every `every`
    examples (default: enough for two steps per template) with a budget
    falling linearly from all templates to one;
    templates that stay nonzero longest come first (ties: larger |w_m|/d_m)."""
    from .sparseptron import SparseptronSettings, group_weights, prox_step, start_selection, template_norms

    seed = probe_settings.seed
    train = _sample(train, probe_settings.train_words, seed)
    _, probe, _, _, _ = _probe(train, templates, probe_settings)
    model = probe._require_model()
    start_selection(model)
    n_tpl = len(model.templates)
    if every is None:
        every = max(1, epochs * len(train) // (2 * n_tpl))
    total = max(1, math.ceil(epochs * len(train) / every))
    last_alive = np.full(n_tpl, -1, dtype=np.int64)
    step, since = 0, 0
    order = list(range(len(train)))
    for epoch in range(epochs):
        random.Random(seed + epoch).shuffle(order)
        size = min(16, every)
        for i in range(0, len(order), size):
            batch = [train[j] for j in order[i:i + size]]
            probe.update(batch)
            since += len(batch)
            if since >= every:
                since = 0
                budget = max(1, round(n_tpl * (1 - (step + 1) / total)))
                prox_step(model, SparseptronSettings(budget=budget, every=every, group_weight=group_weight))
                last_alive[template_norms(model) > 0] = step
                step += 1
    ratio = template_norms(model) / group_weights(model.tab_count, group_weight)
    ranked = sorted(range(n_tpl), key=lambda t: (-last_alive[t], -ratio[t], t))
    names = model.template_names
    probe_settings.log(f"group lasso: {step} prox steps; first templates: {', '.join(names[t] for t in ranked[:8])}")
    return [names[t] for t in ranked]


class _OneHot:
    """One template's features as a one-hot design matrix X (tokens x
    features), kept as each token's feature id; X' R is a sum per feature."""

    def __init__(self, keys: np.ndarray):
        _, ids = np.unique(keys, return_inverse=True)
        self.ids = ids.reshape(-1)
        self.order = np.argsort(self.ids, kind="stable")
        self.counts = np.bincount(self.ids).astype(np.float64)
        self.starts = np.concatenate([[0], np.cumsum(self.counts)[:-1]]).astype(np.int64)

    @property
    def columns(self) -> int:
        return self.counts.shape[0]

    def sums(self, r: np.ndarray) -> np.ndarray:
        """X' r: the rows of r summed per feature."""
        return np.add.reduceat(r[self.order], self.starts, axis=0)


def gomp_order(
    train: List[Example],
    templates: Sequence[str],
    probe_settings: ProbeSettings = ProbeSettings(),
    *,
    alpha: float = 0.4,
    refit_passes: int = 2,
    max_steps: int = 0,
) -> List[str]:
    """Regularized group OMP (Strubell Appendix B, Eq. 4) on the gold
    features of a training sample. Templates are one-hot, so X_i'X_i is the
    diagonal of feature counts c and Eq. 4 is sum_f |X_f' r|^2 / (c_f + lambda_i);
    r is the residual Y - softmax(S) of a model fitted stagewise: the new
    template's weights by the same regularized least squares, then
    `refit_passes` backfitting passes over every chosen template."""
    if not 0 <= alpha <= 1:
        raise ValueError(f"GOMP alpha must be in [0, 1] (the paper uses 0.25-0.5), got {alpha}")
    train = _sample(train, probe_settings.train_words, probe_settings.seed)
    _, probe, _, _, _ = _probe(train, templates, probe_settings)
    keys, gold = probe.gold_feature_keys(train)
    keep = gold >= 0
    keys, gold = keys[keep], gold[keep]
    n, n_labels = gold.shape[0], probe._require_model().n_labels
    if n == 0:
        raise ValueError("The training sample has no gold labels to fit")
    target = np.zeros((n, n_labels), dtype=np.float64)
    target[np.arange(n), gold] = 1.0
    groups = [_OneHot(keys[:, t]) for t in range(keys.shape[1])]
    # (X_i'X_i + lambda_i I) is diagonal: feature counts + columns ** alpha
    denom = [g.counts + g.columns ** alpha for g in groups]
    scores = np.zeros((n, n_labels))

    def residual() -> np.ndarray:
        z = np.exp(scores - scores.max(axis=1, keepdims=True))
        return target - z / z.sum(axis=1, keepdims=True)

    def fit(t: int) -> None:
        delta = groups[t].sums(residual()) / denom[t][:, None]
        scores[:] += delta[groups[t].ids]

    names = list(templates)
    remaining, chosen = list(range(len(names))), []
    steps = len(names) if max_steps <= 0 else min(max_steps, len(names))
    gains = {}
    for step in range(steps):
        r = residual()
        gains = {t: float(np.sum(groups[t].sums(r) ** 2 / denom[t][:, None])) for t in remaining}
        best = max(remaining, key=lambda t: (gains[t], -t))
        chosen.append(best)
        remaining.remove(best)
        for _ in range(refit_passes):
            for t in chosen:
                fit(t)
        acc = float(np.mean(scores.argmax(axis=1) == gold))
        probe_settings.log(f"{step + 1:>3} {names[best]:<45} train accuracy {acc:.4f}")
    rest = sorted(remaining, key=lambda t: (-gains.get(t, 0.0), t))
    return [names[t] for t in chosen + rest]


def weight_norm_order(model: SparseLinearModel) -> List[str]:
    """The model's templates by the L2 norm of their weights, largest first
    (ties keep the model's order)."""
    ptr, _, values = model.compact()
    n = int(model.n_rows[0])
    per_row = np.bincount(np.repeat(np.arange(n), np.diff(ptr[:n + 1])), weights=values.astype(np.float64) ** 2,
                          minlength=n)
    norms = np.bincount(model.row_tpl[:n], weights=per_row, minlength=len(model.templates))
    return [model.template_names[i] for i in np.argsort(-norms, kind="stable")]
