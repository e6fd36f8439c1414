"""What every sparse component shares: the weight model, the lexicon, the
runtime margin, batching docs into arrays, serialization and pickling.

A task subclass says which kernel labels a batch, how gold labels are read
from examples, and how predictions are written onto docs.
"""
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
import srsly
from spacy import util
from spacy.attrs import ORTH, SENT_START
from spacy.errors import Errors
from spacy.strings import get_string_id
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples, validate_get_examples
from spacy.vocab import Vocab
from thinc.api import Model

from ..lexicon import Lexicon
from ..model import SparseLinearModel
from ..templates import apply_order, check_kind, parse_templates

from ..codes import FULL, PREFIX_ALL, PREFIX_TRUNCATED
from ..kernels.scoring import stop_margins

# Settings every sparse component has, with their defaults (each factory adds
# its own templates, scorer and task settings).
COMMON_DEFAULTS = {
    "margin": None,
    "margin_decay": 1.0,
    "train_margin": 30.0,
    "mode": "prefix",
    "learner": "adagrad",
    "learn_rate": 1.0,
    "min_updates": 1,
    "min_count": 1,
    "n_threads": 1,
}

MODES = {"prefix": PREFIX_ALL, "dynamic": PREFIX_TRUNCATED, "full": FULL}
LEARNERS = ("adagrad", "perceptron")


def _no_forward(model, X, is_train):
    raise NotImplementedError("spacy-sparse components score with numba kernels, not a thinc network")


def placeholder_model() -> Model:
    """A parameter-free thinc Model: spaCy's loop wants `pipe.model` to be a
    Model, but the weights of a sparse component live in SparseLinearModel."""
    return Model("sparse_linear", _no_forward)


# below this many tokens per thread, threads cost more than they save
MIN_TOKENS_PER_THREAD = 2000


def check_threads(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"n_threads must be a whole number >= 1, got {value!r}")
    return value


def check_min_updates(value: Any, what: str = "min_updates") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what} must be a whole number >= 1, got {value!r}")
    return value


def check_margin(value: Any, what: str = "margin") -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
        raise ValueError(f"{what} must be None or a non-negative number, got {value!r}")
    return float(value)


def check_margin_decay(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value <= 1.0:
        raise ValueError(f"margin_decay must be a number in (0, 1], got {value!r}")
    return float(value)


def ambiguity_classes(pairs: Iterable[Tuple[str, str]], min_count: int = 3,
                      min_share: float = 0.01) -> Dict[int, int]:
    """Lowercase form -> the set of labels it took, for forms seen at least
    `min_count` times; labels under `min_share` of a form's uses are noise.
    Rare forms get no class, so training sees what unknown words look like
    (a singleton's class would simply be its gold label)."""
    counts: Dict[str, Dict[str, int]] = {}
    for word, label in pairs:
        if label:
            per = counts.setdefault(word.lower(), {})
            per[label] = per.get(label, 0) + 1
    classes = {}
    for word, per in counts.items():
        total = sum(per.values())
        if total >= min_count:
            kept = sorted(lab for lab, c in per.items() if c >= min_share * total)
            classes[get_string_id(word)] = get_string_id("amb:" + "|".join(kept))
    return classes


# A training kernel gets room for every feature its batch could add: tokens x
# decisions x templates new rows of all labels, 16 bytes a cell (weights,
# averaging sums, AdaGrad sums). A batch whose room would pass this many
# cells (about 2 GB) is cut into runs of whole docs. The learner is online,
# so a tagger or NER learns exactly what one pass over the whole batch
# teaches (the parser draws its per-batch random choices per run).
# spacy train's batches stay far below it.
MAX_TRAIN_CELLS = 128_000_000


def _token_chunks(examples: List[Example], max_tokens: int) -> List[List[Example]]:
    """Consecutive runs of examples with at most max_tokens predicted tokens
    each (a longer example makes a run of its own)."""
    parts: List[List[Example]] = [[]]
    n = 0
    for eg in examples:
        size = len(eg.predicted)
        if parts[-1] and n + size > max_tokens:
            parts.append([])
            n = 0
        parts[-1].append(eg)
        n += size
    return parts


class DocBatch:
    """Tokens of several docs as flat arrays (the kernels' input).

    `doc_off` delimits docs; `seg_off` delimits the segments the kernels
    label one at a time: the sentences of a doc whose sentence boundaries are
    set (by a senter, a parser, the user or gold preprocessing), else the
    whole doc. Context windows and label history do not cross a segment edge.
    """

    def __init__(self, docs: Sequence[Doc], lexicon: Lexicon):
        lengths = np.array([len(doc) for doc in docs], dtype=np.int64)
        self.doc_off = np.zeros(len(docs) + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.doc_off[1:])
        self.n_tokens = int(self.doc_off[-1])
        # one (ORTH, SENT_START) table for the batch, so sentence starts are
        # found in one vectorized pass, not per doc
        cols = [np.zeros((0, 2), dtype=np.uint64)]
        for doc in docs:
            if doc.has_annotation("SENT_START"):
                cols.append(doc.to_array([ORTH, SENT_START]).reshape(-1, 2))
            elif len(doc):
                unset = np.zeros((len(doc), 2), dtype=np.uint64)
                unset[:, 0] = doc.to_array(ORTH)
                cols.append(unset)
        table = np.concatenate(cols)
        self.lex_rows, self.lex, self.lex_generation = lexicon.lookup(np.ascontiguousarray(table[:, 0]))
        doc_starts = self.doc_off[:-1][lengths > 0]
        starts = table[:, 1] == 1
        starts[doc_starts] = True
        self.seg_off = np.append(np.flatnonzero(starts), self.n_tokens).astype(np.int64)
        self.seg_new_doc = np.zeros(self.seg_off.shape[0] - 1, dtype=np.uint8)
        self.seg_new_doc[np.searchsorted(self.seg_off[:-1], doc_starts)] = 1


class SparsePipe(TrainablePipe):
    """Base of the sparse components (not registered itself)."""

    # what the task's kernel reads: offsets ("sequence") or parser slots ("state")
    template_kind = "sequence"
    # decisions a token takes part in (the parser: shifted and popped)
    decisions_per_token = 1
    # set by the sparsity callback while it trains this component: whether
    # every method has reached its last phase (reported as `sparse_compressed`)
    compression_done: Optional[bool] = None

    def __init__(
        self,
        vocab: Vocab,
        name: str,
        *,
        templates: List[str],
        margin: Optional[float],
        train_margin: float,
        mode: str,
        scorer: Optional[Callable],
        margin_decay: float = 1.0,
        learner: str = COMMON_DEFAULTS["learner"],
        learn_rate: float = 1.0,
        min_updates: int = 1,
        min_count: int = 1,
        n_threads: int = 1,
        **extra_cfg: Any,
    ):
        check_kind(parse_templates(templates), self.template_kind, f"{type(self).__name__}")
        if mode not in MODES:
            raise ValueError(f"mode must be one of {sorted(MODES)}, got {mode!r}")
        if learner not in LEARNERS:
            raise ValueError(f"learner must be one of {LEARNERS}, got {learner!r}")
        if isinstance(learn_rate, bool) or not isinstance(learn_rate, (int, float)) or not learn_rate > 0:
            raise ValueError(f"learn_rate must be a positive number, got {learn_rate!r}")
        self.vocab = vocab
        self.name = name
        self.model = placeholder_model()
        self.scorer = scorer
        self.cfg: Dict[str, Any] = {
            "templates": list(templates),
            "margin": check_margin(margin),
            "margin_decay": check_margin_decay(margin_decay),
            "train_margin": check_margin(train_margin, "train_margin"),
            "mode": mode,
            "learner": learner,
            "learn_rate": float(learn_rate),
            "min_updates": check_min_updates(min_updates),
            "min_count": check_min_updates(min_count, "min_count"),
            "n_threads": check_threads(n_threads),
            "labels": [],
            **extra_cfg,
        }
        if self.cfg["train_margin"] is None:
            raise ValueError("train_margin must be a non-negative number")
        self.sparse: Optional[SparseLinearModel] = None
        self.lexicon = Lexicon(vocab)
        self._stats_lock = threading.Lock()
        self._pool: Optional[ThreadPoolExecutor] = None
        self.reset_usage()

    # ---- runtime knobs ---------------------------------------------------------
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
        -1 for none; thresholds per template, or None for one margin."""
        margin = -1.0 if self.margin is None else self.margin
        return margin, stop_margins(margin, self.margin_decay, n_templates)

    @property
    def n_threads(self) -> int:
        """Threads that label one batch together (1: the calling thread)."""
        return self.cfg["n_threads"]

    @n_threads.setter
    def n_threads(self, value: int) -> None:
        self.cfg["n_threads"] = check_threads(value)

    def _over_segments(self, batch: DocBatch, run: Callable[[np.ndarray, np.ndarray], None]) -> None:
        """Call run(seg_off_part, seg_new_doc_part) on contiguous runs of
        whole docs, one per thread. Docs are independent and each part writes
        its own tokens, so the result does not depend on the number of
        threads."""
        seg_off, new_doc = batch.seg_off, batch.seg_new_doc
        doc_starts = np.flatnonzero(new_doc)
        n_threads = min(self.n_threads, len(doc_starts))
        if n_threads <= 1 or seg_off[-1] < MIN_TOKENS_PER_THREAD * 2:
            run(seg_off, new_doc)
            return
        if self._pool is None or self._pool._max_workers != n_threads:
            self._pool = ThreadPoolExecutor(max_workers=n_threads, thread_name_prefix="spacy-sparse")
        # cut at the doc starts nearest to equal shares of tokens
        targets = np.linspace(0, seg_off[-1], n_threads + 1)[1:-1]
        at = doc_starts[np.searchsorted(seg_off[doc_starts], targets).clip(0, len(doc_starts) - 1)]
        cuts = np.unique(np.concatenate([[0], at, [len(seg_off) - 1]]))
        parts = [(seg_off[a:b + 1], new_doc[a:b]) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
        for future in [self._pool.submit(run, *part) for part in parts]:
            future.result()

    @property
    def objective(self) -> int:
        return MODES[self.cfg["mode"]]

    @property
    def adagrad(self) -> bool:
        return self.cfg.get("learner", COMMON_DEFAULTS["learner"]) == "adagrad"

    def reset_usage(self) -> None:
        self.usage = {"tokens": 0, "templates": 0}

    def _record_usage(self, used: np.ndarray) -> None:
        with self._stats_lock:
            self.usage["tokens"] += int(used.shape[0])
            self.usage["templates"] += int(used.sum())

    @property
    def templates_per_token(self) -> float:
        u = self.usage
        return u["templates"] / u["tokens"] if u["tokens"] else 0.0

    # ---- labels ------------------------------------------------------------------
    @property
    def labels(self) -> Tuple[str, ...]:
        if self.sparse is not None:
            return tuple(self.sparse.labels)
        return tuple(self.cfg["labels"])

    @property
    def label_data(self) -> List[str]:
        return list(self.labels)

    def add_label(self, label: str) -> int:
        if not isinstance(label, str) or not label:
            raise ValueError(Errors.E187)
        if label in self.labels:
            return 0
        if self.sparse is not None:
            raise ValueError(
                f"Cannot add label {label!r} to the trained component {self.name!r}: "
                "re-initialize it with the new label set"
            )
        self.cfg["labels"].append(label)
        return 1

    def _require_model(self) -> SparseLinearModel:
        if self.sparse is None:
            raise ValueError(
                f"The component {self.name!r} has no weights yet: train it, call "
                "nlp.initialize(), or load a trained pipeline"
            )
        return self.sparse

    def _build_model(self, labels: Sequence[str], order: Optional[Any],
                     classes: Optional[Dict[int, int]] = None) -> None:
        templates = list(self.cfg["templates"])
        if order is not None:
            if isinstance(order, (str, Path)):
                order = srsly.read_json(util.ensure_path(order))
            if not isinstance(order, list) or not all(isinstance(x, str) for x in order):
                raise ValueError("A template ordering must be a JSON list of template names")
            templates = apply_order(templates, order)
            self.cfg["templates"] = templates
        if not labels:
            raise ValueError(f"No labels for {self.name!r}: the training data has no annotation it could learn")
        self.cfg["labels"] = list(labels)
        self.sparse = SparseLinearModel(templates, labels)
        self.sparse.min_updates = self.cfg.get("min_updates", 1)
        self.sparse.lex_classes = dict(classes or {})
        self.lexicon.set_classes(self.sparse.lex_classes)
        self._labels_changed()

    def _labels_changed(self) -> None:
        """Hook: a subclass caches label-derived arrays here."""

    # ---- training -----------------------------------------------------------------
    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]],
        *,
        nlp=None,
        labels: Optional[Sequence[str]] = None,
        order: Optional[Any] = None,
    ) -> None:
        """Collect labels (or take `labels`, e.g. from `spacy init labels`),
        put templates in `order` (an ordering file path or list) and make an
        empty model."""
        validate_get_examples(get_examples, f"{type(self).__name__}.initialize")
        if labels is None:
            labels = self._labels_from(get_examples())
        pairs = self._word_labels(get_examples())
        self._build_model(list(labels), order, ambiguity_classes(pairs))
        if self.cfg.get("min_count", 1) > 1:
            self._keep_frequent_features(list(get_examples()), self.cfg["min_count"])

    def _keep_frequent_features(self, examples: List[Example], min_count: int) -> None:
        """Rare-feature pruning, the baseline of min-update: count every
        feature of the gold decisions of the training data, keep those seen
        at least min_count times, and let training make no others."""
        raise ValueError(f"min_count > 1 (rare-feature pruning) is not implemented for {type(self).__name__}")

    def refit(self, templates: Sequence[str]) -> None:
        """Start over with fresh weights on `templates` (same labels and
        ambiguity classes): the sparseptron's debiasing refit."""
        model = self._require_model()
        if not templates:
            raise ValueError(f"Cannot refit {self.name!r} on no templates")
        self.cfg["templates"] = list(templates)
        self._build_model(self._build_labels(), None, model.lex_classes)

    def _build_labels(self) -> List[str]:
        """What _build_model takes to remake the current model's labels."""
        return list(self._require_model().labels)

    def _labels_from(self, examples: Iterable[Example]) -> List[str]:
        raise NotImplementedError

    def _word_labels(self, examples: Iterable[Example]) -> Iterable[Tuple[str, str]]:
        """(word, label) pairs of the training data, for ambiguity classes."""
        return ()

    def update(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd=None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        """One online pass of the component's learner over the batch; the
        loss is the number of wrong decisions. `drop` and `sgd` are accepted
        for spaCy's loop and unused: the learner is its own optimizer."""
        if losses is None:
            losses = {}
        losses.setdefault(self.name, 0.0)
        examples = list(examples)
        validate_examples(examples, f"{type(self).__name__}.update")
        model = self._require_model()
        if not examples:
            return losses
        model.min_updates = self.cfg.get("min_updates", 1)
        cells = self.decisions_per_token * len(model.templates) * max(1, model.n_labels)
        for part in _token_chunks(examples, max(1, MAX_TRAIN_CELLS // cells)):
            losses[self.name] += float(self._train_batch(model, part))
        model.instances += len(examples)
        model.changed()
        return losses

    def _train_batch(self, model: SparseLinearModel, examples: List[Example]) -> int:
        raise NotImplementedError

    def finish_update(self, sgd=None) -> None:
        """Nothing to do: `update` already applied the learner's step."""

    def score(self, examples: Iterable[Example], **kwargs: Any) -> Dict[str, Any]:
        """The component's scorer, plus `sparse_compressed` while a sparsity
        recipe trains it (see callbacks.SparsityCallback.finished)."""
        scores = super().score(examples, **kwargs)
        if self.compression_done is not None:
            scores["sparse_compressed"] = float(self.compression_done)
        return scores

    def get_loss(self, examples, scores):
        raise NotImplementedError("Sparse components compute their loss inside update()")

    # ---- serialization ---------------------------------------------------------------
    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        data: Dict[str, Any] = {"cfg": srsly.json_dumps(self.cfg)}
        if self.sparse is not None and "model" not in exclude:
            data["model"] = self.sparse.to_bytes()
        return srsly.msgpack_dumps(data)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "SparsePipe":
        try:
            data = srsly.msgpack_loads(bytes_data)
        except Exception as err:
            raise ValueError(f"Cannot load {self.name!r}: not spacy-sparse component bytes ({err})") from None
        if not isinstance(data, dict) or "cfg" not in data:
            raise ValueError(f"Cannot load {self.name!r}: not spacy-sparse component bytes")
        self._load_cfg(srsly.json_loads(data["cfg"]))
        if "model" in data and "model" not in exclude:
            self._load_model(data["model"])
        return self

    def to_disk(self, path, *, exclude: Iterable[str] = tuple()) -> None:
        path = util.ensure_path(path)
        serializers = {"cfg": lambda p: srsly.write_json(p, self.cfg)}
        if self.sparse is not None:
            serializers["model"] = lambda p: p.write_bytes(self.sparse.to_bytes())
        util.to_disk(path, serializers, exclude)

    def from_disk(self, path, *, exclude: Iterable[str] = tuple()) -> "SparsePipe":
        path = util.ensure_path(path)

        def load_cfg(p: Path) -> None:
            try:
                cfg = srsly.read_json(p)
            except Exception as err:
                raise ValueError(f"Cannot read the config of {self.name!r} at {p}: {err}") from None
            self._load_cfg(cfg)

        def load_model(p: Path) -> None:
            if p.exists():
                self._load_model(p.read_bytes(), where=str(p))

        util.from_disk(path, {"cfg": load_cfg, "model": load_model}, exclude)
        return self

    def _load_cfg(self, cfg: Any) -> None:
        if not isinstance(cfg, dict):
            raise ValueError(f"Cannot load {self.name!r}: its cfg is not an object")
        cfg = dict(cfg)
        if "margin" in cfg:
            cfg["margin"] = check_margin(cfg["margin"])
        if "margin_decay" in cfg:
            cfg["margin_decay"] = check_margin_decay(cfg["margin_decay"])
        self.cfg.update(cfg)

    def _load_model(self, data: bytes, where: str = "bytes") -> None:
        try:
            model = SparseLinearModel.from_bytes(data)
        except ValueError as err:
            raise ValueError(f"Cannot load the weights of {self.name!r} from {where}: {err}") from None
        self.sparse = model
        self.lexicon.set_classes(model.lex_classes)
        self.cfg["templates"] = model.template_names
        self.cfg["labels"] = list(model.labels)
        self._labels_changed()

    # ---- pickling (nlp objects are pickled for multiprocessing) -------------------------
    def __reduce__(self):
        return (_unpickle_pipe, (type(self), self.vocab, self.name, self.scorer, self.to_bytes()))


def _unpickle_pipe(cls, vocab, name, scorer, data):
    cfg = srsly.json_loads(srsly.msgpack_loads(data)["cfg"])
    kwargs = {k: v for k, v in cfg.items() if k != "labels"}
    pipe = cls(vocab, name, scorer=scorer, **kwargs)
    pipe.from_bytes(data)
    return pipe
