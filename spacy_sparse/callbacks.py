"""The sparsity methods as `spacy train` callbacks.

spaCy has one `[training.before_update]` slot, so one composite callback
runs every method a config switches on, per sparse component:

    [training.before_update]
    @callbacks = "spacy_sparse.sparsity.v1"

    [training.before_update.sparseptron]   # template selection, then refit
    budget = 20

    [training.before_update.min_update]    # during the refit (or all along)
    k = 5

    [training.before_update.dc_admm]       # discrete weights, after the refit starts
    zeta = 4

The phases follow spaCy's epochs: the sparseptron selects during its first
`epochs` epochs (by default with the structured-perceptron loss), then the
component is rebuilt on the surviving templates and trained again with its
own learner, without regularization (the debiasing refit; by default only on
the features the selection kept), with min-update if asked; DC-ADMM runs
one iteration per epoch from its start_epoch (counted from the refit when a
sparseptron runs). Each step is logged (templates alive, nonzero features,
distinct weights, residuals).

While training, each component reports `sparse_compressed` (1.0 once every
method is in its last phase, else 0.0) to spaCy's scorer; the recipes give
it the same score weight as the accuracy, so `model-best` is the best of the
finished checkpoints, never one from before the compression.

`[training.before_to_disk]` with "spacy_sparse.finalize.v1" reports what a
checkpoint holds; the files themselves are already final at every
checkpoint (the model saves DC-ADMM's u, nonzero features only, in grouped
form) and training state is never touched by saving.
"""
from typing import Any, Callable, Dict, List, Optional

from spacy.language import Language
from spacy.util import registry
from wasabi import msg

from .learn.admm import AdmmSettings, DcAdmm
from .learn.sparseptron import (SparseptronSettings, debias_templates, prox_step, start_selection,
                                survivors)
from .pipeline.base import SparsePipe
from .pipeline.settings import check_min_updates


def _settings(cls, block: Optional[Dict[str, Any]], name: str):
    if block is None:
        return None
    if not isinstance(block, dict):
        raise ValueError(f"[training.before_update.{name}] must be a block of settings")
    known = set(cls.__dataclass_fields__)
    unknown = sorted(set(block) - known)
    if unknown:
        raise ValueError(f"Unknown {name} settings {unknown}; known: {sorted(known)}")
    return cls(**block)


# the component settings of Martins' structured-perceptron loss, for the
# selection phase (sparseptron.loss = "perceptron")
PERCEPTRON_LOSS = {"mode": "full", "learner": "perceptron", "train_margin": 0.0}


class SparsityCallback:
    """Runs before every update; keeps per-component method state."""

    def __init__(self, sparseptron: Optional[SparseptronSettings], min_update: Optional[int],
                 dc_admm: Optional[AdmmSettings], components: Optional[List[str]], log: Callable[[str], None]):
        self.sparseptron = sparseptron
        self.min_update = min_update
        self.dc_admm = dc_admm
        self.components = components
        self.log = log
        self.state: Dict[str, Dict[str, Any]] = {}

    def pipes(self, nlp: Language) -> List[SparsePipe]:
        found = [(name, pipe) for name, pipe in nlp.pipeline if isinstance(pipe, SparsePipe)]
        if self.components is not None:
            missing = sorted(set(self.components) - {name for name, _ in found})
            if missing:
                raise ValueError(f"spacy_sparse.sparsity.v1: no sparse component named {missing}")
            found = [(n, p) for n, p in found if n in self.components]
        if not found:
            raise ValueError("spacy_sparse.sparsity.v1: the pipeline has no sparse component to act on")
        return [p for _, p in found]

    def __call__(self, nlp: Language, args: Dict[str, Any]) -> None:
        epoch = int(args.get("epoch", 0))
        pipes = self.pipes(nlp)
        for pipe in pipes:
            if pipe.sparse is None:
                continue
            with pipe.sparse.guard.writing():  # the methods change the arrays predictions read
                self.step(nlp, pipe, epoch)
        done = all(self.finished(pipe) for pipe in pipes)
        for pipe in pipes:
            pipe.compression_done = done

    def step(self, nlp: Language, pipe: SparsePipe, epoch: int) -> None:
        """What the methods do for one component before one update."""
        st = self.state.setdefault(pipe.name, {"epoch": -1, "phase": None})
        if epoch != st["epoch"]:
            self.new_epoch(pipe, st, epoch)
            st["epoch"] = epoch
            self.record(nlp, pipe, st, epoch)
        if st["phase"] == "select":
            model = pipe.sparse
            if model.instances - st["last_prox"] >= self.sparseptron.every:
                st["last_prox"] = model.instances
                prox_step(model, self.sparseptron)

    def finished(self, pipe: SparsePipe) -> bool:
        """Whether every method has reached its last phase for this
        component: selection over (the refit runs, with min-update if asked)
        and, with DC-ADMM, the model predicting with the discrete u. Only
        such checkpoints are what the recipe promises, so the component
        reports this to spaCy's scorer (`sparse_compressed`), and the
        recipes weight it so that model-best is always one of them."""
        st = self.state.get(pipe.name)
        if pipe.sparse is None or st is None or st["phase"] != "train":
            return False
        if self.dc_admm is None:
            return True
        admm = st.get("admm")
        return pipe.sparse.admm.fixed is not None and admm is not None and self.admm_stopped(admm[1])

    def admm_stopped(self, admm: DcAdmm) -> bool:
        """Whether DC-ADMM has made its last iteration (max_iterations);
        without a cap it iterates to the end, and every checkpoint with
        discrete weights counts as finished."""
        cap = self.dc_admm.max_iterations
        return cap is None or admm.iterations >= cap

    def record(self, nlp: Language, pipe: SparsePipe, st: Dict[str, Any], epoch: int) -> None:
        """One row per component and epoch in nlp.meta["sparsity"] (saved in
        meta.json with every checkpoint): the phase, templates alive,
        features made, the learner's memory, ADMM's residuals."""
        model = pipe.sparse
        row = {"epoch": epoch, "phase": st["phase"], "templates_alive": len(survivors(model)),
               "features": int(model.n_rows[0]), "training_bytes": model.training_bytes()}
        row.update(st.get("admm_report", {}))
        nlp.meta.setdefault("sparsity", {}).setdefault(pipe.name, []).append(row)

    def new_epoch(self, pipe: SparsePipe, st: Dict[str, Any], epoch: int) -> None:
        """Phase changes happen at epoch starts."""
        sp = self.sparseptron
        if st["phase"] is None:
            if sp is not None and sp.budget < len(pipe.sparse.templates):
                st.update(phase="select", last_prox=pipe.sparse.instances, refit_epoch=sp.epochs)
                start_selection(pipe.sparse)
                if sp.loss == "perceptron":
                    st["own_learner"] = {k: pipe.cfg[k] for k in PERCEPTRON_LOSS}
                    pipe.cfg.update(PERCEPTRON_LOSS)
                self.log(f"{pipe.name}: sparseptron selects {sp.budget} of {len(pipe.sparse.templates)} templates "
                         f"for {sp.epochs} epochs (prox step every {sp.every} instances)")
            else:
                st.update(phase="train", refit_epoch=0)
                self.start_refit(pipe, st)
        elif st["phase"] == "select":
            alive = len(survivors(pipe.sparse))
            self.log(f"{pipe.name} epoch {epoch}: sparseptron templates alive {alive}, "
                     f"features {int(pipe.sparse.n_rows[0])}, memory {pipe.sparse.training_bytes():,} bytes")
            if epoch >= st["refit_epoch"]:
                chosen = debias_templates(pipe.sparse, sp)
                keys = pipe.sparse.feature_keys(chosen) if sp.refit == "frozen" else None
                key_mix = pipe.sparse.key_mix
                pipe.cfg.update(st.pop("own_learner", {}))
                pipe.refit(chosen)
                if keys is not None:
                    pipe.sparse.preset_features(keys, key_mix)
                    self.log(f"{pipe.name}: the refit learns the {sum(map(len, keys))} features selection kept")
                st["phase"] = "train"
                self.log(f"{pipe.name}: refit (debias) on {len(chosen)} templates: {', '.join(chosen)}")
                self.start_refit(pipe, st)
        if st["phase"] == "train" and self.dc_admm is not None:
            self.admm_epoch(pipe, st, epoch)

    def start_refit(self, pipe: SparsePipe, st: Dict[str, Any]) -> None:
        if self.min_update is not None:
            pipe.min_updates = self.min_update
            self.log(f"{pipe.name}: min-update k = {self.min_update}")

    def admm_epoch(self, pipe: SparsePipe, st: Dict[str, Any], epoch: int) -> None:
        """One ADMM iteration ends at each epoch start (the epoch before was
        its w-step)."""
        since = epoch - st["refit_epoch"] - self.dc_admm.start_epoch
        if since < 0:
            return
        admm = st.get("admm")
        if admm is None or admm[0] is not pipe.sparse:
            admm = st["admm"] = (pipe.sparse, DcAdmm(self.dc_admm))
            if self.dc_admm.closed:
                pipe.sparse.closed = True
            admm[1].begin(pipe.sparse)
            self.log(f"{pipe.name}: DC-ADMM starts (zeta {self.dc_admm.zeta}, rho {self.dc_admm.rho})")
            return
        if self.dc_admm.max_iterations is not None and self.admm_stopped(admm[1]):
            return
        report = admm[1].iterate(pipe.sparse)
        st["admm_report"] = report
        stats = pipe.sparse.stats()
        self.log(f"{pipe.name} epoch {epoch}: ADMM iteration {report['admm_iter']}, primal {report['primal']:.3g}, "
                 f"dual {report['dual']:.3g}{' (converged)' if report['converged'] else ''}; "
                 f"nonzero features {stats['nonzero_features']}, distinct weights {stats['distinct_weights']}")


@registry.callbacks("spacy_sparse.sparsity.v1")
def make_sparsity_callback(
    sparseptron: Optional[Dict[str, Any]] = None,
    min_update: Optional[Dict[str, Any]] = None,
    dc_admm: Optional[Dict[str, Any]] = None,
    components: Optional[List[str]] = None,
) -> Callable[[Language, Dict[str, Any]], None]:
    """Sparsity methods for `[training.before_update]`: sparseptron
    (budget, every, epochs, group_weight, coarse_to_fine), min_update (k),
    dc_admm (zeta, kappa, eta, delta, rho, xi, lambda0, lambda0_feature,
    lambda1, lambda2, eps_primal, eps_dual, step, start_epoch); components:
    the sparse components to act on (default: all)."""
    sp = _settings(SparseptronSettings, sparseptron, "sparseptron")
    admm = _settings(AdmmSettings, dc_admm, "dc_admm")
    k = None
    if min_update is not None:
        if not isinstance(min_update, dict) or set(min_update) - {"k"}:
            raise ValueError("[training.before_update.min_update] takes one setting, k")
        k = check_min_updates(min_update.get("k", 1), "min_update.k")
    if sp is None and k is None and admm is None:
        raise ValueError("spacy_sparse.sparsity.v1 needs at least one of sparseptron, min_update, dc_admm")
    return SparsityCallback(sp, k, admm, components, lambda text: msg.info(text))


@registry.callbacks("spacy_sparse.finalize.v1")
def make_finalize_callback() -> Callable[[Language], Language]:
    """For `[training.before_to_disk]`: logs the size of what each sparse
    component writes. Saving never changes training state, so this runs at
    every checkpoint safely."""

    def finalize(nlp: Language) -> Language:
        for name, pipe in nlp.pipeline:
            if isinstance(pipe, SparsePipe) and pipe.sparse is not None:
                s = pipe.sparse.stats()
                msg.info(f"{name}: saving {s['templates']} templates, {s['nonzero_features']} nonzero features, "
                         f"{s['distinct_weights']} distinct weights, {s['bytes']:,} bytes")
        return nlp

    return finalize
