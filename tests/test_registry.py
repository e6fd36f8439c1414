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
