"""A doc as one line of JSON, as `tag` writes it.

`doc_to_json` says what a line holds; `json_line` writes the same bytes
without building it. A corpus repeats its tokens, so the JSON of a token
(its text, whitespace, tag, POS and label) is made once and kept in a
`PieceTable`, and a kernel (`kernels/jsonl.py`) finds and joins a doc's
pieces: serializing had cost more than tagging, and it holds the GIL (issue 23).
"""
import json
import re
import threading
from typing import Any, Dict, List, Optional, Tuple

import numpy
from spacy.attrs import DEP, ENT_IOB, HEAD, ORTH, POS, SENT_START, SPACY, TAG
from spacy.tokens import Doc

from .runtime.compiled import find_pieces, join_pieces, put_pieces

# the columns json_line reads with one Doc.to_array; the first five (after the flags) key a piece
_COLUMNS = [ORTH, SPACY, TAG, POS, DEP, HEAD, SENT_START, ENT_IOB]
_TAG, _POS, _DEP, _HEAD, _SENT_START, _ENT_IOB = 2, 3, 4, 5, 6, 7
_KEY_BYTES = numpy.dtype((numpy.void, 6 * 8))
SMALL_BUFFER = 1 << 16
LARGE_BUFFER = 1 << 22


def _token_item(token, has_tag: bool, has_pos: bool, has_dep: bool) -> Dict[str, Any]:
    item: Dict[str, Any] = {"text": token.text}
    if token.whitespace_:
        item["ws"] = True
    if has_tag:
        item["tag"] = token.tag_
    if has_pos:
        item["pos"] = token.pos_
    if has_dep:
        item["dep"] = token.dep_
        item["head"] = token.head.i
    return item


def doc_to_json(doc: Doc, line: Optional[int] = None) -> Dict[str, Any]:
    """The tokens of a doc and the annotation the pipeline set on them."""
    flags = doc.has_annotation("TAG"), doc.has_annotation("POS"), doc.has_annotation("DEP")
    out: Dict[str, Any] = {}
    if line is not None:
        out["line"] = line
    out["text"] = doc.text
    out["tokens"] = [_token_item(token, *flags) for token in doc]
    if doc.has_annotation("SENT_START"):
        out["sents"] = [sent.start for sent in doc.sents]
    if doc.has_annotation("ENT_IOB"):
        out["ents"] = [{"start": e.start, "end": e.end, "label": e.label_} for e in doc.ents]
    return out


# what json.dumps(..., ensure_ascii=False) escapes in a string; a string without any is written as it is
_ESCAPED = re.compile(r'["\\\x00-\x1f]')


def _json_string(text: str) -> str:
    """json.dumps(text, ensure_ascii=False), without the encoder's call for a
    string it writes as it is (most of them)."""
    return json.dumps(text, ensure_ascii=False) if _ESCAPED.search(text) else f'"{text}"'


def _piece(token, has_tag: bool, has_pos: bool, has_dep: bool) -> Tuple[bytes, bytes]:
    """A token's JSON object as json.dumps writes _token_item's (up to its
    head, which the line adds) and its text with whitespace as a JSON
    string holds it (escaping is per character, so the escaped texts of the
    tokens join to the escaped text of the doc), both as UTF-8."""
    parts = ['{"text": ', _json_string(token.text)]
    if token.whitespace_:
        parts.append(', "ws": true')
    if has_tag:
        parts += [', "tag": ', _json_string(token.tag_)]
    if has_pos:
        parts += [', "pos": ', _json_string(token.pos_)]
    if has_dep:
        parts += [', "dep": ', _json_string(token.dep_), ', "head": ']
    else:
        parts.append("}")
    return "".join(parts).encode("utf8"), _json_string(token.text_with_ws)[1:-1].encode("utf8")


class PieceTable:
    """Tokens' JSON pieces kept by (flags, ORTH, SPACY, TAG, POS, DEP), as
    numpy arrays the kernels read. String ids are hashes of the strings, so
    a piece holds for any vocab. Bounded: once it holds `max_pieces` pieces
    or `max_bytes` bytes of them, the next doc that brings new pieces starts
    it afresh (a doc that alone passes the bounds is kept until then). Not
    for several threads at once: json_bytes holds a lock around it."""

    def __init__(self, max_pieces: int = 100_000, max_bytes: int = 32 << 20):
        self.max_pieces = max_pieces
        self.max_bytes = max_bytes
        self._small_buffers()
        self._reset()

    def _small_buffers(self) -> None:
        # where a line's tokens and text are written: grown for a long doc, made small again after it
        self.tokens_out = numpy.zeros(SMALL_BUFFER, dtype=numpy.uint8)
        self.text_out = numpy.zeros(SMALL_BUFFER, dtype=numpy.uint8)

    def _reset(self) -> None:
        self.count = 0
        self.size = 0  # bytes of the arena in use
        self.keys = numpy.zeros((1024, 6), dtype=numpy.uint64)  # piece id -> key (to grow the table)
        self.bounds = numpy.zeros((3, 1024), dtype=numpy.int64)  # piece id -> start, split, end in the arena
        self.table_keys = numpy.zeros((2048, 6), dtype=numpy.uint64)
        self.ids = numpy.full(2048, -1, dtype=numpy.int64)
        self.arena = numpy.zeros(1 << 16, dtype=numpy.uint8)

    def pieces(self, doc: Doc, keys: numpy.ndarray, flags: Tuple[bool, bool, bool]) -> numpy.ndarray:
        """The id of each token's piece (keys: one row per token), making
        the pieces not kept yet."""
        found = numpy.empty(keys.shape[0], dtype=numpy.int64)
        if find_pieces(self.table_keys, self.ids, keys, found) == 0:
            return found
        missed = numpy.flatnonzero(found < 0)
        named, wanted, new, n_bytes = self._new_pieces(doc, keys, missed, flags)
        if self.count and (self.count + len(new) > self.max_pieces or self.size + n_bytes > self.max_bytes):
            self._reset()
            missed = numpy.arange(keys.shape[0])
            named, wanted, new, n_bytes = self._new_pieces(doc, keys, missed, flags)
        base = self.count
        self._add(keys[list(wanted.values())], new, n_bytes)
        # a new piece's id: its place among the new ones
        ids = {key: base + n for n, key in enumerate(wanted)}
        found[missed] = [ids[key] for key in named]
        return found

    @staticmethod
    def _new_pieces(doc: Doc, keys: numpy.ndarray, missed: numpy.ndarray, flags: Tuple[bool, bool, bool]
                    ) -> Tuple[List[bytes], Dict[bytes, int], List[Tuple[bytes, bytes]], int]:
        """The missed tokens' keys as bytes, their distinct keys (each -> its
        first token: a doc may bring a new piece several times), those
        keys' pieces and the pieces' bytes."""
        named = keys[missed].view(_KEY_BYTES).ravel().tolist()
        wanted: Dict[bytes, int] = {}
        for i, key in zip(missed.tolist(), named):
            wanted.setdefault(key, i)
        new = [_piece(doc[i], *flags) for i in wanted.values()]
        return named, wanted, new, sum(len(a) + len(b) for a, b in new)

    def _add(self, new_keys: numpy.ndarray, new: List[Tuple[bytes, bytes]], n_bytes: int) -> None:
        n, base = len(new), self.count
        self._grow(n, n_bytes)
        for i, (obj, text) in enumerate(new):
            start, split = self.size, self.size + len(obj)
            end = split + len(text)
            self.arena[start:split] = numpy.frombuffer(obj, dtype=numpy.uint8)
            self.arena[split:end] = numpy.frombuffer(text, dtype=numpy.uint8)
            self.bounds[:, base + i] = start, split, end
            self.size = end
        self.keys[base:base + n] = new_keys
        self.count += n
        put_pieces(self.table_keys, self.ids, self.keys[base:base + n], numpy.arange(base, base + n, dtype=numpy.int64))

    def _grow(self, n_new: int, n_bytes: int) -> None:
        """Room for n_new more pieces (the table at most half full) and
        n_bytes more bytes."""
        if self.size + n_bytes > self.arena.shape[0]:
            self.arena = _larger(self.arena, self.size + n_bytes, axis=0)
        count = self.count + n_new
        if count > self.keys.shape[0]:
            self.keys = _larger(self.keys, count, axis=0)
            self.bounds = _larger(self.bounds, count, axis=1)
        cap = self.ids.shape[0]
        if 2 * count > cap:
            while 2 * count > cap:
                cap *= 2
            self.table_keys = numpy.zeros((cap, 6), dtype=numpy.uint64)
            self.ids = numpy.full(cap, -1, dtype=numpy.int64)
            put_pieces(self.table_keys, self.ids, self.keys[:self.count],
                       numpy.arange(self.count, dtype=numpy.int64))

    def line(self, doc: Doc, line: Optional[int]) -> bytes:
        """json_line's bytes."""
        n = len(doc)
        if not n:  # spaCy counts every layer of an empty doc as set
            return (json.dumps(doc_to_json(doc, line), ensure_ascii=False) + "\n").encode("utf8")
        table = doc.to_array(_COLUMNS)
        present = table.any(axis=0)
        flags = bool(present[_TAG]), bool(present[_POS]), bool(present[_DEP])
        keys = numpy.empty((n, 6), dtype=numpy.uint64)
        keys[:, 0] = flags[0] | flags[1] << 1 | flags[2] << 2
        keys[:, 1:] = table[:, :5]
        heads = (table[:, _HEAD].view(numpy.int64) + numpy.arange(n)) if flags[2] else _NO_HEADS
        pieces = self.pieces(doc, keys, flags)
        used = numpy.zeros(2, dtype=numpy.int64)
        while not join_pieces(pieces, heads, self.arena, self.bounds, self.tokens_out, self.text_out, used):
            self.tokens_out = numpy.zeros(max(used[0], 2 * self.tokens_out.shape[0]), dtype=numpy.uint8)
            self.text_out = numpy.zeros(max(used[1], 2 * self.text_out.shape[0]), dtype=numpy.uint8)
        tokens, text = self.tokens_out[:used[0]].tobytes(), self.text_out[:used[1]].tobytes()
        if self.tokens_out.shape[0] > LARGE_BUFFER or self.text_out.shape[0] > LARGE_BUFFER:
            self._small_buffers()
        out = [] if line is None else [b'"line": ' + json.dumps(line).encode("utf8")]
        out.append(b'"text": "' + text + b'"')
        out.append(b'"tokens": [' + tokens + b"]")
        if "sents" in doc.user_hooks:
            out.append(b'"sents": ' + json.dumps([sent.start for sent in doc.sents]).encode("utf8"))
        elif n == 1 or (table[1:, _SENT_START] != 0).any():
            starts = [0] + (numpy.flatnonzero(table[1:, _SENT_START] == 1) + 1).tolist()
            out.append(b'"sents": ' + json.dumps(starts).encode("utf8"))
        if present[_ENT_IOB]:
            ents = [{"start": e.start, "end": e.end, "label": e.label_} for e in doc.ents]
            out.append(b'"ents": ' + json.dumps(ents, ensure_ascii=False).encode("utf8"))
        return b"{" + b", ".join(out) + b"}\n"


_NO_HEADS = numpy.zeros(0, dtype=numpy.int64)


def _larger(array: numpy.ndarray, need: int, axis: int) -> numpy.ndarray:
    """A copy of `array` with room for at least `need` along `axis` (doubling)."""
    size = array.shape[axis]
    while size < need:
        size *= 2
    shape = list(array.shape)
    shape[axis] = size
    out = numpy.zeros(shape, dtype=array.dtype)
    out[tuple(slice(0, n) for n in array.shape)] = array
    return out


_TABLE = PieceTable()
_TABLE_LOCK = threading.Lock()


def json_bytes(doc: Doc, line: Optional[int]) -> bytes:
    """json_line's line as UTF-8."""
    with _TABLE_LOCK:
        return _TABLE.line(doc, line)


def json_line(doc: Doc, line: Optional[int]) -> str:
    """`json.dumps(doc_to_json(doc, line), ensure_ascii=False)` and a
    newline: the same text, made from the doc's arrays and the pieces kept."""
    return json_bytes(doc, line).decode("utf8")
