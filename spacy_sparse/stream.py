"""Annotating a corpus as a stream: read records lazily, run the pipeline in
batches, write each doc as soon as it is done.

Memory stays bounded whatever the input size: nothing holds more than a
batch of docs (DocBin output is written in shards for the same reason).
Bad input lines are reported with their line number and skipped, or stop
the run, per `on_error`; either way what was written stays written.
"""
import json
from pathlib import Path
from typing import IO, Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc, DocBin

from .conllu import doc_conllu, given_conllu, sentence_doc
from .jsonl import json_bytes
from .records import FORMATS, ON_ERROR, DirectoryReader, RecordReader, Where, split_long

__all__ = ["FORMATS", "ON_ERROR", "DirectoryReader", "RecordReader", "Where", "split_long", "annotate",
           "annotate_file", "ConlluWriter", "DocBinWriter", "JsonlWriter", "stop_on_signal"]


# A stop signal (stop_on_signal) that comes while annotate writes a doc and
# counts it waits until both are done, so the count it reports is what was
# written (a signal between the two had made it one short).
_writing = False
_held_signal: Optional[int] = None


def stop_on_signal(signum: int, frame: Any = None) -> None:
    """Handler for SIGINT/SIGTERM: stop nlp.pipe's worker processes at once
    (spaCy joins them as the pipe closes, and they would first finish the
    batches queued for them), then unwind with KeyboardInterrupt to the
    caller of annotate, which reports what was written; while a doc is being
    written and counted, only note the signal (annotate acts on it next)."""
    global _held_signal
    if _writing:
        _held_signal = signum
        return
    import multiprocessing

    for child in multiprocessing.active_children():
        child.terminate()
    raise KeyboardInterrupt(f"signal {signum}")


def _counted(write: Callable[[], None], stats: Dict[str, int], docs: int, words: int) -> None:
    """write(), then add to the counts, as one step for stop_on_signal."""
    global _writing, _held_signal
    _writing = True
    try:
        write()
        stats["docs"] += docs
        stats["words"] += words
    finally:
        _writing = False
    if _held_signal is not None:
        signum, _held_signal = _held_signal, None
        stop_on_signal(signum)
def _line_of(where: Union[Where, int]) -> int:
    return where if isinstance(where, int) else where.line


class JsonlWriter:
    """One JSON object per doc (jsonl.py), with its input line and, for a
    directory's files, the file's name."""

    def __init__(self, stream: IO[str]):
        self.stream = stream
        # the byte stream under a text stream, when the text is encoded as
        # workers encode theirs (UTF-8): their bytes are then written as they come
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
        self.buffer = getattr(stream, "buffer", None) if encoding == "utf8" else None

    @staticmethod
    def encode(doc: Doc, where: Union[Where, int]) -> bytes:
        data = json_bytes(doc, _line_of(where))
        name = None if isinstance(where, int) else where.name
        if name is not None:
            data = b'{"file": ' + json.dumps(name, ensure_ascii=False).encode("utf8") + b", " + data[1:]
        return data

    @classmethod
    def encode_batch(cls, pairs: Iterable[Tuple[Doc, Any]]) -> bytes:
        """A worker's batch as the bytes the parent writes (write_encoded)."""
        return b"".join(cls.encode(doc, where) for doc, where in pairs)

    def write(self, doc: Doc, where: Union[Where, int]) -> None:
        self.write_encoded(self.encode(doc, where))

    def write_encoded(self, data: bytes) -> None:
        """Lines a worker joined and encoded as UTF-8."""
        if self.buffer is None:
            self.stream.write(data.decode("utf8"))
        else:
            self.stream.flush()  # what the text layer holds goes first
            self.buffer.write(data)

    def close(self) -> None:
        self.stream.flush()


class ConlluWriter(JsonlWriter):
    """CoNLL-U (conllu.py): a doc's sentences with `# newdoc`, `# newpar`,
    `# sent_id` and `# text`; a sentence read from CoNLL-U keeps its
    comments and multiword tokens."""

    @staticmethod
    def encode(doc: Doc, where: Union[Where, int]) -> bytes:
        if isinstance(where, int):
            where = Where(where, doc_id=f"doc-{where}")
        if where.given is not None:
            return given_conllu(doc, where.given).encode("utf8")
        doc_id = where.doc_id or f"doc-{where.line}"
        # a paragraph of a longer document: its sentences are numbered from its first line
        prefix = doc_id if where.doc_id is None or where.doc_id.endswith(f"-{where.line}") else \
            f"{doc_id}-l{where.line}"
        return doc_conllu(doc, doc_id, newdoc=where.newdoc, sent_prefix=prefix).encode("utf8")


class DocBinWriter:
    """Docs to OUTPUT/part-00000.spacy, part-00001.spacy, ... (`shard_size`
    docs each), which spaCy's corpus readers take as one corpus."""

    def __init__(self, directory: Path, shard_size: int = 10000):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.shard_size = shard_size
        self.n_shards = 0
        self.bin = DocBin(store_user_data=True)

    @staticmethod
    def encode_batch(pairs: Iterable[Tuple[Doc, Any]]) -> bytes:
        """A worker's batch as one DocBin's bytes, each doc with its input line."""
        batch = DocBin(store_user_data=True)
        for doc, where in pairs:
            doc.user_data["line"] = _line_of(where)
            batch.add(doc)
        return batch.to_bytes()

    def write(self, doc: Doc, where: Union[Where, int]) -> None:
        # the input line goes with the doc, so docs still match lines after a skipped one
        doc.user_data["line"] = _line_of(where)
        self.bin.add(doc)
        if len(self.bin) >= self.shard_size:
            self._flush()

    def write_encoded(self, data: bytes) -> None:
        """A worker's DocBin: its docs join the current shard (a shard may
        then pass `shard_size` by up to one batch)."""
        self.bin.merge(DocBin(store_user_data=True).from_bytes(data))
        if len(self.bin) >= self.shard_size:
            self._flush()

    def _flush(self) -> None:
        if len(self.bin):
            self.bin.to_disk(self.directory / f"part-{self.n_shards:05d}.spacy")
            self.n_shards += 1
            self.bin = DocBin(store_user_data=True)

    def close(self) -> None:
        self._flush()


def annotate(
    nlp: Language,
    records: Iterable[Tuple[str, int]],
    writer,
    *,
    batch_size: int = 1000,
    n_process: int = 1,
    progress: Optional[Callable[[int], None]] = None,
    stats: Optional[Dict[str, int]] = None,
) -> Dict[str, int]:
    """Run `nlp` over (text, line) records and hand each doc to `writer`.
    The writer is closed even when reading fails or the run is interrupted,
    so every doc finished before is on disk; `stats` (docs, words), if
    given, is kept up to date as docs are written, for a caller that is
    interrupted before this returns."""
    stats = {"docs": 0, "words": 0} if stats is None else stats
    stats.setdefault("docs", 0)
    stats.setdefault("words", 0)
    if n_process > 1:
        return _annotate_in_processes(nlp, records, writer, batch_size, n_process, progress, stats)
    try:
        # units bounded in characters as well as docs, so memory is bounded by text, not docs
        for unit in work_units(records, batch_size, UNIT_CHARS):
            for doc, where in nlp.pipe(_inputs(nlp, unit), as_tuples=True, batch_size=batch_size):
                _counted(lambda: writer.write(doc, where), stats, 1, len(doc))
                if progress is not None:
                    progress(len(doc))
    finally:
        writer.close()
    return stats


def _inputs(nlp: Language, records: Iterable[Tuple[Any, Any]]) -> Iterator[Tuple[Any, Any]]:
    """Records as nlp.pipe takes them: a CoNLL-U sentence becomes a doc of
    its words, with its one sentence given."""
    for item, where in records:
        yield (item if isinstance(item, str) else sentence_doc(nlp.vocab, item)), where


_WORKER_NLP: Optional[Language] = None  # the pipeline a forked worker inherits

# Characters of text in one worker's unit of work. Units of `batch_size` docs alone
# can be few and huge (1,000 lines of a corpus of long docs: 8 units for 1M words),
# and then one worker idles while the other finishes the last of them.
UNIT_CHARS = 100_000


def _chars(item: Any) -> int:
    return len(item) if isinstance(item, str) else sum(len(w[1]) + 1 for w in item.words)


def work_units(records: Iterable[Tuple[str, int]], max_docs: int,
               max_chars: int) -> Iterator[List[Tuple[str, int]]]:
    """Consecutive lists of records, each closed once it holds `max_docs`
    records or `max_chars` characters of text (so a unit holds at least one
    record, whatever its length)."""
    unit: List[Tuple[str, int]] = []
    chars = 0
    for record in records:
        unit.append(record)
        chars += _chars(record[0])
        if len(unit) >= max_docs or chars >= max_chars:
            yield unit
            unit, chars = [], 0
    if unit:
        yield unit


def _worker_start() -> None:
    import signal

    # the parent stops the workers and reports: SIGINT is its to handle, and
    # SIGTERM (how it stops them) ends a worker at once, whatever handler it forked with
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _worker_batch(batch: List[Tuple[Any, Any]], encode_batch: Callable[[Iterable[Tuple[Doc, Any]]], bytes]
                  ) -> Tuple[bytes, int, int]:
    """Tokenize, annotate and serialize one batch in a worker: what crosses
    back to the parent is the writer's bytes for the batch (one object to
    unpickle and write, nothing to decode or encode again), not docs."""
    assert _WORKER_NLP is not None
    docs = list(_WORKER_NLP.pipe(_inputs(_WORKER_NLP, batch), as_tuples=True, batch_size=len(batch)))
    return encode_batch(docs), len(docs), sum(len(doc) for doc, _ in docs)


def _annotate_in_processes(nlp: Language, records: Iterable[Tuple[str, int]], writer: Any,
                           batch_size: int, n_process: int, progress: Optional[Callable[[int], None]],
                           stats: Dict[str, int]) -> Dict[str, int]:
    """n_process workers: each takes whole units (work_units) through the
    tokenizer, the pipeline and the writer's encoder (`encode_batch`: the
    parts that hold the GIL), the parent only reads records and writes the
    results in input order, so JSONL and CoNLL-U are byte-identical to one
    process (DocBin shards hold the same docs). At most two
    units per worker are in flight, so memory stays bounded. Workers are
    forked with the loaded pipeline (nothing is pickled or loaded again),
    after the parent has run it once, so they inherit every kernel compiled
    and never start numba's compiler themselves. A worker that dies ends the
    run with a RuntimeError (the docs before its batch are written), not a
    hang; the pool's thread may then still wait on the dead worker's pipe,
    so the `tag` command leaves with os._exit."""
    import gc
    import multiprocessing
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures import TimeoutError as FuturesTimeout
    from concurrent.futures.process import BrokenProcessPool

    global _WORKER_NLP
    nlp("Warm up the kernels before forking.")
    _WORKER_NLP = nlp
    # Objects the parent made (vocab, strings, the pipeline) move out of the
    # collector's reach: a worker's collections would otherwise write to each
    # of them and copy every page they share with the parent.
    gc.freeze()
    pending: deque = deque()

    def result_of(future) -> Tuple[bytes, int, int]:
        # future.result(), but a dead worker ends the wait: the pool's own thread
        # can block for good on a result the worker had half written when it died
        # (CPython 3.11), so it would never report the pool broken. `_processes`
        # is private, and the only handle on the workers.
        while True:
            try:
                return future.result(timeout=0.5)
            except FuturesTimeout:
                if any(p.exitcode is not None for p in list((pool._processes or {}).values())):
                    raise BrokenProcessPool("a worker exited") from None

    def emit(future) -> None:
        data, n_lines, words = result_of(future)
        _counted(lambda: writer.write_encoded(data), stats, n_lines, words)
        if progress is not None:
            progress(words)

    pool = ProcessPoolExecutor(n_process, mp_context=multiprocessing.get_context("fork"), initializer=_worker_start)
    try:
        for batch in work_units(records, batch_size, UNIT_CHARS):
            pending.append(pool.submit(_worker_batch, batch, writer.encode_batch))
            while len(pending) >= 2 * n_process:
                emit(pending.popleft())
        while pending:
            emit(pending.popleft())
    except BrokenProcessPool:
        # from a result or from submit, whichever meets the dead worker first
        raise RuntimeError("a tag worker process died; the docs before its batch were written") from None
    finally:
        writer.close()
        if pending:  # stopped early (an error, an interrupt): the workers' batches are not wanted
            for child in multiprocessing.active_children():
                child.terminate()
        pool.shutdown(wait=not pending, cancel_futures=True)
        _WORKER_NLP = None
        gc.unfreeze()
    return stats


def annotate_file(
    nlp: Language,
    src: Path,
    dst: Path,
    *,
    fmt: str = "text",
    on_error: str = "skip",
    batch_size: int = 1000,
) -> Dict[str, int]:
    """One input file to one JSONL file (the unit of work of a shard)."""
    with Path(src).open("rb") as fin, Path(dst).open("w", encoding="utf8") as fout:
        reader = RecordReader(fin, fmt, on_error, max_length=nlp.max_length)
        stats = annotate(nlp, reader, JsonlWriter(fout), batch_size=batch_size)
    if reader.error:
        raise ValueError(f"{src}, {reader.error}")
    return stats
