"""The settings every sparse component has: their defaults and their checks.

One source of truth: the factories take COMMON_DEFAULTS, `__init__` and loading a saved component both run
`check_common`, and the runtime knobs (`pipe.margin = ...`) use the same checks, so a bad value gets the same
message wherever it comes from.
"""
from typing import Any, Dict, Optional

from ..checks import check_choice, check_number
from ..codes import FULL, PREFIX_ALL, PREFIX_TRUNCATED

# Settings every sparse component has, with their defaults (each factory adds
# its own templates, scorer and task settings).
COMMON_DEFAULTS: Dict[str, Any] = {
    "margin": None,
    "margin_decay": 1.0,
    "train_margin": 30.0,
    "mode": "prefix",
    "learner": "adagrad",
    "learn_rate": 1.0,
    "min_updates": 1,
    "min_count": 1,
    # word dropout in training (pipeline/dropout.py); 0: none
    "word_dropout": 0.0,
    "n_threads": 1,
}

MODES = {"prefix": PREFIX_ALL, "dynamic": PREFIX_TRUNCATED, "full": FULL}
LEARNERS = ("adagrad", "perceptron")
# more threads than this only queue behind each other on any machine we know
MAX_THREADS = 256


def check_threads(value: Any) -> int:
    return check_number(value, "n_threads", whole=True, low=1, high=MAX_THREADS)


def check_min_updates(value: Any, what: str = "min_updates") -> int:
    return check_number(value, what, whole=True, low=1)


def check_margin(value: Any, what: str = "margin") -> Optional[float]:
    return check_number(value, what, low=0, allow_none=True)


def check_margin_decay(value: Any) -> float:
    return check_number(value, "margin_decay", low=0, high=1, low_open=True)


MAX_LEARN_RATE = 1e4
# The one score each component reports as its accuracy, in the order they are looked for.
ACCURACY_KEYS = ("tag_acc", "pos_acc", "ents_f", "dep_las", "sents_f", "morph_acc", "lemma_acc")


def check_common(cfg: Dict[str, Any]) -> Dict[str, Any]:
    """The common settings present in `cfg`, checked and normalized (a copy;
    other keys pass through)."""
    out = dict(cfg)
    checks = {
        "margin": check_margin,
        "margin_decay": check_margin_decay,
        "train_margin": lambda v: check_number(v, "train_margin", low=0),
        "mode": lambda v: check_choice(v, "mode", sorted(MODES)),
        "learner": lambda v: check_choice(v, "learner", LEARNERS),
        # above MAX_LEARN_RATE, weights overflow float32 within a few updates and the saved model cannot load
        "learn_rate": lambda v: check_number(v, "learn_rate", low=0, low_open=True, high=MAX_LEARN_RATE),
        "min_updates": check_min_updates,
        "min_count": lambda v: check_min_updates(v, "min_count"),
        "word_dropout": lambda v: check_number(v, "word_dropout", low=0),
        "n_threads": check_threads,
    }
    for key, check in checks.items():
        if key in out:
            out[key] = check(out[key])
    return out
