"""Every registered name in the packaging metadata resolves, so a typo fails here, not in a user's config."""
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
import spacy
from spacy.util import registry

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PYPROJECT = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
DECLARED = [
    (group, name)
    for group, names in PYPROJECT["project"]["entry-points"].items()
    for name in names
]


@pytest.mark.parametrize("group,name", DECLARED)
def test_declared_entry_point_is_installed_and_registered(group, name):
    installed = {ep.name for ep in entry_points(group=group)}
    assert name in installed, f"{name} is not installed under {group}: reinstall the package"
    if group == "spacy_factories":
        # as a user's config does: spaCy finds the factory through its entry
        # point (factory_names lists only what was already imported, so it
        # passed or failed with the order the tests ran in)
        pipe = spacy.blank("en").add_pipe(name)
        assert type(pipe).__module__.startswith("spacy_sparse.")
    else:
        reg = getattr(registry, group[len("spacy_"):])
        assert callable(reg.get(name))


def test_default_config_resolves():
    nlp = spacy.blank("en")
    nlp.add_pipe("sparse_tagger")
    assert nlp.config["components"]["sparse_tagger"]["templates"]["@misc"] == "spacy_sparse.tagger_templates.v1"


def test_spacy_blank_does_not_import_the_kernels():
    """spaCy imports every installed plugin's factories when it makes any
    pipeline: a process that never uses a sparse component must not pay for
    numba and the model (about 0.2 s), and one that does still gets them
    (numba too, unless the kernels are compiled ahead of time)."""
    import subprocess

    code = ("import sys, spacy; nlp = spacy.blank('en'); "
            "heavy = [m for m in ('numba', 'spacy_sparse.model', 'spacy_sparse.kernels') if m in sys.modules]; "
            "assert not heavy, heavy; assert 'spacy_sparse.factories' in sys.modules; "
            "nlp.add_pipe('sparse_tagger'); assert 'spacy_sparse.model' in sys.modules; "
            "from spacy_sparse.runtime import compiled; assert bool(compiled.COMPILED) != ('numba' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
