"""What every sparse component shares, as spaCy sees it: the weight model,
the lexicon, labels and training (settings and their checks: settings.py;
the settings a loaded component changes at run time: knobs.py; saving,
loading and pickling: storage.py; docs as arrays and threads: batching.py).

A task subclass says which kernel labels a batch, how gold labels are read
from examples, and how predictions are written onto docs.
"""
import threading
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np
import srsly
from spacy import util
from spacy.errors import Errors
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples, validate_get_examples
from spacy.vocab import Vocab
from thinc.api import Model

from .. import clusters as word_clusters
from .. import codec
from ..lexicon import Lexicon, ambiguity_classes
from ..model import SparseLinearModel
from ..templates import apply_order, check_kind, parse_templates
from .batching import MAX_TRAIN_CELLS, DocBatch, DocColumns, SegmentPool, token_chunks
from .dropout import type_counts, word_dropout
from .settings import COMMON_DEFAULTS, check_common
from .gold import GoldMemo
from .knobs import Knobs
from .storage import StoredPipe
from .views import Views, visible_examples


class Predictions(tuple):
    """A task's predictions (what its _predict returns) and the views of the
    docs they were made on."""

    views: Optional[Views] = None

    def __new__(cls, values: tuple, views: Views) -> "Predictions":
        self = super().__new__(cls, values)
        self.views = views
        return self


def _no_forward(model, X, is_train):
    raise NotImplementedError("spacy-sparse components score with numba kernels, not a thinc network")


def placeholder_model() -> Model:
    """A parameter-free thinc Model: spaCy's loop wants `pipe.model` to be a
    Model, but the weights of a sparse component live in SparseLinearModel."""
    return Model("sparse_linear", _no_forward)


# how many updates old the averages spaCy's annotating pass predicts with may be (SparsePipe.predict)
ANNOTATE_STALE_STEPS = 10


class SparsePipe(Knobs, StoredPipe, TrainablePipe):
    """Base of the sparse components (not registered itself)."""

    # what the task's kernel reads: offsets ("sequence") or parser slots ("state")
    template_kind = "sequence"
    # decisions a token takes part in (the parser: shifted and popped)
    decisions_per_token = 1
    # the annotation set_annotations writes (a key of views.WRITE_BACK), so whitespace tokens get theirs
    writes = "tag"
    # set by the sparsity callback while it trains this component: whether
    # every method has reached its last phase (reported as `sparse_compressed`)
    compression_done: Optional[bool] = None

    def __init__(self, vocab: Vocab, name: str, *, templates: List[str], scorer: Optional[Callable],
                 **settings: Any):
        """`settings`: the common ones (settings.COMMON_DEFAULTS fills those not given) and the task's own,
        all kept in `cfg`; the factories (factories.py) say which a config may hold."""
        check_kind(parse_templates(templates), self.template_kind, f"{type(self).__name__}")
        self.vocab = vocab
        self.name = name
        self.model = placeholder_model()
        self.scorer = scorer
        common = {key: settings.pop(key, default) for key, default in COMMON_DEFAULTS.items()}
        # this key order is the order of the cfg a model file holds
        self.cfg: Dict[str, Any] = check_common({"templates": list(templates), **common, "labels": [], **settings})
        self.sparse: Optional[SparseLinearModel] = None
        self.lexicon = Lexicon(vocab)
        # lowercase forms of the training data and their counts (initialize), for word_dropout
        self._type_keys, self._type_counts = np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.float64)
        self._stats_lock = threading.Lock()
        self._pool = SegmentPool()
        # the docs of the last update, held until the next predict: spaCy's
        # annotating pass labels exactly these (see predict)
        self._just_trained: Optional[List[Doc]] = None
        # gold values per training example, from epoch to epoch (gold.py)
        self._gold_memo = GoldMemo()
        self.reset_usage()

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
        if self.sparse is None:
            self.cfg["labels"].append(label)
            return 1
        # a model already made grows new outputs with zero weights, as spaCy's
        # built-in components do; predictions wait while the arrays change
        with self.sparse.guard.writing():
            self.sparse.add_labels(self._outputs_of(label))
            self._labels_changed()
            self.cfg["labels"] = list(self.labels)
        return 1

    def _outputs_of(self, label: str) -> List[str]:
        """The model labels (outputs) one component label stands for."""
        return [label]

    def _labels_in(self, examples: List[Example]) -> Iterable[str]:
        """Labels of the references that `update` adds when it meets them
        (spaCy's NER and parser do; its tagger does not: none here)."""
        return ()

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
        templates = self._arrange_templates(templates)
        self.cfg["templates"] = templates
        if not labels:
            raise ValueError(f"No labels for {self.name!r}: the training data has no annotation it could learn")
        self.cfg["labels"] = list(labels)
        self.sparse = SparseLinearModel(templates, labels)
        self.sparse.min_updates = self.min_updates
        self.sparse.lex_classes = dict(classes or {})
        self.lexicon.set_classes(self.sparse.lex_classes)
        # a rebuilt model (refit, new templates) keeps the clusters it was given
        self.sparse.lex_clusters = self.lexicon.clusters
        self._labels_changed()

    def use_clusters(self, source: Optional[Union[str, Path]], lang: str = "en",
                     min_logprob: Optional[float] = None) -> None:
        """Give the model a word-cluster table (clusters.py: a shipped name,
        "lookups" or a path; with `min_logprob`, its common forms only:
        ClusterTable.common), or check that templates reading `clu*` atoms
        are not left without one."""
        model = self._require_model()
        reads = word_clusters.atoms_read(model.templates)
        if source is None:
            if reads and not model.lex_clusters:
                raise ValueError(f"{self.name!r} has templates reading word clusters ({', '.join(reads)}) but no "
                                 "clusters: set clusters in [initialize.components." + self.name + "] "
                                 f"(e.g. \"{next(iter(word_clusters.SHIPPED))}\")")
            return
        table = word_clusters.resolve(source, lang)
        if min_logprob is not None:
            table = table.common(min_logprob)
        if not table:
            raise ValueError(f"clusters {str(source)!r} hold no word")
        for atom, held in ((word_clusters.CASEFREQ, table.has_stats), (word_clusters.WNPOS, table.has_senses)):
            if atom in reads and not held:
                raise ValueError(f"{self.name!r} has templates reading {atom} but clusters {str(source)!r} hold no "
                                 f"{atom} codes (\"en_brown_1000\" and \"lookups\" have them)")
        table = table.keeping(reads)  # a model keeps only what its templates read
        model.lex_clusters = table
        self.lexicon.set_clusters(table)

    def _labels_changed(self) -> None:
        """Hook: a subclass caches label-derived arrays here."""

    def _arrange_templates(self, templates: List[str]) -> List[str]:
        """Hook: the order a subclass's kernel needs its templates in."""
        return templates

    # ---- training -----------------------------------------------------------------
    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]],
        *,
        nlp=None,
        labels: Optional[Sequence[str]] = None,
        order: Optional[Any] = None,
        clusters: Optional[Union[str, Path]] = None,
        clusters_min_logprob: Optional[float] = None,
        features: Optional[Union[str, Path]] = None,
    ) -> None:
        """Collect labels (or take `labels`, e.g. from `spacy init labels`),
        put templates in `order` (an ordering file path or list) and make an
        empty model, with word `clusters` if its templates read them (only
        the forms more common than `clusters_min_logprob`, if given). With
        `features` (a saved pipeline), learn only the features its component
        of this name has (use_features)."""
        validate_get_examples(get_examples, f"{type(self).__name__}.initialize")
        if labels is None:
            # labels given with add_label stay, as in spaCy's components
            labels = sorted(set(self.cfg["labels"]) | set(self._labels_from(get_examples())))
        pairs = self._word_labels(get_examples())
        self._build_model(list(labels), order, ambiguity_classes(pairs))
        self.use_clusters(clusters, nlp.lang if nlp is not None else self.vocab.lang, clusters_min_logprob)
        if self.cfg.get("min_count", 1) > 1:
            self._keep_frequent_features(list(get_examples()), self.cfg["min_count"])
        self.use_features(features)
        self._count_types(get_examples)

    def use_features(self, pipeline: Optional[Union[str, Path]]) -> None:
        """Learn only the features that this component of a saved pipeline
        has (zero weights to start): training again on what pruning kept (QT
        with L0 terms, min-update) lets the kept weights make up for the
        dropped ones, as the sparseptron's refit does for templates."""
        if pipeline is None:
            return
        path = Path(pipeline) / self.name / "model"
        try:
            saved = SparseLinearModel.from_bytes(codec.read_model_file(path))
        except ValueError as err:
            raise ValueError(f"Cannot take the features of {self.name!r} from {pipeline}: {err}") from None
        model = self._require_model()
        model.preset_features(saved.feature_keys(model.template_names), saved.key_mix)

    def _count_types(self, get_examples: Callable[[], Iterable[Example]]) -> None:
        """Count the training data's word types, which word_dropout needs."""
        if self.cfg.get("word_dropout", 0.0) > 0:
            self._type_keys, self._type_counts = type_counts(get_examples())

    def _learning(self, model: SparseLinearModel) -> Tuple[Any, ...]:
        """What a training kernel's learner reads (kernels/structs.Learner): the feature tables, the weights
        and per-feature state, the settings and the decision count."""
        return (model.tables(), model.learner_state(), model.learner_params(self.adagrad, self.cfg["learn_rate"]),
                model.steps)

    def _word_dropout(self, model: SparseLinearModel, batch: DocBatch) -> Tuple[np.ndarray, np.ndarray]:
        """The batch's (lex_rows, lex) as training reads them: with some
        words as unknown ones when the component has a word dropout (and
        type counts from initialize), else as they are."""
        alpha = self.cfg.get("word_dropout", 0.0)
        if alpha <= 0 or not len(self._type_keys):
            return batch.lex_rows, batch.lex
        # seeded by the update count: the same run drops the same words
        rng = np.random.default_rng(int(model.steps[0]))
        return word_dropout(batch.lex_rows, batch.lex, self._type_keys, self._type_counts, alpha, rng)

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
        for label in self._labels_in(examples):
            self.add_label(label)
        trained = [eg.predicted for eg in examples]
        examples = visible_examples(examples)
        cells = self.decisions_per_token * len(model.templates) * max(1, model.n_labels)
        with model.guard.writing():  # predictions in other threads wait (guard.py)
            for part in token_chunks(examples, max(1, MAX_TRAIN_CELLS // cells)):
                losses[self.name] += float(self._train_batch(model, part))
            model.instances += len(examples)
            model.changed(training_step=True)
        self._just_trained = trained
        return losses

    def __call__(self, doc: Doc) -> Doc:
        """Label one doc (what `nlp(text)` calls): predict and set_annotations,
        with the errors going to the component's error handler as spaCy's
        components do. A doc that is its own view (no whitespace tokens, the
        pipeline's vocab) is labelled without the batch's views and
        predictions wrappers, which cost a short sentence as much as its
        kernel; the same _predict and _set_annotations run."""
        try:
            if not self._label_one(doc):
                self.set_annotations([doc], self.predict([doc]))
            return doc
        except Exception as e:  # noqa: BLE001 - the handler raises or logs, as TrainablePipe.__call__ does
            self.get_error_handler()(self.name, self, [doc], e)
        return None  # type: ignore[return-value] - an ignoring error handler leaves no doc, as in spaCy

    def _label_one(self, doc: Doc) -> bool:
        """Label `doc` as predict + set_annotations would, when it is its own
        view and no training step just saw it; False (nothing done) otherwise."""
        model = self._require_model()
        if self._just_trained is not None or doc.vocab is not self.vocab:
            return False
        docs = [doc]
        columns = DocColumns(docs, self._reads(model))
        if columns.lex_rows(docs, self.lexicon).spaces:
            return False
        with model.guard.reading():
            predictions = self._predict(docs, model, 0, columns)
        self._write_one(docs, predictions)
        return True

    def _write_one(self, docs: List[Doc], predictions) -> None:
        """What set_annotations does for docs that are their own views (a
        subclass whose set_annotations does more than _set_annotations does
        the same here)."""
        self._set_annotations(docs, predictions)

    def predict(self, docs: Iterable[Doc]):
        """The task's predictions for a batch, made while no training step
        changes the model's arrays (guard.py).

        When the docs are the ones the last update trained on (spaCy's
        annotating_components pass, which feeds the next component), the
        averaged weights may be up to ANNOTATE_STALE_STEPS updates old:
        averaging every row again after every batch took a fifth of `spacy
        train` for the tagger_parser recipe. Any other call (evaluation,
        use) gets the current averages."""
        model = self._require_model()
        docs = list(docs)
        held, self._just_trained = self._just_trained, None
        annotating = held is not None and len(docs) > 0 and {id(d) for d in docs} <= {id(d) for d in held}
        views = Views(docs, self._reads(model), self.lexicon, shared=True)
        with model.guard.reading():
            return Predictions(self._predict(views.docs, model, ANNOTATE_STALE_STEPS if annotating else 0,
                                             views.columns), views)

    def set_annotations(self, docs: Iterable[Doc], predictions) -> None:
        """Write the predictions of `predict(docs)` onto the docs; whitespace
        tokens get spaCy's values for them (views.py)."""
        docs = list(docs)
        views = getattr(predictions, "views", None)
        if views is None or len(views.sources) != len(docs) or any(a is not b for a, b in zip(views.sources, docs)):
            # predictions made for other docs (copies, say) are written on these, as spaCy's components do
            views = Views(docs)
        self._set_annotations(views.docs, tuple(predictions))
        views.write_back(docs, self.writes)

    def _set_annotations(self, docs: List[Doc], predictions) -> None:
        raise NotImplementedError

    def _reads(self, model: SparseLinearModel) -> Tuple[int, ...]:
        """Token attributes a prediction reads besides ORTH and SENT_START
        (read for the whole batch at once: batching.DocColumns)."""
        return ()

    def _predict(self, docs: List[Doc], model: SparseLinearModel, stale_steps: int = 0,
                 columns: Optional[DocColumns] = None):
        """The predictions; the averaged weights may be up to stale_steps
        updates old (SparseLinearModel.weights). `columns`: the docs'
        attributes of _reads, if the caller has them."""
        raise NotImplementedError

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
