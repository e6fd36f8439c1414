"""How a sparse component is saved, loaded and pickled: its settings as exact JSON (`cfg`) and its weights as
the model file (codec.py), each checked as it loads; a model file decoded ahead by preload.py is taken as it is.

A mixin of SparsePipe (base.py): it relies on the component's `cfg`, `name`, `sparse`, `lexicon`,
`min_updates`, `template_kind` and `_labels_changed`.
"""
import json
from pathlib import Path
from typing import Any, Dict, Iterable, Optional, Sequence

import srsly
from spacy import util

from .. import codec
from ..runtime import preload
from ..model import SparseLinearModel
from ..templates import check_kind
from .settings import check_common


class StoredPipe:
    """to_bytes/from_bytes, to_disk/from_disk and pickling for SparsePipe."""

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        data: Dict[str, Any] = {"cfg": cfg_json(self.cfg)}
        if self.sparse is not None and "model" not in exclude:
            data["model"] = self.sparse.to_bytes()
        return srsly.msgpack_dumps(data)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "StoredPipe":
        try:
            data = codec.loads(bytes_data)
        except ValueError as err:
            raise ValueError(f"Cannot load {self.name!r}: not spacy-sparse component bytes ({err})") from None
        if not isinstance(data, dict) or "cfg" not in data:
            raise ValueError(f"Cannot load {self.name!r}: not spacy-sparse component bytes")
        self._load_cfg(srsly.json_loads(data["cfg"]))
        if "model" in data and "model" not in exclude:
            self._load_model(data["model"])
        return self

    def to_disk(self, path, *, exclude: Iterable[str] = tuple()) -> None:
        path = util.ensure_path(path)
        serializers = {"cfg": lambda p: p.write_text(cfg_json(self.cfg, indent=2) + "\n", encoding="utf8")}
        if self.sparse is not None:
            serializers["model"] = lambda p: p.write_bytes(self.sparse.to_bytes())
        util.to_disk(path, serializers, exclude)

    def from_disk(self, path, *, exclude: Iterable[str] = tuple()) -> "StoredPipe":
        path = util.ensure_path(path)

        def load_cfg(p: Path) -> None:
            try:
                cfg = srsly.read_json(p)
            except Exception as err:
                raise ValueError(f"Cannot read the config of {self.name!r} at {p}: {err}") from None
            self._load_cfg(cfg)

        def load_model(p: Path) -> None:
            decoded = preload.take(p)  # decoded while spacy.load built the rest (preload.py)
            if decoded is not None:
                self._set_model(decoded, where=str(p))
            elif p.exists():
                try:
                    data = codec.read_model_file(p)
                except ValueError as err:
                    raise ValueError(f"Cannot load the weights of {self.name!r}: {err}") from None
                self._load_model(data, where=str(p))

        util.from_disk(path, {"cfg": load_cfg, "model": load_model}, exclude)
        return self

    def _check_task_cfg(self, cfg: Dict[str, Any]) -> None:
        """Check the task's own settings in a loaded cfg (ValueError), with the
        factory's messages."""

    def _load_cfg(self, cfg: Any) -> None:
        if not isinstance(cfg, dict):
            raise ValueError(f"Cannot load {self.name!r}: its cfg is not an object")
        try:
            cfg = check_common(cfg)
            self._check_task_cfg(cfg)
        except ValueError as err:
            raise ValueError(f"Cannot load {self.name!r}: {err}") from None
        self.cfg.update(cfg)
        if self.sparse is not None:
            self.sparse.min_updates = self.min_updates

    def _load_model(self, data: bytes, where: str = "bytes") -> None:
        try:
            model = SparseLinearModel.from_bytes(data)
        except ValueError as err:
            raise ValueError(f"Cannot load the weights of {self.name!r} from {where}: {err}") from None
        self._set_model(model, where)

    def _check_labels(self, labels: Sequence[str]) -> None:
        """ValueError if a loaded model's labels are not ones this task's
        kernels can run on (a file's checksum says nothing of that)."""

    def _set_model(self, model: SparseLinearModel, where: str) -> None:
        """Take a decoded model as this component's weights."""
        try:
            check_kind(model.templates, self.template_kind, type(self).__name__)
            self._check_labels(list(model.labels))
        except ValueError as err:
            raise ValueError(f"Cannot load the weights of {self.name!r} from {where}: {err}") from None
        self.sparse = model
        model.min_updates = self.min_updates
        self.lexicon.set_classes(model.lex_classes)
        self.lexicon.set_clusters(model.lex_clusters)
        self.cfg["templates"] = model.template_names
        self.cfg["labels"] = list(model.labels)
        self._labels_changed()

    # ---- pickling (nlp objects are pickled for multiprocessing) -------------------------
    def __reduce__(self):
        return (_unpickle_pipe, (type(self), self.vocab, self.name, self.scorer, self.to_bytes()))


def cfg_json(cfg: Dict[str, Any], indent: Optional[int] = None) -> str:
    """The settings as JSON with every float exact (srsly's writer rounds
    to ten decimals, so 1e-11 came back as 0.0 and failed its check)."""
    return json.dumps(cfg, indent=indent, ensure_ascii=False)


def _unpickle_pipe(cls, vocab, name, scorer, data):
    cfg = srsly.json_loads(codec.loads(data)["cfg"])
    kwargs = {k: v for k, v in cfg.items() if k != "labels"}
    pipe = cls(vocab, name, scorer=scorer, **kwargs)
    pipe.from_bytes(data)
    return pipe
