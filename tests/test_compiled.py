"""Kernels compiled ahead of time (runtime/compiled.py): same labels as the
jit, never called with arguments they were not built for."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from spacy_sparse.runtime import compiled
from conftest import EWT, ROOT, need

# Labels every shipped pipeline (and one saved with float weights) writes for
# raw EWT dev text, as a digest; whether numba was imported at all (by a jitted kernel); and whether numpy.ma
# was, by the time the shipped pipelines had labelled (np.unique imports it: 15-25 ms of a cold start).
PROBE = r"""
import hashlib, sys
import spacy
from spacy.training.converters import conllu_to_docs
import spacy_sparse
from spacy_sparse.runtime import compiled
lines = open(sys.argv[1], encoding="utf8").read().split("\n\n")[:300]
texts = [d.text for d in conllu_to_docs("\n\n".join(lines) + "\n\n", n_sents=10, no_print=True)]
texts += ["", "   ", "Two  spaces\n\nand a blank line."]
out = []
for nlp in [spacy_sparse.load_default("full"), spacy_sparse.load_default("tagger"), spacy.load(sys.argv[2])]:
    masked = "numpy.ma" in sys.modules  # the float pipeline's parser codes its values with np.unique
    for doc in nlp.pipe(texts, batch_size=7):
        out.append(" ".join(f"{t.tag_}/{t.pos_}/{t.head.i}/{t.dep_}/{int(bool(t.is_sent_start))}" for t in doc))
print(bool(compiled.COMPILED), hashlib.sha256("\n".join(out).encode()).hexdigest(), "numba" in sys.modules, masked)
"""


def _probe(env, float_pipeline):
    dev = need(EWT / "en_ewt-ud-dev.conllu")
    result = subprocess.run([sys.executable, "-c", PROBE, str(dev), str(float_pipeline)], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    aot, digest, numba, masked = result.stdout.strip().split(" ")
    return aot == "True", digest, numba == "True", masked == "True"


@pytest.mark.full
def test_compiled_kernels_label_as_the_jit_and_skip_numbas_compiler(tmp_path):
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("compile-kernels links with the system's C compiler, and this machine has none")
    env = dict(os.environ, SPACY_SPARSE_AOT_DIR=str(tmp_path))
    build = subprocess.run([sys.executable, "-m", "spacy_sparse", "compile-kernels"], env=env, cwd=ROOT,
                           capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stderr[-2000:] + build.stdout[-2000:]
    index = json.loads(next(tmp_path.glob("*.json")).read_text(encoding="utf8"))
    assert {e["kernel"] for e in index["exports"]} == set(compiled.ENTRY_KERNELS)
    # the sequence kernels in their own library (built without AVX-512), the others in the main one
    library = {e["kernel"]: e["library"] for e in index["exports"]}
    name = compiled.module_name()
    assert {library[k] for k in compiled.NO_AVX512} == {name + compiled.NARROW_SUFFIX}
    assert {library[k] for k in compiled.ENTRY_KERNELS if k not in compiled.NO_AVX512} == {name}

    # a truncated library (a build cut short, a full disk) or one writable by others is never mapped: the jit serves
    lib = tmp_path / index["libraries"][name]["file"]
    data = lib.read_bytes()
    probe = [sys.executable, "-c", "from spacy_sparse.runtime import compiled; print(bool(compiled.COMPILED))"]
    lib.write_bytes(data[:len(data) // 2])
    cut = subprocess.run(probe, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert cut.returncode == 0 and cut.stdout.strip() == "False", cut.stderr[-2000:]
    lib.write_bytes(data)
    os.chmod(lib, 0o666)
    assert subprocess.run(probe, env=env, cwd=ROOT, capture_output=True, text=True).stdout.strip() == "False"
    os.chmod(lib, 0o644)
    assert subprocess.run(probe, env=env, cwd=ROOT, capture_output=True, text=True).stdout.strip() == "True"

    # a pipeline with float weights, as the float recipes train and save them
    import spacy_sparse
    from spacy_sparse.cli.run import as_float_weights

    nlp = spacy_sparse.load_default("full")
    as_float_weights(nlp)
    nlp.to_disk(tmp_path / "float_pipeline")
    aot, aot_digest, aot_numba, aot_masked = _probe(env, tmp_path / "float_pipeline")
    jit, jit_digest, jit_numba, _ = _probe(dict(env, SPACY_SPARSE_AOT="0"), tmp_path / "float_pipeline")
    assert aot and not jit
    assert aot_digest == jit_digest
    assert jit_numba and not aot_numba  # loading and labelling did not even import numba
    assert not aot_masked  # nor numpy.ma (numba's typing imports it, so only without numba)


def test_a_library_is_mapped_only_if_it_is_the_file_built(tmp_path, monkeypatch):
    """The index names each library with its size and SHA-256: a planted or altered file is not loaded, and a
    file someone else may write is not trusted."""
    import hashlib

    monkeypatch.setenv("SPACY_SPARSE_AOT_DIR", str(tmp_path))
    os.chmod(tmp_path, 0o755)
    lib = tmp_path / "_spacy_sparse_aot_x.cpython-311-x86_64-linux-gnu.so"
    lib.write_bytes(b"\x7fELF planted")
    os.chmod(lib, 0o644)
    real = {"file": lib.name, "bytes": lib.stat().st_size, "sha256": hashlib.sha256(lib.read_bytes()).hexdigest()}
    assert compiled._load_library(dict(real, sha256="0" * 64)) is None  # never handed to the loader
    assert compiled._load_library(dict(real, bytes=3)) is None
    with pytest.raises(ImportError):  # the recorded file is handed to Python's loader (which refuses this one)
        compiled._load_library(real)
    os.chmod(lib, 0o666)
    assert not compiled._trusted(lib) and compiled._load_library(real) is None
    os.chmod(lib, 0o644)
    os.chmod(tmp_path, 0o777)
    assert not compiled._trusted(lib)
    os.chmod(tmp_path, 0o755)


def test_the_build_key_covers_every_module_the_kernels_import():
    """A constant changed in codes.py (or any module a kernel imports) must change the key of numba's cache and of
    the build, or stale kernels run."""
    import re

    from spacy_sparse.runtime import jit_cache as sources

    listed = {(sources.KERNEL_DIR / name).resolve() for name in sources.SOURCES}
    for name in sources.SOURCES:
        text = (sources.KERNEL_DIR / name).read_text(encoding="utf8")
        base = (sources.KERNEL_DIR / name).resolve().parent
        for dots, module in re.findall(r"^\s*from (\.+)(\w+) import", text, re.M):
            target = base
            for _ in range(len(dots) - 1):
                target = target.parent
            path = (target / f"{module}.py").resolve()
            assert path in listed, f"{name} imports {path.name}, which the build key does not cover"


def test_a_build_for_other_sources_or_a_broken_one_is_not_loaded(tmp_path, monkeypatch):
    monkeypatch.setenv("SPACY_SPARSE_AOT_DIR", str(tmp_path))
    name = compiled.module_name()
    (tmp_path / "_spacy_sparse_aot_0000.json").write_text('{"exports": []}', encoding="utf8")
    assert compiled._load() == {}  # nothing for these sources
    (tmp_path / f"{name}.json").write_text("{not json", encoding="utf8")
    assert compiled._load() == {}
    (tmp_path / f"{name}.json").write_text('{"exports": [{"kernel": "find_many", "name": "x", "args": []}]}',
                                           encoding="utf8")
    (tmp_path / f"{name}.so").write_bytes(b"\x7fELF not a library")
    assert compiled._load() == {}
    monkeypatch.setenv("SPACY_SPARSE_AOT", "0")
    assert compiled._load() == {}


def test_the_narrow_library_turns_every_avx512_feature_off():
    host = "+sse4.2,+avx2,+avx512f,-avx512fp16,+avx512vl,+fma"
    assert compiled.aot_features(host) == "+sse4.2,+avx2,-avx512f,-avx512fp16,-avx512vl,+fma"
    assert compiled.aot_features("") == ""


def test_a_build_is_keyed_by_the_cpu_it_was_made_on(monkeypatch):
    here = compiled.module_name()
    monkeypatch.setattr(compiled, "cpu_signature", lambda: "model name : another processor\nflags : sse2")
    assert compiled.module_name() != here


def test_arguments_are_checked_before_a_compiled_kernel_runs():
    specs = [{"array": "int64", "ndim": 1, "readonly": False}, "int64", "bool", "none",
             {"tuple": [{"array": "float32", "ndim": 2, "readonly": True}, "float64"]}]
    check = compiled.arguments_check(specs)
    good = np.zeros(3, dtype=np.int64)
    rows = np.zeros((2, 3), dtype=np.float32)
    assert not check((None, 5, True, None, (rows, 0.5)))  # before any call passed, too
    assert not check((good, 5, True, None, (None, 0.5)))
    assert check((good, 5, True, None, (rows, 0.5)))
    assert check((good, np.int64(5), np.bool_(False), None, (rows[:1], 1.0)))
    assert not check((good.astype(np.int32), 5, True, None, (rows, 0.5)))  # same item size or not: no
    assert not check((good.astype(np.float64), 5, True, None, (rows, 0.5)))
    assert not check((np.zeros(6, dtype=np.int64)[::2], 5, True, None, (rows, 0.5)))  # not C order
    frozen = good.copy()
    frozen.flags.writeable = False
    assert not check((frozen, 5, True, None, (rows, 0.5)))  # the kernel may write it
    assert not check((good, True, True, None, (rows, 0.5)))  # a bool is no int64
    assert not check((good, 1 << 63, True, None, (rows, 0.5)))
    assert not check((good, 5, True, None, (rows.T, 0.5)))
    assert not check((good, 5, True, None, (rows, 0.5, 1)))
    assert not check((good, 5, True, None))


def test_a_check_with_its_memory_agrees_with_checking_every_argument():
    """Whatever the calls before it passed or failed, a check answers as testing each argument afresh would:
    the memory of the last call (per owner, with an anchor) only skips tests of the very objects that passed."""
    rng = np.random.default_rng(0)
    array = {"array": "int64", "ndim": 1, "readonly": False}
    frozen = {"array": "float32", "ndim": 2, "readonly": True}
    specs = [array, {"tuple": [array, frozen, "float64", "none"]}, "int64", {"tuple": [array, "bool"]}]
    good = [np.zeros(3, dtype=np.int64), np.zeros(5, dtype=np.int64)]
    rows = [np.zeros((2, 3), dtype=np.float32), np.ones((1, 4), dtype=np.float32)]
    bad = [np.zeros(3, dtype=np.int32), np.zeros((2, 2), dtype=np.int64), np.zeros(6, dtype=np.int64)[::2],
           rows[0].T, 7, None, (1, 2)]

    def pick(options):
        return options[rng.integers(len(options))]

    def call():
        args = [pick(good), (pick(good), pick(rows), 0.5, None), 3, (pick(good), True)]
        for _ in range(rng.integers(0, 3)):  # spoil an argument or a member now and then
            i = int(rng.integers(len(args)))
            if isinstance(args[i], tuple) and rng.random() < 0.7:
                group = list(args[i])
                group[int(rng.integers(len(group)))] = pick(bad)
                args[i] = tuple(group) if rng.random() < 0.9 else tuple(group[:-1])
            else:
                args[i] = pick(bad)
        return tuple(args)

    tests = [compiled._value_check(spec) for spec in specs]
    for anchor in (None, 0):
        check = compiled.arguments_check(specs, anchor=anchor)
        answers = set()
        for _ in range(600):
            args = call()
            want = all(test(a) for test, a in zip(tests, args))
            assert check(args) == want
            answers.add(want)
        assert answers == {True, False}


def counted_checks(monkeypatch):
    """The ids of the values the leaf checks made from now on look at, in order."""
    seen = []
    real = compiled._value_check

    def counting(spec):
        inner = real(spec)
        return lambda value: seen.append(id(value)) or inner(value)

    monkeypatch.setattr(compiled, "_value_check", counting)
    return seen


def test_arguments_of_the_last_passing_call_are_not_checked_again(monkeypatch):
    """A model's arrays come back at every call: the same objects as in the
    last call that passed skip their checks; any other object is checked."""
    seen = counted_checks(monkeypatch)
    check = compiled.arguments_check([{"array": "int64", "ndim": 1, "readonly": False}, "int64"])
    model, batch = np.zeros(3, dtype=np.int64), np.zeros(2, dtype=np.int64)
    assert check((model, 5)) and len(seen) == 2
    seen.clear()
    assert check((model, 7)) and seen == [id(7)]  # the model array: not checked again
    seen.clear()
    assert check((batch, 7)) and seen == [id(batch)]
    assert not check((batch.astype(np.int32), 7))  # another object is checked, and fails
    assert check((batch, 7))  # a failed call leaves what passed before
    # a group of arrays comes as a new tuple at each call: the same objects inside skip their checks too
    check = compiled.arguments_check([{"tuple": [{"array": "int64", "ndim": 1, "readonly": False}, "int64"]}])
    assert check(((model, 5),))
    seen.clear()
    assert check(((model, 5),)) and seen == []
    assert check(((batch, 5),)) and seen  # another array inside: the group is checked
    assert not check(((batch.astype(np.int32), 5),))



def test_a_kernel_called_by_several_owners_remembers_each_owners_last_call(monkeypatch):
    """With an anchor (compiled.ANCHORS), the last call is kept per object in that place: components that call
    one kernel in turn skip the checks of their own arrays; a new object is still checked, and fails if wrong."""
    seen = counted_checks(monkeypatch)
    spec = {"array": "int64", "ndim": 1, "readonly": False}
    check = compiled.arguments_check([spec, spec], anchor=0)
    owners = [np.zeros(2, dtype=np.int64) for _ in range(3)]
    rows = [np.zeros(4, dtype=np.int64) for _ in range(3)]
    for owner, row in zip(owners, rows):
        assert check((owner, row))
    seen.clear()
    for owner, row in zip(owners, rows):  # each owner's last call: nothing is checked again
        assert check((owner, row))
    assert seen == []
    fresh = np.zeros(4, dtype=np.int64)
    assert check((owners[1], fresh)) and seen == [id(fresh)]
    assert not check((owners[2], fresh.astype(np.int32)))
    compiled.forget_arguments()
    seen.clear()
    assert check((owners[0], rows[0])) and len(seen) == 2


def test_the_kernels_of_a_load_keep_none_of_its_temporaries():
    """A kernel that runs once per loaded model (compiled.ONE_SHOT) is handed that load's temporaries; its
    check keeps no reference to them, so they go when the load is done, where a labelling kernel's check
    keeps the last call's arguments until forget_arguments."""
    import gc
    import weakref

    spec = [{"array": "int64", "ndim": 1, "readonly": False}]
    for remember in (True, False):
        check = compiled.arguments_check(spec, remember=remember)
        temporary = np.zeros(4, dtype=np.int64)
        gone = weakref.ref(temporary)
        assert check((temporary,))
        del temporary
        gc.collect()
        assert (gone() is None) is (not remember)
        compiled.forget_arguments()
        gc.collect()
        assert gone() is None
    assert {"expand_rows", "fill_tables", "hot_rows", "span_tables"} <= compiled.ONE_SHOT
    assert not {"predict_sequence", "predict_parse"} & compiled.ONE_SHOT


def test_a_training_step_lets_the_kernels_drop_the_last_layout(ewt_refs):
    """The dense rows an evaluation labelled with go at the next training
    step, though the compiled kernel's check held them as its last call's."""
    import gc
    import weakref

    from conftest import to_examples, train_tagger

    nlp, tagger = train_tagger(ewt_refs["train"][:60], epochs=1)
    list(nlp.pipe([nlp.make_doc(r.text) for r in ewt_refs["dev"][:5]]))
    layout = weakref.ref(tagger.sparse._dense)
    nlp.update(to_examples(nlp, ewt_refs["train"][60:76]))
    gc.collect()
    assert layout() is None


def test_prefer_falls_back_to_the_jit_for_other_arguments(monkeypatch):
    calls = []
    spec = [{"array": "int64", "ndim": 1, "readonly": False}]
    monkeypatch.setitem(compiled.COMPILED, "probe", [(compiled.arguments_check(spec),
                                                      lambda a: calls.append("compiled"))])
    monkeypatch.setitem(compiled.ENTRY_KERNELS, "probe", "probe_module")
    monkeypatch.setattr(compiled, "jitted", lambda name: lambda a: calls.append("jit"))
    kernel = compiled.prefer("probe")
    kernel(np.zeros(2, dtype=np.int64))
    kernel(np.zeros(2, dtype=np.int32))
    kernel([1, 2])
    assert calls == ["compiled", "jit", "jit"]


def test_every_entry_kernel_is_bound_to_its_jitted_kernel_or_a_compiled_one():
    from numba.core.registry import CPUDispatcher

    for name in compiled.ENTRY_KERNELS:
        bound = getattr(compiled, name)
        assert isinstance(compiled.jitted(name), CPUDispatcher)
        assert bound is compiled.jitted(name) or (name in compiled.COMPILED and bound.__name__ == name)
