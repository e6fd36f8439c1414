"""spacy_sparse.arrays: np.unique's results without its first-call import."""
import subprocess
import sys

import numpy as np
import pytest

from spacy_sparse.arrays import unique
from conftest import ROOT


@pytest.mark.parametrize("values", [
    np.array([], dtype=np.uint64),
    np.array([7], dtype=np.int64),
    np.array([2 ** 64 - 1, 3, 2 ** 63, 3, 0, 2 ** 64 - 1], dtype=np.uint64),
    np.random.default_rng(0).integers(-50, 50, size=500).astype(np.int32),
    np.random.default_rng(1).integers(0, 2 ** 63, size=300, dtype=np.int64).repeat(3),
])
def test_unique_is_numpys(values):
    expected, inverse = np.unique(values, return_inverse=True)
    got, got_inverse = unique(values, return_inverse=True)
    assert got.dtype == expected.dtype and np.array_equal(got, expected)
    assert np.array_equal(got_inverse, inverse.reshape(-1))
    assert np.array_equal(unique(values), expected)


def test_labelling_after_a_load_does_not_import_numpy_ma():
    """np.unique imports numpy.ma on its first call (15-25 ms of a cold
    start): loading the shipped pipeline and labelling text, new words,
    whitespace tokens and several sentences included, never calls it."""
    probe = ("import sys, spacy_sparse; nlp = spacy_sparse.load_default(); "
             "doc = nlp('Zyxwv  grumbled at 10:30.\\n\\nThe ferry left.  Nobody waved'); "
             "assert len(list(doc.sents)) > 1; print('numpy.ma' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "False"
