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
import json
import sys
from pathlib import Path
from typing import IO, Callable, Iterator, List, NamedTuple, Optional, Tuple, Union

from .conllu import BadSentence, Sentence, read_sentences

FORMATS = ("lines", "paragraphs", "whole", "jsonl", "conllu")
ALIASES = {"text": "lines"}
ON_ERROR = ("skip", "fail")
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
        read = {"lines": self._lines, "jsonl": self._lines, "paragraphs": self._paragraphs,
                "whole": self._whole}[self.fmt]
        for text, where, problem in read():
            if problem is not None:
                if not self._bad(f"line {where.line}: {problem}"):
                    return
            elif self.max_length is not None and len(text) > self.max_length:
                for k, piece in enumerate(split_long(text, self.max_length)):
                    yield piece, where._replace(newdoc=where.newdoc and k == 0)
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

    def _decoded(self) -> Iterator[Tuple[int, Optional[str], Optional[str]]]:
        """(line number, text without its line break, problem) per line."""
        for number, raw in enumerate(self.stream, start=1):
            try:
                yield number, raw.decode("utf8").rstrip("\r\n"), None
            except UnicodeDecodeError as err:
                yield number, None, f"invalid UTF-8 ({err.reason} at byte {err.start})"

    def _lines(self) -> Iterator[Tuple[str, Where, Optional[str]]]:
        for number, line, problem in self._decoded():
            where = Where(number, self.name, f"{self.doc_id}-{number}")
            if problem is not None:
                yield "", where, problem
            elif line.strip():
                text, problem = (line, None) if self.fmt == "lines" else _json_text(line)
                yield text, where, problem

    def _paragraphs(self) -> Iterator[Tuple[str, Where, Optional[str]]]:
        lines: List[str] = []
        first, count = 0, 0
        for number, line, problem in self._decoded():
            if problem is not None:
                yield "", Where(number, self.name), problem
                continue
            if line.strip():
                if not lines:
                    first = number
                lines.append(line)
                continue
            if lines:
                yield "\n".join(lines), Where(first, self.name, self.doc_id, count == 0), None
                lines, count = [], count + 1
        if lines:
            yield "\n".join(lines), Where(first, self.name, self.doc_id, count == 0), None

    def _whole(self) -> Iterator[Tuple[str, Where, Optional[str]]]:
        data = self.stream.read()
        try:
            text = data.decode("utf8")
        except UnicodeDecodeError as err:
            yield "", Where(data.count(b"\n", 0, err.start) + 1, self.name), \
                f"invalid UTF-8 ({err.reason} at byte {err.start})"
            return
        if text.strip():
            yield text, Where(1, self.name, self.doc_id), None

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
