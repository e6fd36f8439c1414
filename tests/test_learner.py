"""The learner's arithmetic, checked against plain numpy: the AdaGrad and perceptron steps, the averaged weights
kept as W - U / steps, and DC-ADMM's lazy pull toward its target in closed form."""
import numpy as np
import pytest

from spacy_sparse.kernels.learner import apply_gradient, catch_up
from spacy_sparse.model import SparseLinearModel


def _row_update(W, U, G, grad, step, adagrad, lr=1.0, scale=1.0):
    touched = np.flatnonzero(grad).astype(np.int64)
    padded = np.zeros(grad.shape[0], dtype=np.int64)
    padded[:touched.size] = touched
    return apply_gradient(W, U, G, 0, grad, padded, touched.size, float(step), adagrad, lr, scale)


@pytest.mark.parametrize("adagrad", [True, False])
def test_one_step_matches_its_formula(adagrad):
    rng = np.random.default_rng(1)
    W = rng.normal(size=(1, 5)).astype(np.float32)
    U = np.zeros((1, 5))
    G = rng.uniform(0.5, 2.0, size=(1, 5)).astype(np.float32)
    grad = np.array([1.0, 0.0, -1.0, 2.0, 0.0], dtype=np.float32)
    W0, G0 = W.copy(), G.copy()
    lr, scale, step = 0.5, 2.0, 7
    dnorm = _row_update(W, U, G, grad, step, adagrad, lr, scale)
    if adagrad:
        G_expect = G0 + grad ** 2
        delta_den = np.sqrt(G_expect[0])
        delta = lr * grad / delta_den / scale
        np.testing.assert_allclose(G[0], G_expect[0], rtol=1e-6)
    else:
        delta = lr * grad / scale
        np.testing.assert_array_equal(G, G0)  # the perceptron keeps no squared sums
    np.testing.assert_allclose(W[0], W0[0] + delta, rtol=1e-6)
    np.testing.assert_allclose(U[0], step * delta, rtol=1e-6)
    assert dnorm == pytest.approx(float((W ** 2).sum() - (W0 ** 2).sum()), rel=1e-5)


@pytest.mark.parametrize("adagrad", [True, False])
def test_averaged_weights_are_the_mean_over_decisions(adagrad):
    """The model's average W - U / steps equals the mean of the weights in force at each decision, kept without
    a copy per step: an update at decision s adds s * delta to U."""
    rng = np.random.default_rng(2)
    n_labels, T = 4, 60
    W = np.zeros((1, n_labels), dtype=np.float32)
    U = np.zeros((1, n_labels))
    G = np.zeros((1, n_labels), dtype=np.float32)
    in_force = []
    for t in range(1, T + 1):
        in_force.append(W[0].astype(np.float64).copy())
        if rng.random() < 0.4:  # most decisions make no update for this feature
            grad = np.zeros(n_labels, dtype=np.float32)
            a, b = rng.choice(n_labels, size=2, replace=False)
            grad[a], grad[b] = 1.0, -1.0
            _row_update(W, U, G, grad, t, adagrad)
    mean = np.mean(in_force, axis=0)
    model = SparseLinearModel(["lower@0"], [str(i) for i in range(n_labels)])
    model.W, model.U, model.n_rows[0], model.steps[0] = W, U, 1, float(T)
    np.testing.assert_allclose(model.averaged()[0], mean, rtol=1e-5, atol=1e-6)


def test_catch_up_is_k_single_pulls_in_closed_form():
    rng = np.random.default_rng(3)
    target = rng.normal(size=(1, 6)).astype(np.float32)
    W = rng.normal(size=(1, 6)).astype(np.float32)
    pull = 0.9
    lazy_W, lazy_U, lazy_stamp = W.copy(), np.zeros((1, 6)), np.array([3.0])
    catch_up(lazy_W, lazy_U, target, lazy_stamp, 0, 10.0, pull)  # seven decisions at once
    step_W, step_U, step_stamp = W.copy(), np.zeros((1, 6)), np.array([3.0])
    for s in range(4, 11):
        catch_up(step_W, step_U, target, step_stamp, 0, float(s), pull)
    np.testing.assert_allclose(lazy_W, step_W, rtol=1e-5)
    np.testing.assert_allclose(lazy_W, target + (W - target) * pull ** 7, rtol=1e-5)
    assert lazy_stamp[0] == step_stamp[0] == 10.0
    # the lazy form credits the whole change to the decision the row is read at
    np.testing.assert_allclose(lazy_U, 10.0 * (lazy_W - W), rtol=1e-5)
    before = lazy_W.copy()
    catch_up(lazy_W, lazy_U, target, lazy_stamp, 0, 10.0, pull)  # read again at the same decision: no change
    np.testing.assert_array_equal(lazy_W, before)


def test_averages_in_one_kernel_are_numpys_bits():
    """The averaged perceptron's weights come from one kernel pass (training asks for them every few batches);
    they are the bits of numpy's float64 W - U / steps rounded to float32, and rows short of min_updates are 0."""
    rng = np.random.default_rng(3)
    n, n_labels = 20_000, 7  # more than one slice of rows
    model = SparseLinearModel(["lower@0"], [str(i) for i in range(n_labels)])
    model.W = rng.normal(size=(n, n_labels)).astype(np.float32)
    model.U = (rng.normal(size=(n, n_labels)) * 300).astype(np.float32)
    model.updates = rng.integers(0, 6, size=n).astype(np.int32)
    model.n_rows[0], model.steps[0], model.min_updates = n, 977.0, 3
    expect = (model.W - model.U / model.steps[0]).astype(np.float32)
    expect[model.updates < 3] = 0.0
    assert np.array_equal(model.averaged(), expect)
    assert np.array_equal(np.concatenate([part for _, part in model._averaged_slices()]), expect)
