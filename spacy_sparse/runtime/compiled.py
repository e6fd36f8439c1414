"""The inference kernels compiled ahead of time, when a build of them exists.

Why: the first call of any numba kernel in a process, cached or not, sets up
numba's compiler registries (about 0.25-0.3 s on the developers' machines),
and each further kernel loads its cached code (about 7 ms). That was most of
the cold start of a shipped pipeline over `spacy.blank`. `python -m
spacy_sparse compile-kernels` compiles the kernels that loading and labelling
call into extension modules with numba's own ahead-of-time compiler
(`numba.pycc`, for this machine's CPU: one module with its full instruction
set, one without AVX-512 for the sequence kernels, which run faster so),
and this module hands those out
instead of the jitted ones. Without a build, or for arguments of other types
than it was built for (training calls some of these kernels too), the jitted
kernel runs: the same code, so the same results (a test compares both on EWT).

Nothing here imports numba unless a kernel falls back to the jit: with a
build, a process that loads and labels never imports it (another 0.15 s).

A build is keyed by a hash of the kernels' sources (jit_cache.py: every module
whose code or constants they compile), the numba, numpy and Python versions
and the CPU's model and flags; one built for other sources or another
processor is never loaded. Its index records each library's file, size and
SHA-256, and a library is mapped only if it is exactly that file, owned by
this user (or root) and writable by no one else; builds are moved into
place only once they are on disk. It lives
beside numba's own cache (`kernels/__pycache__`), or in $SPACY_SPARSE_AOT_DIR.
SPACY_SPARSE_AOT=0 turns it off.

The compiled functions take exactly the argument types they were built for.
Numba's wrapper checks little of that (an int32 array where float32 rows are
expected would be read as floats), so every call is checked here first:
dtype, dimensions, C order and writeability of each array, the type of each
number, the shape of each tuple.
"""
import hashlib
import importlib
import importlib.util
import json
import os
import platform
import shutil
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .jit_cache import KERNEL_DIR, sources_digest

ENV_SWITCH = "SPACY_SPARSE_AOT"
ENV_DIR = "SPACY_SPARSE_AOT_DIR"
# the kernels compiled without AVX-512 (aot_features), in a library of their own; the names of that set are part
# of the fingerprint, so a build made otherwise is made again
NO_AVX512 = ("predict_sequence", "word_rows", "word_sums")
NARROW_SUFFIX = "_narrow"

# The kernels that loading a model and labelling with it call (and `tag`'s writer), and their modules.
ENTRY_KERNELS: Dict[str, str] = {
    "fill_tables": "hashing", "find_many": "hashing", "find_words": "hashing",
    "expand_rows": "rows", "scatter_rows": "rows", "span_tables": "rows", "narrow_table": "rows", "hot_rows": "rows",
    "word_rows": "sequence", "word_sums": "sequence", "predict_sequence": "sequence", "known_labels": "sequence",
    "predict_parse": "parser", "upos_lookup": "upos",
    "find_pieces": "jsonl", "put_pieces": "jsonl", "join_pieces": "jsonl",
}

# The kernels several owners call in turn (each sequence component, each lexicon), and the argument that tells
# the owners apart (the same object at every call of one owner: its model's templates or seeds, its word-row
# columns, its table): their checks remember the last call of each owner (arguments_check's `anchor`).
ANCHORS: Dict[str, int] = {"predict_sequence": 2, "word_rows": 2, "word_sums": 1, "find_many": 0, "find_words": 0,
                           "known_labels": 0}
# how many owners' last calls such a check remembers (when full, it starts afresh)
OWNERS = 16

# The kernels a model's loading calls once, on temporaries of that load (arguments_check keeps nothing of theirs).
ONE_SHOT = frozenset({"fill_tables", "expand_rows", "scatter_rows", "span_tables", "narrow_table", "hot_rows"})

Check = Callable[[Sequence[Any]], bool]


def cpu_signature() -> str:
    """The processor's model and instruction-set flags: a build uses the
    host's instructions, so an environment moved to another CPU must not load
    it (it could stop on an illegal instruction)."""
    try:
        with open("/proc/cpuinfo", encoding="utf8", errors="replace") as f:
            wanted = ("model name", "flags", "Features", "CPU part")
            lines = [line.strip() for line in f if line.startswith(wanted)]
        if lines:
            return "\n".join(sorted(set(lines)))
    except OSError:
        pass
    return f"{platform.processor()} {platform.machine()}"


def fingerprint() -> str:
    """What a build must match: the kernels' sources, the versions that
    compile them and the CPU it was built on."""
    digest = hashlib.sha256(sources_digest().encode("ascii"))
    versions = [metadata.version("numba"), np.__version__, sys.version, platform.machine(), cpu_signature(),
                "no-avx512: " + " ".join(NO_AVX512)]
    digest.update(" ".join(versions).encode("utf8"))
    return digest.hexdigest()[:20]


def build_dir() -> Path:
    return Path(os.environ.get(ENV_DIR) or KERNEL_DIR / "__pycache__")


def module_name() -> str:
    return f"_spacy_sparse_aot_{fingerprint()}"


# ---- argument checks ------------------------------------------------------

def describe(numba_type: Any) -> Optional[Any]:
    """A JSON description of a numba argument type this module can check, or
    None (the kernel is then left to the jit)."""
    from numba.core import types

    if isinstance(numba_type, types.Array):
        if numba_type.layout != "C" or not numba_type.aligned:
            return None
        return {"array": str(numba_type.dtype), "ndim": numba_type.ndim, "readonly": not numba_type.mutable}
    if isinstance(numba_type, types.Boolean):
        return "bool"
    if isinstance(numba_type, types.NoneType):
        return "none"
    if isinstance(numba_type, types.Integer):
        return str(numba_type)
    if isinstance(numba_type, types.Float):
        return str(numba_type)
    if isinstance(numba_type, types.BaseTuple):
        parts = [describe(t) for t in numba_type.types]
        return None if any(p is None for p in parts) else {"tuple": parts}
    return None


def _array_check(dtype: np.dtype, ndim: int, readonly: bool) -> Callable[[Any], bool]:
    # a call checks every argument, so this runs about a hundred times per nlp(text) of a full pipeline:
    # the flags object is fetched once, and a dtype is usually the very object asked for
    def check(value: Any) -> bool:
        if type(value) is not np.ndarray or value.ndim != ndim:
            return False
        if value.dtype is not dtype and value.dtype != dtype:
            return False
        flags = value.flags
        if readonly:
            return flags.c_contiguous and flags.aligned
        return flags.carray  # C-contiguous, aligned and writeable, in one look-up
    return check


def _scalar_check(name: str) -> Callable[[Any], bool]:
    if name == "bool":
        return lambda value: type(value) is bool or type(value) is np.bool_
    if name == "none":
        return lambda value: value is None
    if name == "int64":  # what numba makes of a Python int
        return lambda value: (type(value) is int and -(1 << 63) <= value < (1 << 63)) or type(value) is np.int64
    if name == "float64":
        return lambda value: type(value) is float or type(value) is np.float64
    numpy_type = np.dtype(name).type
    return lambda value: type(value) is numpy_type


def _value_check(spec: Any) -> Callable[[Any], bool]:
    if isinstance(spec, str):
        return _scalar_check(spec)
    if "array" in spec:
        return _array_check(np.dtype(spec["array"]), int(spec["ndim"]), bool(spec["readonly"]))
    parts = [_value_check(part) for part in spec["tuple"]]

    def check(value: Any) -> bool:
        if type(value) is not tuple or len(value) != len(parts):
            return False
        for c, v in zip(parts, value):
            if not c(v):
                return False
        return True
    return check


# stands for "no last call" (None could be an argument)
_NOTHING = object()
# what each remembering check holds: [last call's arguments, last call per owner] and how many there are
# (forget_arguments)
_MEMORIES: List[Tuple[List[Any], int]] = []


def forget_arguments() -> None:
    """Let every kernel's check drop the arguments of its last call. A model
    whose weights change (a training step) calls this, so that the
    prediction layouts it drops then, which a check still held (a parser's,
    0.06 GB at the end of a full EWT run), go at once instead of staying
    until the next evaluation makes new ones beside them. The next call of
    each kernel checks its arguments afresh (microseconds)."""
    for last, n in _MEMORIES:
        last[0] = (_NOTHING,) * n
        last[1] = {}


def arguments_check(specs: Sequence[Any], remember: bool = True, anchor: Optional[int] = None) -> Check:
    """True when a call's arguments have exactly the described types.

    The arguments of the last call that passed are kept (references, so
    their ids cannot be reused), and an argument that is the very same
    object again, or a member of a group that is the very same object in
    the same place of the last call's group, is not checked again: a
    model's arrays, templates and label masks come back at every call (in a
    new tuple around them), and checking them all made a short nlp(text)
    spend a tenth of its time here. With `anchor`, the last call is kept per
    object in that place (up to OWNERS of them at a time): several
    components call one kernel in turn, each with its own model's arrays.
    An array keeps its dtype and layout for life; only its shape or
    writeable flag could be changed in place, which nothing does to the
    arrays passed here. With `remember` False (the kernels that run once per
    loaded model, whose arguments are that load's temporaries: ONE_SHOT)
    nothing is kept, so those go when the load is done (they held 40 MB of
    the shipped pipeline).

    The check is Python written out for the specs (_check_source): one
    test per argument and member in a straight line, with no loop, zip or
    tuple per call (a loop's own machinery cost more than the tests)."""
    n = len(specs)
    nothing = (_NOTHING,) * n
    # [the last call's arguments, the last call per anchor object's id]
    last: List[Any] = [nothing, {}]
    if remember:
        _MEMORIES.append((last, n))
    env: Dict[str, Any] = {"last": last, "nothing": nothing, "NOTHING": _NOTHING, "OWNERS": OWNERS}
    code = compile(_check_source(specs, remember, anchor, env), "<arguments_check>", "exec")
    exec(code, env)  # noqa: S102 - our own text, made from the specs' shapes (no value of a spec enters it)
    return env["check"]


def _check_source(specs: Sequence[Any], remember: bool, anchor: Optional[int], env: Dict[str, Any]) -> str:
    """The text of a check of `specs` (arguments_check): leaf tests are the
    functions _value_check makes, put in `env` as t<i>_<j>."""
    lines = ["def check(args):",
             f"    if len(args) != {len(specs)}:",
             "        return False"]
    if anchor is None:
        lines.append("    b = last[0]")
    else:
        lines += ["    owner = args[%d]" % anchor,
                  "    b = last[1].get(id(owner), nothing)",
                  "    if b[%d] is not owner:" % anchor,
                  "        b = nothing"]
    for i, spec in enumerate(specs):
        lines += [f"    v = args[{i}]",
                  f"    if v is not b[{i}]:"]
        if isinstance(spec, dict) and "tuple" in spec:
            parts = spec["tuple"]
            lines += [f"        if type(v) is not tuple or len(v) != {len(parts)}:",
                      "            return False",
                      f"        w = b[{i}]",
                      "        if w is NOTHING:"]
            for j, part in enumerate(parts):
                env[f"t{i}_{j}"] = _value_check(part)
                lines += [f"            if not t{i}_{j}(v[{j}]):",
                          "                return False"]
            lines.append("        else:")
            for j in range(len(parts)):
                # a member that is the one in the same place of the last call's group (of this width) is not
                # checked again
                lines += [f"            x = v[{j}]",
                          f"            if x is not w[{j}] and not t{i}_{j}(x):",
                          "                return False"]
        else:
            env[f"t{i}"] = _value_check(spec)
            lines += [f"        if not t{i}(v):",
                      "            return False"]
    if remember:
        if anchor is None:
            lines.append("    last[0] = tuple(args)  # (the same object when args is a tuple)")
        else:
            lines += ["    owners = last[1]",
                      "    key = id(owner)",
                      "    if key not in owners and len(owners) >= OWNERS:",
                      # start afresh: threads may share this check, and a new dict is one atomic step where taking
                      # one owner out of a dict another thread writes to is not
                      "        owners = last[1] = {}",
                      "    owners[key] = tuple(args)"]
    lines.append("    return True")
    return "\n".join(lines) + "\n"


# ---- loading --------------------------------------------------------------

def _load() -> Dict[str, List[Tuple[Check, Callable]]]:
    """name -> [(check, compiled function)] from a build for these sources, or {}."""
    if os.environ.get(ENV_SWITCH, "1") == "0":
        return {}
    try:
        name = module_name()
        index_path = build_dir() / f"{name}.json"
        if not index_path.exists():
            return {}
        if not _trusted(index_path):
            return {}
        index = json.loads(index_path.read_text(encoding="utf8"))
        libraries = index["libraries"]
        modules = {library: _load_library(libraries[library]) for library in {e["library"] for e in index["exports"]}}
        if any(module is None for module in modules.values()):
            return {}
        out: Dict[str, List[Tuple[Check, Callable]]] = {}
        for entry in index["exports"]:
            function = getattr(modules[entry["library"]], entry["name"])
            check = arguments_check(entry["args"], remember=entry["kernel"] not in ONE_SHOT,
                                    anchor=ANCHORS.get(entry["kernel"]))
            out.setdefault(entry["kernel"], []).append((check, function))
        return out
    except (OSError, ImportError, ValueError, KeyError, TypeError, AttributeError):
        return {}  # a broken or foreign build: the jitted kernels serve


def _trusted(path: Path) -> bool:
    """A regular file that this user (or root) owns and that no one else
    may write, in a directory no one else may write: nothing planted by
    another user is loaded as native code."""
    try:
        for p in (path.parent, path):
            st = p.lstat()
            if st.st_uid not in (os.getuid(), 0) or st.st_mode & 0o022:
                return False
        return path.is_file() and not path.is_symlink()
    except (OSError, AttributeError):  # no getuid: not a POSIX system, no build
        return False


def _load_library(entry: Dict[str, Any]) -> Any:
    """The extension module the index records (its file, size and
    SHA-256), or None if the file is missing, untrusted, or not the one
    built (truncated, replaced): a bad library is never mapped."""
    library = build_dir() / Path(entry["file"]).name
    if not _trusted(library) or library.stat().st_size != entry["bytes"]:
        return None
    data = library.read_bytes()
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        return None
    name = entry["file"].split(".")[0]
    spec = importlib.util.spec_from_file_location(name, library)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _durable_replace(source: Path, target: Path) -> None:
    """Move `source` to `target` once its bytes are on disk, so a crash
    never leaves a truncated file under the final name."""
    with open(source, "rb") as f:
        os.fsync(f.fileno())
    os.replace(source, target)


COMPILED = _load()


def jitted(name: str) -> Callable:
    """The numba dispatcher of entry kernel `name` (imports numba)."""
    return getattr(importlib.import_module(f"spacy_sparse.kernels.{ENTRY_KERNELS[name]}"), name)


def prefer(name: str) -> Callable:
    """The compiled `name` for the arguments it was built for, else the
    jitted one, imported when first needed."""
    variants = COMPILED.get(name)
    if not variants:
        return jitted(name)
    fallback: List[Callable] = []

    def call(*args: Any) -> Any:
        for check, function in variants:
            if check(args):
                return function(*args)
        if not fallback:
            fallback.append(jitted(name))
        return fallback[0](*args)

    call.__name__ = call.__qualname__ = name
    return call


fill_tables = prefer("fill_tables")
find_many = prefer("find_many")
find_words = prefer("find_words")
expand_rows = prefer("expand_rows")
scatter_rows = prefer("scatter_rows")
span_tables = prefer("span_tables")
narrow_table = prefer("narrow_table")
hot_rows = prefer("hot_rows")
word_rows = prefer("word_rows")
word_sums = prefer("word_sums")
predict_sequence = prefer("predict_sequence")
known_labels = prefer("known_labels")
predict_parse = prefer("predict_parse")
upos_lookup = prefer("upos_lookup")
find_pieces = prefer("find_pieces")
put_pieces = prefer("put_pieces")
join_pieces = prefer("join_pieces")


# ---- building -------------------------------------------------------------

def build(signatures: Dict[str, List[Any]], verbose: bool = False) -> Path:
    """Compile `signatures` (kernel name -> numba signatures with return
    types, as the jitted dispatchers record them) into this machine's build;
    returns its index file. Arguments that cannot be checked leave that
    signature to the jit. The kernels of NO_AVX512 go into a library of
    their own, compiled without AVX-512 (aot_features)."""
    name = module_name()
    out_dir = build_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    # built aside and moved into place, so a process loading the build never
    # maps a half-written library
    staging = Path(tempfile.mkdtemp(prefix=".aot-", dir=out_dir))
    exports: List[Dict[str, Any]] = []
    libraries: Dict[str, Dict[str, Any]] = {}
    try:
        for wide in (True, False):
            library_name = name if wide else name + NARROW_SUFFIX
            part = {kernel: sigs for kernel, sigs in signatures.items() if (kernel not in NO_AVX512) == wide}
            made = _compile_library(library_name, part, staging, wide, verbose)
            if made:
                library = next(staging.glob(f"{library_name}.*"))
                data = library.read_bytes()
                libraries[library_name] = {"file": library.name, "bytes": len(data),
                                           "sha256": hashlib.sha256(data).hexdigest()}
                _durable_replace(library, out_dir / library.name)
                exports.extend(dict(export, library=library_name) for export in made)
        if not exports:
            raise ValueError("no kernel signature to compile (run the pipelines first)")
        index = staging / f"{name}.json"
        index.write_text(json.dumps({"fingerprint": fingerprint(), "libraries": libraries, "exports": exports}),
                         encoding="utf8")
        _durable_replace(index, out_dir / index.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir / f"{name}.json"


def _compile_library(name: str, signatures: Dict[str, List[Any]], staging: Path, wide: bool,
                     verbose: bool) -> List[Dict[str, Any]]:
    """One extension module `name` in `staging` with the kernels' checkable
    signatures; returns its exports (none: nothing was compiled)."""
    import llvmlite.binding as llvm
    import numba.pycc.compiler as pycc_compiler
    from numba.core import codegen
    from numba.pycc import CC

    cc = CC(name)
    cc.output_dir = str(staging)
    cc.target_cpu = llvm.get_host_cpu_name()  # built where it runs, for its CPU, as the jit compiles
    cc.verbose = verbose
    exports = []
    for kernel, sigs in sorted(signatures.items()):
        for k, sig in enumerate(sigs):
            specs = [describe(t) for t in sig.args]
            if any(spec is None for spec in specs):
                continue
            export = f"{kernel}__{k}"
            cc.export(export, sig)(jitted(kernel).py_func)
            exports.append({"kernel": kernel, "name": export, "args": specs})
    if not exports:
        return exports

    # the wrappers release the GIL while a kernel runs, as njit(nogil=True) does
    plain_flags = pycc_compiler.Flags

    class NoGilFlags(plain_flags):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.release_gil = True

    # and the ISA features are the host's, as the jit's are (numba's AOT codegen
    # otherwise takes the CPU model's defaults), less AVX-512 for the narrow library
    plain_features = codegen.AOTCPUCodegen._customize_tm_features
    host_features = codegen.JITCPUCodegen._customize_tm_features
    pycc_compiler.Flags = NoGilFlags
    codegen.AOTCPUCodegen._customize_tm_features = (
        host_features if wide else lambda self: aot_features(host_features(self)))
    try:
        cc.compile()
    finally:
        pycc_compiler.Flags = plain_flags
        codegen.AOTCPUCodegen._customize_tm_features = plain_features
    return exports


def aot_features(host: str) -> str:
    """The host's ISA features (LLVM's "+x,-y" list) with every AVX-512 one
    turned off. Compiled with them, the sequence kernel ran at 0.7x the
    speed of the jit's code on EWT dev at a margin, and at about the jit's
    speed without them; the parser kernel runs faster with them
    (docs/decisions/measurement-log.md)."""
    return ",".join("-" + f[1:] if f[1:].startswith("avx512") else f for f in host.split(",") if f)


def recorded_signatures() -> Dict[str, List[Any]]:
    """The signatures the jitted entry kernels were called with in this process."""
    return {name: list(jitted(name).nopython_signatures) for name in ENTRY_KERNELS
            if jitted(name).nopython_signatures}
