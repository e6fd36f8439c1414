"""`sparse_parser`: an arc-hybrid dependency parser over feature
templates, with dynamic feature selection and a dynamic oracle; greedy, or
with `beam_width` above 1 a beam search trained globally (kernels/beam.py,
kernels/beam_train.py).

The weight model scores actions: "SHIFT", "LEFT-dep", "RIGHT-dep" and
"ROOT-dep" (kernels/parser.py); or, when the template set has label
templates (with a `move` atom: split actions), the moves "MOVE-SHIFT",
"MOVE-LEFT", "MOVE-RIGHT", "MOVE-ROOT" and then, for an arc, its label:
"ARC-dep" for left and right arcs, "ROOT-dep" for roots. Non-projective gold trees are lifted with
spaCy's pseudo-projective transform (`Example.get_aligned_parse(
projectivize=True)`, labels "dep||head-dep") and parses are lowered again
with spaCy's `deprojectivize`. A doc whose sentence starts are all known
(gold sentences, a senter) is parsed sentence by sentence, one tree each;
any other doc is parsed whole, and its trees become its sentences.
"""
import sys
from collections import Counter
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from spacy.attrs import DEP, HEAD, ORTH, POS, TAG
from spacy.pipeline._parser_internals import nonproj
from spacy.tokens import Doc
from spacy.training import Example, validate_get_examples
from spacy.vocab import Vocab

from .. import noun_chunks
from ..codes import AT_ROOT, LEFT, NO_TOKEN, RIGHT, ROOT, SHIFT
from ..templates import has_move_atom, parse_templates
from ..runtime.compiled import predict_parse
from ..kernels.layout import LOOKAHEAD, MAX_BEAM_TOKENS
from ..model import SparseLinearModel
from ..checks import check_number
from ..lexicon import ambiguity_classes
from .actions import MOVES, action_names, label_order, parse_action, split_action_names, split_columns
from .base import SparsePipe
from .batching import DocBatch, DocColumns, doc_spans

BEAM_JOINT = ("beam_width above 1 needs joint actions (a template set without 'move' atoms); "
              "this parser decides moves and labels apart")

# what the parser reads of each doc besides ORTH and SENT_START (batching.DocColumns)
PARSER_READS = (TAG, POS)
ARC_ATTRS = (HEAD, DEP)  # what the parser writes (Doc.from_array), relative heads and labels


def _check_fraction(value: Any, what: str) -> float:
    return check_number(value, what, low=0, high=1)


def _check_count(value: Any, what: str) -> int:
    return check_number(value, what, whole=True, low=0)


def _check_margin(value: Any, what: str) -> float:
    return check_number(value, what, low=0, high=1e6)


def _check_width(value: Any, what: str) -> int:
    return check_number(value, what, whole=True, low=1)


# `single` of a batch of one doc in one segment: whether the segment must end as one tree (index: the flag)
ONE_SEGMENT = (np.zeros(1, dtype=np.uint8), np.ones(1, dtype=np.uint8))


class SparseParser(SparsePipe):
    """Assigns heads, dependency labels and sentence boundaries."""

    writes = "parse"

    template_kind = "state"
    decisions_per_token = 2

    def __init__(self, vocab: Vocab, name: str = "sparse_parser", *, explore: float = 0.9,
                 explore_after: int = 100_000, min_lifted: int = 10, whole_docs: float = 0.5,
                 stray: float = 0.0, tag_noise: float = 0.0, beam_width: int = 1, beam_density: float = 0.0,
                 beam_after: int = 0, beam_margin: float = 0.0, **kwargs: Any):
        own = self._checked_own({"explore": explore, "explore_after": explore_after, "min_lifted": min_lifted,
                                 "whole_docs": whole_docs, "stray": stray, "tag_noise": tag_noise,
                                 "beam_width": beam_width, "beam_density": beam_density, "beam_after": beam_after,
                                 "beam_margin": beam_margin})
        super().__init__(vocab, name, **own, **kwargs)
        noun_chunks.install(vocab)  # doc.noun_chunks reads UD labels (noun_chunks.py)
        self._deps: List[str] = []
        self._word_tags: Dict[int, Dict[int, int]] = {}  # ORTH -> tag -> count, for tag_noise
        self._words_seen = 0
        self._n_batches = 0

    @staticmethod
    def _checked_own(cfg: Dict[str, Any]) -> Dict[str, Any]:
        """The parser's own settings present in `cfg`, checked (ValueError)."""
        checks = {"explore": _check_fraction, "explore_after": _check_count, "min_lifted": _check_count,
                  "whole_docs": _check_fraction, "stray": _check_fraction, "tag_noise": _check_fraction,
                  "beam_width": _check_width, "beam_density": _check_fraction, "beam_after": _check_count,
                  "beam_margin": _check_margin}
        return {key: checks[key](value, key) for key, value in cfg.items() if key in checks}

    def _check_task_cfg(self, cfg: Dict[str, Any]) -> None:
        """A saved cfg's parser settings get the factory's checks."""
        self._checked_own(cfg)

    @property
    def beam_width(self) -> int:
        """Items in the beam when parsing; 1 parses greedily."""
        return int(self.cfg.get("beam_width", 1))

    @beam_width.setter
    def beam_width(self, value: int) -> None:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        self.cfg["beam_width"] = _check_width(value, "beam_width")

    @property
    def beam_density(self) -> float:
        """A beam keeps a candidate while exp(its score - the best's) is at
        least this (beam_gap); 0 keeps beam_width candidates."""
        return float(self.cfg.get("beam_density", 0.0))

    @beam_density.setter
    def beam_density(self, value: float) -> None:
        self.cfg["beam_density"] = _check_fraction(value, "beam_density")

    # ---- labels ------------------------------------------------------------------
    @property
    def labels(self) -> Tuple[str, ...]:
        """Dependency labels (lifted ones included), not the actions."""
        if self.sparse is not None:
            return tuple(sorted(self._deps))
        return tuple(self.cfg["labels"])

    @property
    def split(self) -> bool:
        """Whether the model decides the move and then the label (split
        actions) instead of scoring (move, label) pairs."""
        return self.sparse is not None and self.sparse.labels[:1] == MOVES[:1]

    def _split_arrays(self, names: Sequence[str]) -> Tuple[List[int], List[str]]:
        """Split actions: the labels, which label columns each move may take
        (`_lab_ok`), each label's arc and root column, and the (kind, dep)
        of every column (label columns have kind -1)."""
        columns = split_columns(names)
        self._deps = list(dict.fromkeys(d for _, d in columns))
        index = {d: i for i, d in enumerate(self._deps)}
        self._root_deps = {d for k, d in columns if k == ROOT}
        self._lab_ok = np.zeros((4, len(names)), dtype=np.uint8)
        self._arc_col = np.full(len(self._deps), -1, dtype=np.int64)
        self._root_col = np.full(len(self._deps), -1, dtype=np.int64)
        for c, (kind, dep) in enumerate(columns, 4):
            if kind == ROOT:
                self._lab_ok[ROOT, c] = 1
                self._root_col[index[dep]] = c
            else:
                self._lab_ok[LEFT, c] = self._lab_ok[RIGHT, c] = 1
                self._arc_col[index[dep]] = c
        return [SHIFT, LEFT, RIGHT, ROOT] + [-1] * len(columns), [""] * 4 + [d for _, d in columns]

    def _check_labels(self, labels: Sequence[str]) -> None:
        """Every transition the kernels may need has a column: SHIFT once,
        and arcs and roots with labels."""
        if labels[:1] == MOVES[:1]:
            kinds = [k for k, _ in split_columns(labels)]
            if LEFT not in kinds or ROOT not in kinds:
                raise ValueError("a split parser's labels need an arc label and a root label")
            return
        kinds = [parse_action(name)[0] for name in labels]
        if kinds.count(SHIFT) != 1 or not all(k in kinds for k in (LEFT, RIGHT, ROOT)):
            raise ValueError("a parser's actions need SHIFT once and at least one LEFT-, RIGHT- and ROOT- action")

    def _labels_changed(self) -> None:
        names = self.sparse.labels
        labelling = [has_move_atom(t) for t in self.sparse.templates]
        self._n_move = labelling.index(True) if True in labelling else len(labelling)
        if any(not x for x in labelling[self._n_move:]):
            raise ValueError("A split parser's label templates (with a move atom) must come after its move templates")
        if self.split:
            if self._n_move in (0, len(labelling)):
                raise ValueError("A split parser needs move templates and label templates (with a 'move@S0' atom)")
            kinds, deps = self._split_arrays(names)
        else:
            if self._n_move < len(labelling):
                raise ValueError("Label templates (with a 'move' atom) need a split parser's actions")
            kinds, deps = zip(*(parse_action(a) for a in names))
            self._deps = label_order(kinds, deps)
            self._root_deps = {d for k, d in zip(kinds, deps) if k == ROOT}
            self._lab_ok = np.zeros((4, len(names)), dtype=np.uint8)
            self._arc_col = self._root_col = np.zeros(1, dtype=np.int64)
        index = {d: i for i, d in enumerate(self._deps)}
        self._kind = np.array(kinds, dtype=np.int64)
        self._alab = np.array([index[d] if d else -1 for d in deps], dtype=np.int64)
        self._dep_values = np.array([self.vocab.strings.add(d) for d in self._deps] or [0], dtype=np.uint64)
        self._lifted = np.array([nonproj.DELIMITER in d for d in self._deps] or [False], dtype=bool)
        self._any_lifted = bool(self._lifted.any())
        self.cfg["labels"] = list(self._deps)

    def initialize(self, get_examples: Callable[[], Iterable[Example]], *, nlp=None,
                   labels: Optional[Sequence[str]] = None, order: Optional[Any] = None,
                   clusters: Optional[str] = None, clusters_min_logprob: Optional[float] = None,
                   features: Optional[str] = None) -> None:
        """Collect the labels of the (projectivized) training trees, or take
        `labels` (from `spacy init labels`); the labels seen on roots become
        root actions. `clusters`: word clusters for `clu*` atoms (clusters.py;
        `clusters_min_logprob` and `features` as SparsePipe.initialize)."""
        validate_get_examples(get_examples, "SparseParser.initialize")
        counts: Counter = Counter()
        root_counts: Counter = Counter()
        words = []
        for eg in get_examples():
            words.extend((t.text, t.tag_) for t in eg.reference)
            heads, deps = self._gold_memo.get(eg, _aligned_parse)
            for i, (h, d) in enumerate(zip(heads, deps)):
                if h is not None and d:
                    (root_counts if h == i else counts)[d] += 1
        if labels is None:
            labels = [d for d, c in counts.items() if nonproj.DELIMITER not in d or c >= self.cfg["min_lifted"]]
        labels = sorted(set(labels) | set(self.cfg["labels"]))
        roots = sorted(d for d in root_counts if d in labels or nonproj.DELIMITER not in d)
        if not labels:
            raise ValueError(f"No dependency trees for {self.name!r} to learn from in the training data")
        roots = roots or ["ROOT"]  # labels without trees (add_label): spaCy's parser also has ROOT
        split = any(has_move_atom(t) for t in parse_templates(self.cfg["templates"]))
        names = split_action_names(labels, roots) if split else action_names(labels, roots)
        # `amb` atoms read a word's ambiguity class: the tags it took in training
        self._build_model(names, order, ambiguity_classes(words))
        self.use_clusters(clusters, nlp.lang if nlp is not None else self.vocab.lang, clusters_min_logprob)
        self.use_features(features)
        self._count_types(get_examples)

    def _spec(self, model: SparseLinearModel) -> Tuple[Any, ...]:
        """What the parsing kernels decide over (kernels/structs.ParserSpec): the templates, where the label
        templates start, each label column's moves, and each action's move and label."""
        return (model.template_arrays, self._n_move, self._lab_ok, self._kind, self._alab)

    def _arrange_templates(self, templates: List[str]) -> List[str]:
        """Move templates first, label templates (split actions) after,
        each in their order: the kernel scores the two decisions with the
        two runs of templates."""
        labelling = [has_move_atom(t) for t in parse_templates(templates)]
        return [t for t, x in zip(templates, labelling) if not x] + [t for t, x in zip(templates, labelling) if x]

    def _outputs_of(self, label: str) -> List[str]:
        return [f"ARC-{label}"] if self.split else [f"LEFT-{label}", f"RIGHT-{label}"]

    def _labels_in(self, examples: List[Example]) -> Iterable[str]:
        """Plain dependency labels of the references the model lacks
        (spaCy's parser adds them in update too)."""
        found = set()
        for eg in examples:
            strings = eg.reference.vocab.strings
            found.update(strings[v] for v in np.unique(eg.reference.to_array(DEP)).tolist() if v)
        known = set(self._deps)
        return sorted(d for d in found if d and d not in known and nonproj.DELIMITER not in d)

    # ---- batches -----------------------------------------------------------------
    def _state_inputs(self, docs: List[Doc], whole: Optional[np.ndarray] = None,
                      columns: Optional[DocColumns] = None):
        """Tags, POS and per-segment `single` flags of a batch; docs marked
        in `whole` are parsed whole even if their sentences are known (every
        token's start set)."""
        columns = DocColumns(docs, PARSER_READS) if columns is None else columns
        batch = DocBatch(docs, self.lexicon, columns=columns)
        if len(docs) == 1 and whole is None:  # nlp(text): one doc, its segments one flag
            complete = bool(columns.sents_complete()[0])
            single = ONE_SEGMENT[complete] if batch.seg_new_doc.shape[0] == 1 else \
                np.full(batch.seg_new_doc.shape[0], complete, dtype=np.uint8)
            return batch, np.ascontiguousarray(columns[TAG]), np.ascontiguousarray(columns[POS]), single
        complete = columns.sents_complete()
        if whole is not None and whole.any():
            complete &= ~whole
            seg_doc = np.searchsorted(batch.doc_off, batch.seg_off[:-1], side="right") - 1
            inner = ~batch.seg_new_doc.astype(bool) & whole[seg_doc]
            batch.seg_off = np.concatenate([batch.seg_off[:-1][~inner], batch.seg_off[-1:]])
            batch.seg_new_doc = batch.seg_new_doc[~inner]
        if len(docs) == 1:  # nlp(text): every segment is the one doc's
            single = np.full(batch.seg_new_doc.shape[0], complete[0], dtype=np.uint8)
        else:
            known = np.append(complete, False)
            seg_doc = np.searchsorted(batch.doc_off, batch.seg_off[:-1], side="right") - 1
            single = known[seg_doc].astype(np.uint8)
        return batch, np.ascontiguousarray(columns[TAG]), np.ascontiguousarray(columns[POS]), single

    # ---- inference -----------------------------------------------------------------
    def _reads(self, model: SparseLinearModel) -> Tuple[int, ...]:
        return PARSER_READS

    def _predict(self, docs: List[Doc], model: SparseLinearModel, stale_steps: int = 0,
                 columns: Optional[DocColumns] = None):
        batch, tags, poss, single = self._state_inputs(docs, columns=columns)
        heads = np.zeros(batch.n_tokens, dtype=np.int64)
        labels = np.zeros(batch.n_tokens, dtype=np.int64)
        used = np.zeros(batch.n_tokens, dtype=np.int64)
        margin, thr = self._stop_rule(len(model.seeds))
        ptab, ptab_off, lv, lc, book, W = model.packed()  # W: the rows kept dense
        columns, spec, layout = (batch.lex_rows, batch.lex, tags, poss), self._spec(model), \
            (ptab_off, ptab, W, lv, lc, book, True)

        width = self.beam_width
        if width > 1:
            if self.split:
                raise ValueError(BEAM_JOINT)
            from ..kernels.beam import predict_parse_beam  # an option: the default pipeline loads no numba
            beam = (width, beam_gap(self.beam_density))

        def parse(seg_off: np.ndarray, seg_new_doc: np.ndarray) -> None:
            if seg_off is batch.seg_off:  # the whole batch on this thread
                segments = (seg_off, single)
            else:
                first = int(np.searchsorted(batch.seg_off, seg_off[0]))
                segments = (seg_off, single[first:first + len(seg_off) - 1])
            if width > 1:
                predict_parse_beam(columns, segments, spec, layout, (margin, thr), beam, (heads, labels, used))
            else:
                predict_parse(columns, segments, spec, layout, (margin, thr), (heads, labels, used))

        self._over_segments(batch, parse)
        self._record_usage(used)
        return heads, labels, batch.doc_off

    def _set_annotations(self, docs: List[Doc], predictions) -> None:
        heads, labels, doc_off = predictions
        # (relative head, label) of every token at once: the loop over docs only hands out their rows
        arr = np.empty((heads.shape[0], 2), dtype=np.uint64)
        arr[:, 0] = (heads - np.arange(heads.shape[0])).astype(np.uint64)
        arr[:, 1] = self._dep_values[labels]
        # lifted (pseudo-projective) labels before each token: a doc with one is deprojectivized
        lifted_upto = None  # no lifted label at all (the recipes keep none): no running count
        lifted = self._lifted[labels] if self._any_lifted else None
        if lifted is not None and lifted.any():
            lifted_upto = np.zeros(heads.shape[0] + 1, dtype=np.int64)
            np.cumsum(lifted, out=lifted_upto[1:])
        for doc, start, end in doc_spans(docs, doc_off):
            if doc.vocab is not self.vocab:
                for label in self._deps:  # so the doc's own vocab can read dep_
                    doc.vocab.strings.add(label)
            doc.from_array(ARC_ATTRS, arr[start:end])
            if lifted_upto is not None and lifted_upto[end] > lifted_upto[start]:
                nonproj.deprojectivize(doc)

    # ---- training --------------------------------------------------------------------
    def _train_batch(self, model: SparseLinearModel, examples: List[Example]) -> int:
        if self.beam_width == 1 or self._words_seen < self.cfg.get("beam_after", 0):
            return self._train_examples(model, examples, beam=False)
        if self.split:
            raise ValueError(BEAM_JOINT)
        # a doc too long for a beam (kernels/layout.py) is learned greedily
        long = [eg for eg in examples if len(eg.predicted) > MAX_BEAM_TOKENS]
        short = [eg for eg in examples if len(eg.predicted) <= MAX_BEAM_TOKENS]
        return (self._train_examples(model, long, beam=False) if long else 0) + \
            (self._train_examples(model, short, beam=True) if short else 0)

    def _train_examples(self, model: SparseLinearModel, examples: List[Example], beam: bool) -> int:
        docs = [eg.predicted for eg in examples]
        self._n_batches += 1
        rng = np.random.RandomState(self._n_batches)
        whole = rng.random_sample(len(docs)) < self.cfg["whole_docs"]
        batch, tags, poss, single = self._state_inputs(docs, whole)
        if self.cfg.get("tag_noise", 0.0) > 0:
            tags = self._noisy_tags(examples, batch, tags, rng)
        lex_rows, lex = self._word_dropout(model, batch)
        gold_head, gold_lab = self._gold(examples, batch)
        ptr, idx = gold_children(gold_head)
        if beam:
            self._words_seen += batch.n_tokens
            # a gold state and a predicted one pushed at every step: up to four pushes per token
            model.reserve(2 * self.decisions_per_token * batch.n_tokens, adagrad=self.adagrad)
            from ..kernels.beam_train import train_parse_beam

            return train_parse_beam((lex_rows, lex, tags, poss), (batch.seg_off, single),
                                    (gold_head, gold_lab, ptr, idx, self._arc_col, self._root_col),
                                    self._spec(model), self._learning(model),
                                    (self.beam_width, float(self.cfg.get("beam_margin", 0.0))))
        # a split parser labels each arc in a third decision per token
        model.reserve((self.decisions_per_token + self.split) * batch.n_tokens, adagrad=self.adagrad)
        explore = self.cfg["explore"] if self._words_seen >= self.cfg["explore_after"] else 0.0
        self._words_seen += batch.n_tokens
        from ..kernels.parser import train_parse  # training/saving only: loading needs no numba import (kernels/layout.py)

        return train_parse(
            (lex_rows, lex, tags, poss), (batch.seg_off, single),
            (gold_head, gold_lab, ptr, idx, self._arc_col, self._root_col),
            self._spec(model), self._learning(model),
            (self.cfg["train_margin"], self.objective, LOOKAHEAD),
            (explore, self.cfg["stray"] if explore else 0.0, self._n_batches),
        )

    def _noisy_tags(self, examples: List[Example], batch: DocBatch, tags: np.ndarray,
                    rng: np.random.RandomState) -> np.ndarray:
        """The batch's tags with a `tag_noise` share of its tokens given
        another tag their word had in the training data (by how often), when
        it had more than one. The tags a parser learns from in training come
        from a tagger that saw those very sentences (nearly all right), while
        at run time about one in twenty is wrong, most often on such words
        (VBD / VBN, IN / RB): the parser learns not to trust them blindly.
        The words' tags are counted on the references of the batches trained
        on (training state, not saved)."""
        counts = self._word_tags
        for eg in examples:
            for orth, tag in eg.reference.to_array([ORTH, TAG]).tolist():
                if tag:
                    seen = counts.setdefault(orth, {})
                    seen[tag] = seen.get(tag, 0) + 1
        tags = tags.copy()
        orths = batch.columns[ORTH]
        for i in np.flatnonzero(rng.random_sample(tags.shape[0]) < self.cfg["tag_noise"]).tolist():
            seen = counts.get(int(orths[i]))
            if seen is None or len(seen) < 2:
                continue
            others = [(tag, n) for tag, n in seen.items() if tag != tags[i]]
            if others:
                weights = np.array([n for _, n in others], dtype=np.float64)
                tags[i] = others[int(rng.choice(len(others), p=weights / weights.sum()))][0]
        return tags

    def _gold(self, examples: List[Example], batch: DocBatch) -> Tuple[np.ndarray, np.ndarray]:
        """Gold head (absolute, AT_ROOT, or NO_TOKEN when unknown or outside the
        token's segment) and gold label index (-1: unknown) per token."""
        index = {d: i for i, d in enumerate(self._deps)}
        head = np.full(batch.n_tokens, NO_TOKEN, dtype=np.int64)
        lab = np.full(batch.n_tokens, -1, dtype=np.int64)
        for k, eg in enumerate(examples):
            off = int(batch.doc_off[k])
            heads, deps = self._gold_memo.get(eg, _aligned_parse)
            for i, (h, d) in enumerate(zip(heads, deps)):
                if h is None:
                    continue
                head[off + i] = AT_ROOT if h == i else off + h
                if d and d not in index and nonproj.DELIMITER in d:
                    d = nonproj.decompose(d)[0]
                if h == i and d not in self._root_deps:
                    continue
                lab[off + i] = index.get(d, -1)
        # arcs that cross a segment edge cannot be built: unknown
        seg = np.searchsorted(batch.seg_off, np.arange(batch.n_tokens), side="right") - 1
        has = head >= 0
        crossing = np.zeros(batch.n_tokens, dtype=bool)
        crossing[has] = seg[head[has]] != seg[has]
        head[crossing] = NO_TOKEN
        lab[crossing] = -1
        return head, lab


def beam_gap(density: float) -> float:
    """How far below the best candidate a beam keeps candidates: scores read
    as log-probabilities, a candidate stays while exp(its score - the best)
    is at least `density` (spaCy's beam_density: the ratio of the last
    candidate's probability to the first's); 0 keeps every candidate."""
    return float(-np.log(density)) if density > 0 else float("inf")


def _aligned_parse(eg: Example) -> Tuple[Tuple[Optional[int], ...], Tuple[Optional[str], ...]]:
    """The reference's projective heads and labels per predicted token
    (None: not aligned); each label string is kept once."""
    heads, deps = eg.get_aligned_parse(projectivize=True)
    return tuple(heads), tuple(d if d is None else sys.intern(d) for d in deps)


def gold_children(gold_head: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Children of each token by gold heads, as CSR (ptr, idx)."""
    n = gold_head.shape[0]
    child = np.flatnonzero(gold_head >= 0)
    parent = gold_head[child]
    order = np.argsort(parent, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(parent, minlength=n), out=ptr[1:])
    return ptr, child[order].astype(np.int64)
