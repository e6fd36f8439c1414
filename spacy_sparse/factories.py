"""The spaCy factories of the components, declared without importing them.

spaCy imports every installed plugin's factories whenever it makes a pipeline (`spacy.blank` included), so
this module stays light: each factory imports its component, and with it the model and numba's kernels, when
a component is made. A spaCy process that never uses a sparse component does not pay for them.

spaCy and thinc check a component's config against its factory's signature. The settings every sparse
component shares are declared once (COMMON_SETTINGS); `_register` gives each factory a signature made of
those and the component's own, so one table says what a config may hold and of which type.
"""
import importlib
from inspect import Parameter, Signature
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from spacy.language import Language

from .pipeline.settings import COMMON_DEFAULTS

# (name, type) of the settings every trainable sparse component has, in config order
COMMON_SETTINGS: Tuple[Tuple[str, Any], ...] = (
    ("templates", List[str]),
    ("margin", Optional[float]),
    ("margin_decay", float),
    ("train_margin", float),
    ("mode", str),
    ("learner", str),
    ("learn_rate", float),
    ("min_updates", int),
    ("min_count", int),
    ("word_dropout", float),
    ("n_threads", int),
    ("scorer", Optional[Callable]),
)

_NO_DEFAULT = Parameter.empty


def _signature(settings: Sequence[Tuple[str, Any]], defaults: Dict[str, Any]) -> Signature:
    """`(nlp, name, *, setting: type, ...)`, the settings keyword-only so that those with a default in
    `defaults` may stand anywhere."""
    params = [Parameter("nlp", Parameter.POSITIONAL_OR_KEYWORD, annotation=Language),
              Parameter("name", Parameter.POSITIONAL_OR_KEYWORD, annotation=str)]
    params += [Parameter(key, Parameter.KEYWORD_ONLY, annotation=kind, default=defaults.get(key, _NO_DEFAULT))
               for key, kind in settings]
    return Signature(params)


def _register(name: str, component: str, own: Sequence[Tuple[str, Any]], doc: str, *,
              common: bool = True, own_defaults: Optional[Dict[str, Any]] = None, **meta: Any) -> Callable:
    """Register the factory `name`, which makes `component` ("module:Class" of the pipeline package) from the
    common settings (unless `common` is false) and its `own`; `meta` is what Language.factory takes."""
    module, class_name = component.split(":")

    def make(nlp: Language, name: str, **settings: Any) -> Any:
        pipe_class = getattr(importlib.import_module(f".pipeline.{module}", __package__), class_name)
        return pipe_class(nlp.vocab, name, **settings)

    settings = (tuple(COMMON_SETTINGS) if common else ()) + tuple(own)
    make.__signature__ = _signature(settings, own_defaults or {})  # type: ignore[attr-defined]
    make.__name__ = make.__qualname__ = "make_" + name
    make.__doc__ = doc
    return Language.factory(name, **meta)(make)


def _defaults(templates: str, scorer: str, **own: Any) -> Dict[str, Any]:
    """A default config: the named templates, the common settings, the component's own, its scorer."""
    return {"templates": {"@misc": templates}, **COMMON_DEFAULTS, **own, "scorer": {"@scorers": scorer}}


DEFAULT_TAGGER_CONFIG = _defaults("spacy_sparse.tagger_templates.v1", "spacy_sparse.tagger_scorer.v1",
                                  annotate="tag")
make_sparse_tagger = _register(
    "sparse_tagger", "tagger:SparseTagger", [("annotate", str)],
    """Create a sparse tagger.

    templates (List[str]): feature templates in the order they are scored.
    annotate (str): "tag" writes token.tag_ (fine tags such as PTB), "pos"
        writes token.pos_ (Universal POS tags only).
    word_dropout (float): in training, a token is read as an unknown word
        with probability word_dropout / (word_dropout + c), c the count of
        its lowercase form in the training data, so spelling, shape and
        cluster features learn what new words need (0: never).
    margin (Optional[float]): runtime stop margin of dynamic feature selection;
        None scores every template.
    margin_decay (float): with a margin, the lead that stops a token after
        its t-th template is margin * margin_decay**(t - 1); 1.0 keeps one
        margin throughout (the paper), below 1 the hardest words stop
        sooner (docs/how-it-works.md).
    train_margin (float): the margin m of the prefix-hinge objective.
    mode (str): "prefix" trains every template prefix as a hinge-loss
        classifier on every token; "dynamic" is Strubell et al. (2015) §4.4
        as written (prefixes only up to the one where gold first leads by the
        margin); "full" is the classic averaged perceptron on all templates,
        the baseline (docs/how-it-works.md).
    learner (str): "adagrad" (per-weight step sizes, as Strubell et al.) or
        "perceptron" (unit steps); both keep averaged weights for prediction.
    learn_rate (float): AdaGrad's base step size (the margin's unit).
    min_updates (int): min-update pruning (Goldberg & Elhadad): a feature
        counts in scores, and is saved, only once it took part in this many
        updates (1: every feature).
    min_count (int): rare-feature pruning, min-update's baseline: only
        features seen this often in the gold decisions of the training
        data are ever learned (1: every feature).
    n_threads (int): threads that label one batch together (the kernels
        release the GIL); results are the same for any number.
    scorer (Optional[Callable]): the scoring method.
    """,
    assigns=["token.tag", "token.pos"],
    default_config=DEFAULT_TAGGER_CONFIG,
    default_score_weights={"tag_acc": 1.0, "pos_acc": None},
)

DEFAULT_NER_CONFIG = {**_defaults("spacy_sparse.ner_templates.v1", "spacy_sparse.ner_scorer.v1"),
                      "incorrect_spans_key": None}
make_sparse_ner = _register(
    "sparse_ner", "ner:SparseNER", [("incorrect_spans_key", Optional[str])],
    """Create a sparse entity recognizer. The settings mean what they mean for
    `sparse_tagger` (see its factory, `word_dropout` included); `incorrect_spans_key`, as in spaCy's
    NER, names a span group of the reference docs whose spans are known not
    to be entities of their label.""",
    own_defaults={"incorrect_spans_key": None},
    assigns=["doc.ents", "token.ent_iob", "token.ent_type"],
    default_config=DEFAULT_NER_CONFIG,
    default_score_weights={"ents_f": 1.0, "ents_p": 0.0, "ents_r": 0.0, "ents_per_type": None},
)

DEFAULT_SENTER_CONFIG = _defaults("spacy_sparse.senter_templates.v1", "spacy.senter_scorer.v1", start_bias=0.0)
make_sparse_senter = _register(
    "sparse_senter", "senter:SparseSenter", [("start_bias", float)],
    """Create a sparse sentence segmenter. The settings mean what they mean
    for `sparse_tagger` (see its factory, `word_dropout` included); `start_bias` is added to the score
    of a sentence start when predicting (above 0: more starts, recall for
    precision; the shipped segmenter's was picked on EWT dev).""",
    own_defaults={"start_bias": 0.0},
    assigns=["token.is_sent_start"],
    default_config=DEFAULT_SENTER_CONFIG,
    default_score_weights={"sents_f": 1.0, "sents_p": 0.0, "sents_r": 0.0},
)

DEFAULT_PARSER_CONFIG = _defaults("spacy_sparse.parser_templates.v1", "spacy.parser_scorer.v1",
                                  explore=0.9, explore_after=100_000, min_lifted=10, whole_docs=0.5, stray=0.0,
                                  tag_noise=0.0, beam_width=1, beam_density=0.0, beam_after=0,
                                  beam_margin=0.0)
make_sparse_parser = _register(
    "sparse_parser", "parser:SparseParser",
    [("explore", float), ("explore_after", int), ("min_lifted", int), ("whole_docs", float), ("stray", float),
     ("tag_noise", float), ("beam_width", int), ("beam_density", float),
     ("beam_after", int), ("beam_margin", float)],
    """Create a sparse dependency parser.

    templates (List[str]): parser templates (slots such as S0, B0, S0L) in
        the order they are scored.
    margin, margin_decay, train_margin, mode, learner, learn_rate, min_updates, n_threads, word_dropout:
        as for sparse_tagger.
    explore (float): probability of following the model's own wrong action
        in training (error exploration with the dynamic oracle); 0 trains on
        oracle paths only.
    explore_after (int): training words seen before exploring starts.
    min_lifted (int): a lifted label ("dep||head-dep") seen fewer times in
        the training data is learned as its plain label.
    stray (float): once exploring, the probability of following a costly
        action although the model chose an optimal one, so that training
        also sees states after mistakes when the model rarely makes them.
    whole_docs (float): share of training docs with gold sentences that are
        parsed whole anyway, so the parser learns both to parse given
        sentences and to find sentence boundaries in raw text.
    tag_noise (float): share of training tokens whose tag the parser reads as
        another tag their word had in the training data, so that it learns to
        parse around a tagger's errors; 0 reads the tags as they are.
    beam_width (int): items in the beam when parsing (1: greedy, the default).
    beam_density (float): a beam keeps a candidate only while exp(its score
        minus the best candidate's) is at least this (as spaCy's beam
        parser, with scores read as log-probabilities); 0 keeps the width.
        Training with beam_width above 1 is global (max-violation updates
        over the beam) once `beam_after` training words were seen, greedy
        with the dynamic oracle before.
    beam_after (int): training words seen before beam training starts.
    beam_margin (float): in beam training, how much more than another parse
        the gold parse must score per gold arc the other loses (the search
        adds it to the other's score: cost-augmented decoding); 0 asks only
        that it score more.
    scorer (Optional[Callable]): the scoring method (spaCy's parser scorer).
    """,
    assigns=["token.dep", "token.head", "token.is_sent_start", "doc.sents"],
    default_config=DEFAULT_PARSER_CONFIG,
    default_score_weights={"dep_uas": 0.5, "dep_las": 0.5, "dep_las_per_type": None, "sents_p": None,
                           "sents_r": None, "sents_f": 0.0},
)

make_sparse_upos = _register(
    "sparse_upos", "upos:SparseUpos", [("min_word_count", int)],
    """Create the UPOS mapper: token.pos_ from token.tag_, token.dep_ and the word, by tables counted at
    initialize on the training data (put it after the tagger and the parser).

    min_word_count (int): training tokens a (tag, label, word) needs for a row of its own.
    """,
    common=False,
    assigns=["token.pos"],
    requires=["token.tag"],
    default_config={"min_word_count": 3},
    default_score_weights={"pos_acc": 1.0},
)

DEFAULT_LEMMATIZER_CONFIG = _defaults("spacy_sparse.lemma_templates.v1", "spacy_sparse.lemmatizer_scorer.v1",
                                      min_label_count=5, overwrite=False)
make_sparse_lemmatizer = _register(
    "sparse_lemmatizer", "lemmatizer:SparseLemmatizer", [("min_label_count", int), ("overwrite", bool)],
    """Create a sparse lemmatizer: token.lemma_ by an edit rule per token, predicted from the word, its
    affixes and the tag an earlier tagger set (pipeline/lemmatizer.py). The settings they share mean what
    they mean for `sparse_tagger`.

    min_label_count (int): an edit rule is a label only if the training data has it this often.
    overwrite (bool): replace lemmas the docs already have (false: keep them, as spaCy's lemmatizers do).
    """,
    assigns=["token.lemma"],
    requires=["token.tag"],
    default_config=DEFAULT_LEMMATIZER_CONFIG,
    default_score_weights={"lemma_acc": 1.0},
)

DEFAULT_MORPHOLOGIZER_CONFIG = _defaults("spacy_sparse.morph_templates.v1", "spacy_sparse.morphologizer_scorer.v1",
                                         min_label_count=5, overwrite=True)
make_sparse_morphologizer = _register(
    "sparse_morphologizer", "morphologizer:SparseMorphologizer", [("min_label_count", int), ("overwrite", bool)],
    """Create a sparse morphologizer: token.morph (UD FEATS) as the labels of a tagger that reads the tags
    an earlier tagger set (pipeline/morphologizer.py). The settings they share mean what they mean for
    `sparse_tagger`.

    min_label_count (int): a set of features is a label only if the training data has it this often.
    overwrite (bool): replace features the docs already have (spaCy's morphologizer: true).
    """,
    assigns=["token.morph"],
    requires=["token.tag"],
    default_config=DEFAULT_MORPHOLOGIZER_CONFIG,
    default_score_weights={"morph_acc": 1.0, "morph_per_feat": None},
)
