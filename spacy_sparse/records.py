"""What `tag` reads: records, each the text of one doc (or one CoNLL-U
sentence) and where it came from.

Formats: `lines` (one doc per line; `text` is the old name), `jsonl` ({"text":
...} per line), `paragraphs` (docs apart by blank lines; the line breaks
inside one are wrapping and stay in its text), `whole` (the whole stream one
doc), `conllu` (sentences with their tokens, annotated again), and a
directory of .txt files (each file one doc, its name kept).

A bad record is reported with its line and skipped (on_error="skip"), or
ends the input there (on_error="fail"): what came before is still annotated
and written, and `error` says what stopped it. A text longer than
`max_length` characters is not dropped but cut at sentence ends (or else
spaces) into pieces, each a doc of the same line, which hold all of it.
"""
import codecs
import json
import sys
from pathlib import Path
from typing import IO, Callable, Iterator, List, NamedTuple, Optional, Tuple, Union

from .conllu import BadSentence, Sentence, read_sentences

FORMATS = ("lines", "paragraphs", "whole", "jsonl", "conllu")
ALIASES = {"text": "lines"}
ON_ERROR = ("skip", "fail")
# A JSON line is parsed whole, so a longer one is a bad line rather than memory without bound.
MAX_JSON_CHARS = 64 << 20
# Bytes of a file's start that must hold no NUL for it to count as text.
SNIFF_BYTES = 8192


class Where(NamedTuple):
    """Where a record came from. `doc_id` names its document and `newdoc`
    says the record starts it (CoNLL-U output's `# newdoc`); `given` is
    the sentence as read, for CoNLL-U input."""
    line: int
    name: Optional[str] = None
    doc_id: Optional[str] = None
    newdoc: bool = True
    given: Optional[Sentence] = None


Record = Tuple[Union[str, Sentence], Where]


def input_format(path: str, fmt: Optional[str]) -> str:
    """The format asked for, else the one the name suggests."""
    if fmt:
        fmt = ALIASES.get(fmt, fmt)
        if fmt not in FORMATS:
            raise ValueError(f"input format must be one of {FORMATS}, got {fmt!r}")
        return fmt
    if path != "-" and Path(path).is_dir():
        return "whole"
    if path.endswith((".jsonl", ".json")):
        return "jsonl"
    if path.endswith(".conllu"):
        return "conllu"
    return "lines"


def _report_to_stderr(message: str) -> None:
    print(message, file=sys.stderr)


class RecordReader:
    """Iterate records over a binary stream in one of FORMATS (see the
    module's docstring)."""

    def __init__(self, stream: IO[bytes], fmt: str, on_error: str = "skip",
                 report: Callable[[str], None] = _report_to_stderr, max_length: Optional[int] = None,
                 name: Optional[str] = None, doc_id: str = "doc"):
        fmt = ALIASES.get(fmt, fmt)
        if fmt not in FORMATS:
            raise ValueError(f"input format must be one of {FORMATS}, got {fmt!r}")
        if on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
        self.stream, self.fmt, self.on_error, self.report = stream, fmt, on_error, report
        self.max_length = max_length
        self.name, self.doc_id = name, doc_id
        self.error: Optional[str] = None
        self.skipped = 0

    def __iter__(self) -> Iterator[Record]:
        if self.fmt == "conllu":
            yield from self._sentences()
            return
        read = {"lines": self._lines, "jsonl": self._json_lines, "paragraphs": self._paragraphs,
                "whole": self._whole}[self.fmt]
        for text, where, problem in read():
            if problem is not None:
                if not self._bad(f"line {where.line}: {problem}"):
                    return
            else:
                yield text, where

    def _bad(self, message: str) -> bool:
        """Report a bad record; whether reading goes on."""
        if self.on_error == "fail":
            self.error = message
            return False
        self.skipped += 1
        self.report(f"skipped {message}")
        return True

    def _line_chunks(self) -> Iterator[Tuple[int, str, bool, Optional[str]]]:
        """(line number, text, whether it ends the line, problem): each line
        in chunks of at most 4 * max_length bytes, so no line is ever held
        whole. Invalid UTF-8 ends its line's text there (the chunks before
        were given out) with a problem."""
        size = -1 if self.max_length is None else 4 * self.max_length
        number = 0
        raw = self.stream.readline(size)
        while raw:
            number += 1
            decoder, seen, problem = codecs.getincrementaldecoder("utf8")(), 0, None
            while True:
                end = raw.endswith(b"\n")
                if problem is None:
                    try:
                        text = decoder.decode(raw, final=end)
                    except UnicodeDecodeError as err:
                        problem = f"invalid UTF-8 ({err.reason} at byte {seen + err.start})"
                if problem is None:
                    yield number, text.rstrip("\r\n") if end else text, False, None
                seen += len(raw)
                if end:
                    break
                raw = self.stream.readline(size)
                if not raw:  # the last line, without a line break
                    if problem is None:
                        try:
                            decoder.decode(b"", final=True)
                        except UnicodeDecodeError as err:
                            problem = f"invalid UTF-8 ({err.reason} at byte {seen + err.start})"
                    break
            yield number, "", True, problem
            raw = self.stream.readline(size)

    @staticmethod
    def _emit(pieces: List[str], where: Optional[Where], count: List[int]
              ) -> Iterator[Tuple[str, Where, Optional[str]]]:
        """A record's pieces as they are complete (`count[0]`: how many it
        gave before); only its first piece starts its document, and a
        record of whitespace only makes no doc."""
        assert where is not None
        for piece in pieces:
            if count[0] or piece.strip():
                yield piece, where._replace(newdoc=where.newdoc and count[0] == 0), None
                count[0] += 1

    def _lines(self) -> Iterator[Tuple[str, Where, Optional[str]]]:
        cutter, count = Cutter(self.max_length), [0]
        for number, chunk, end, problem in self._line_chunks():
            where = Where(number, self.name, f"{self.doc_id}-{number}")
            if not end:
                yield from self._emit(cutter.add(chunk), where, count)
                continue
            if problem is not None:
                yield "", where, problem
            yield from self._emit(cutter.finish(), where, count)
            count = [0]

    def _json_lines(self) -> Iterator[Tuple[str, Where, Optional[str]]]:
        parts: List[str] = []
        held = 0
        for number, chunk, end, problem in self._line_chunks():
            if not end:
                held += len(chunk)
                if held <= MAX_JSON_CHARS:
                    parts.append(chunk)
                continue
            line, parts, too_long, held = "".join(parts), [], held > MAX_JSON_CHARS, 0
            where = Where(number, self.name, f"{self.doc_id}-{number}")
            if problem is not None or too_long:
                yield "", where, problem or f"a JSON line over {MAX_JSON_CHARS:,} characters"
                continue
            if not line.strip():
                continue
            text, problem = _json_text(line)
            if problem is not None:
                yield "", where, problem
                continue
            for k, piece in enumerate(split_long(text, self.max_length or max(1, len(text)))):
                yield piece, where._replace(newdoc=k == 0), None

    def _paragraphs(self) -> Iterator[Tuple[str, Where, Optional[str]]]:
        cutter, count, where, paragraph = Cutter(self.max_length), [0], None, 0
        held: List[str] = []  # the current line's chunks while they are all whitespace
        committed = False  # the current line holds text, so it belongs to a paragraph
        for number, chunk, end, problem in self._line_chunks():
            if problem is not None:
                yield "", Where(number, self.name), problem
            if not end:
                if committed:
                    yield from self._emit(cutter.add(chunk), where, count)
                    continue
                held.append(chunk)
                text = "".join(held)
                if text.strip() or (self.max_length is not None and len(text) > self.max_length):
                    if where is None:
                        where = Where(number, self.name, self.doc_id, paragraph == 0)
                    else:
                        text = "\n" + text  # the line break wrapping the paragraph
                    committed, held = True, []
                    yield from self._emit(cutter.add(text), where, count)
                continue
            if not committed and where is not None:  # a blank line: the paragraph is complete
                yield from self._emit(cutter.finish(), where, count)
                cutter, count, where, paragraph = Cutter(self.max_length), [0], None, paragraph + 1
            held, committed = [], False
        if where is not None:
            yield from self._emit(cutter.finish(), where, count)

    def _whole(self) -> Iterator[Tuple[str, Where, Optional[str]]]:
        size = -1 if self.max_length is None else 4 * self.max_length
        decoder, cutter, count, seen = codecs.getincrementaldecoder("utf8")(), Cutter(self.max_length), [0], 0
        where = Where(1, self.name, self.doc_id)
        while True:
            raw = self.stream.read(size)
            try:
                text = decoder.decode(raw, final=not raw)
            except UnicodeDecodeError as err:
                yield "", where, f"invalid UTF-8 ({err.reason} at byte {seen + err.start})"
                return
            seen += len(raw)
            if text:
                yield from self._emit(cutter.add(text), where, count)
            if not raw:
                break
        yield from self._emit(cutter.finish(), where, count)

    def _sentences(self) -> Iterator[Record]:
        doc_id, count = self.doc_id, 0
        for sentence in read_sentences(self.stream):
            if isinstance(sentence, BadSentence):
                if not self._bad(f"sentence at line {sentence.line}: {sentence.problem}"):
                    return
                continue
            yield sentence, Where(sentence.line, self.name, doc_id, count == 0, sentence)
            count += 1


def _json_text(line: str) -> Tuple[str, Optional[str]]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        return "", f"invalid JSON ({err.msg})"
    except RecursionError:
        return "", "invalid JSON (nested too deeply)"
    if not isinstance(record, dict) or not isinstance(record.get("text"), str):
        return "", 'no "text" string'
    text = record["text"]
    try:
        text.encode("utf8")
    except UnicodeEncodeError as err:
        return "", f"the text is not valid Unicode ({err.reason} at character {err.start})"
    return text, None


class Cutter:
    """A record's text arriving in chunks, given out in the pieces
    split_long cuts the whole text into, as soon as each is complete: it
    holds at most `limit` characters and one chunk."""

    def __init__(self, limit: Optional[int]):
        self.limit = limit
        self.carry = ""

    def add(self, chunk: str) -> List[str]:
        self.carry += chunk
        if self.limit is None or len(self.carry) <= self.limit:
            return []
        pieces = list(split_long(self.carry, self.limit))
        self.carry = pieces.pop()  # the last piece may still grow
        return pieces

    def finish(self) -> List[str]:
        out = [self.carry] if self.carry else []
        self.carry = ""
        return out


def split_long(text: str, limit: int) -> Iterator[str]:
    """`text` in consecutive pieces of at most `limit` characters, cut after
    the last sentence end (". ", "! ", "? ") in reach, else at the last
    space, else at the limit. The pieces concatenate to `text`."""
    limit = max(1, limit)
    start = 0
    while len(text) - start > limit:
        end = start + limit
        cut = max(text.rfind(mark, start, end) for mark in (". ", "! ", "? "))
        cut = cut + 1 if cut > start else text.rfind(" ", start, end)
        if cut <= start:
            cut = end
        yield text[start:cut]
        start = cut
    if start < len(text):
        yield text[start:]


class DirectoryReader:
    """Each .txt file of a directory (sorted by name, subdirectories
    included) as one doc named by its path in the directory. A file that
    cannot be read, or holds NUL bytes (not text), is reported and
    skipped, or ends the input (on_error="fail")."""

    def __init__(self, directory: Path, on_error: str = "skip",
                 report: Callable[[str], None] = _report_to_stderr, max_length: Optional[int] = None):
        if on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
        self.directory, self.on_error, self.report, self.max_length = Path(directory), on_error, report, max_length
        self.error: Optional[str] = None
        self.skipped = 0

    def __iter__(self) -> Iterator[Record]:
        for path in sorted(p for p in self.directory.rglob("*.txt") if p.is_file()):
            name = str(path.relative_to(self.directory))
            try:
                with path.open("rb") as f:
                    if b"\x00" in f.read(SNIFF_BYTES):
                        raise ValueError("a binary file, not text")
                    f.seek(0)
                    reader = RecordReader(f, "whole", self.on_error, self.report, self.max_length, name=name,
                                          doc_id=name)
                    yield from reader
            except (OSError, ValueError) as err:
                reader = None
                problem = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
                if self.on_error == "fail":
                    self.error = f"{name}: {problem}"
                    return
                self.skipped += 1
                self.report(f"skipped {name}: {problem}")
                continue
            self.skipped += reader.skipped
            if reader.error:
                self.error = f"{name}, {reader.error}"
                return
