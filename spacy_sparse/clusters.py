"""Word clusters: a word form -> its Brown cluster, for the `clu*` atoms.

Brown clusters (a binary tree over the words of a large unlabelled corpus)
give a word seen rarely or never in the training data the features of the
words it is distributed like; that helps most on text from other domains.
A cluster is a bit path ("0110..."), stored as an int with a leading 1
(spaCy's `lexeme_cluster` encoding); the atoms read its first 4, 6 and 10
bits and the whole path.

A table can also hold, per lowercase form, how the word is written in a
large corpus (`casefreq`, from spacy-lookups-data's `lexeme_prob`): its
usual case (lower, Title or UPPER), how far that case leads the others and
how frequent the word is. A word the training data never had then still
shows whether it is usually a name (`lisa` -> Lisa) or a common word
(`Laughter` -> laughter), which a tagger cannot see from the form alone.
It can hold the form's WordNet readings as well (`wnpos`, from the lemma
tables of the same package): the parts of speech whose lemma lists hold the
form, as it is or through an inflection rule (`transmittal`: a noun;
`clashed`: a verb's -ed form), so a new word gets the word classes a
dictionary gives it.

A table maps a word form's 64-bit string hash, folded to 32 bits as feature
keys are, to its path. It travels inside each model file that uses it, so a
trained pipeline needs nothing else at run time. Sources (`clusters` in a
component's `[initialize.components.*]` block):

- "en_brown_1000": the table shipped in this package (1,000 clusters of about
  190k English word forms, from spacy-lookups-data's `en_lexeme_cluster`, MIT);
- "lookups": that same source read from an installed spacy-lookups-data for
  the pipeline's language;
- a path to Percy Liang's `brown-cluster` output (`paths`: bits, word, count,
  tab-separated), to bring clusters trained on one's own domain;
- a path to a table written by `python -m spacy_sparse clusters`.
"""
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np
from spacy.strings import get_string_id

from .runtime.arrays import find_sorted, unique
from .fields import array_field, zipped
from .word_codes import FREQ_EDGES, Lemmas, casefreq_codes, wordnet_readings

SHIPPED = {"en_brown_1000": "en_brown_1000.msgpack"}
FORMAT_NAME = "spacy-sparse-clusters"
# path prefixes read by the atoms, and their LEX_ATTRS names; 99 = the whole path
PREFIXES: Tuple[Tuple[str, int], ...] = (("clu4", 4), ("clu6", 6), ("clu10", 10), ("clu", 99))
CASEFREQ = "casefreq"  # the atom of a lowercase form's case and frequency code
WNPOS = "wnpos"  # the atom of a lowercase form's WordNet readings
ATOMS = frozenset([name for name, _ in PREFIXES] + [CASEFREQ, WNPOS])
MAX_ENTRIES = 4_000_000
MAX_PATH_BITS = 62
# atom_value_rows looks up at most this many forms one by one (_form_atoms), more as arrays
FEW_FORMS = 4


class ClusterTable:
    """Word keys (sorted, 32-bit) and their paths as two numpy arrays: a
    table of 124k forms takes 1.5 MB where a dict took about 40, and a
    lookup (once per new word type) is a binary search. Not changed after
    it is made, so components and lexicons share one freely."""

    __slots__ = ("keys", "paths", "stats", "senses", "has_stats", "has_senses")

    def __init__(self, keys: Optional[np.ndarray] = None, paths: Optional[np.ndarray] = None,
                 stats: Optional[np.ndarray] = None, senses: Optional[np.ndarray] = None):
        self.keys = np.zeros(0, dtype=np.uint32) if keys is None else np.ascontiguousarray(keys, dtype=np.uint32)
        self.paths = np.zeros(0, dtype=np.uint64) if paths is None else np.ascontiguousarray(paths, dtype=np.uint64)
        # casefreq code and WordNet reading bits of a lowercase form (0: none); a
        # key may carry codes and no path (0)
        self.stats = (np.zeros(self.keys.shape, dtype=np.uint8) if stats is None
                      else np.ascontiguousarray(stats, dtype=np.uint8))
        self.senses = (np.zeros(self.keys.shape, dtype=np.uint16) if senses is None
                       else np.ascontiguousarray(senses, dtype=np.uint16))
        if (self.keys.shape != self.paths.shape or self.keys.shape != self.stats.shape
                or self.keys.shape != self.senses.shape or np.any(self.keys[1:] <= self.keys[:-1])):
            raise ValueError("a cluster table needs one path and one code per key and keys sorted without repeats")
        self.has_stats = bool(self.stats.any())
        self.has_senses = bool(self.senses.any())

    @classmethod
    def from_dict(cls, table: Dict[int, int], stats: Optional[Dict[int, int]] = None,
                  senses: Optional[Dict[int, int]] = None) -> "ClusterTable":
        stats, senses = stats or {}, senses or {}
        keys = sorted(set(table) | set(stats) | set(senses))
        return cls(np.array(keys, dtype=np.uint32), np.array([table.get(k, 0) for k in keys], dtype=np.uint64),
                   np.array([stats.get(k, 0) for k in keys], dtype=np.uint8),
                   np.array([senses.get(k, 0) for k in keys], dtype=np.uint16))

    def find_many(self, keys: np.ndarray) -> np.ndarray:
        """The index of each key (folded hashes) in the table, -1 where it
        has none: one search for all. The keys are searched as uint32, the
        table's own type: numpy 2 casts the whole table to the wider type of
        the keys first (0.2 ms a search on the shipped table; docs/decisions/measurement-log.md)."""
        keys = np.asarray(keys)
        out = np.full(keys.shape, -1, dtype=np.int64)
        if not self.keys.size or not keys.size:
            return out
        fits = (keys >= 0) & (keys <= 0xFFFFFFFF)
        wanted = keys[fits].astype(np.uint32)
        at, hit = find_sorted(self.keys, wanted)
        out[fits] = np.where(hit, at, -1)
        return out

    def find(self, key: int) -> int:
        """find_many of one key, by one search: for a few keys, a search each costs less than the array calls
        around one search for all."""
        if not 0 <= key <= 0xFFFFFFFF:
            return -1
        wanted = np.uint32(key)  # the table's own type: a wider key would have the whole table cast first
        i = int(self.keys.searchsorted(wanted))
        return i if i < self.keys.shape[0] and self.keys[i] == wanted else -1

    def get(self, key: int) -> Optional[int]:
        """The cluster path of a form's key, if it has one."""
        i = self.find(key)
        return int(self.paths[i]) if i >= 0 and self.paths[i] else None

    def codes(self, key: int) -> Tuple[int, int]:
        """The casefreq code and WordNet reading bits of a lowercase form's key (0: none)."""
        i = self.find(key)
        return (int(self.stats[i]), int(self.senses[i])) if i >= 0 else (0, 0)

    def keeping(self, atoms: Iterable[str]) -> "ClusterTable":
        """Only the columns the `atoms` read (paths: any `clu*` atom), and
        the forms that have one of them: what a model keeps of a table."""
        atoms = set(atoms)
        paths = self.paths if atoms & {name for name, _ in PREFIXES} else np.zeros_like(self.paths)
        stats = self.stats if CASEFREQ in atoms else np.zeros_like(self.stats)
        senses = self.senses if WNPOS in atoms else np.zeros_like(self.senses)
        keep = (paths > 0) | (stats > 0) | (senses > 0)
        if keep.all() and paths is self.paths and stats is self.stats and senses is self.senses:
            return self
        return ClusterTable(self.keys[keep], paths[keep], stats[keep], senses[keep])

    def common(self, min_logprob: float) -> "ClusterTable":
        """Only the forms a large corpus writes more often than
        exp(min_logprob), by their casefreq code's frequency class
        (word_codes.FREQ_EDGES holds the values a cut can fall on): a smaller
        table for a model that must be small. Forms without a code go too."""
        if min_logprob not in FREQ_EDGES:
            raise ValueError(f"clusters_min_logprob must be one of {list(FREQ_EDGES)}, got {min_logprob!r}")
        if not self.has_stats:
            raise ValueError("the word table has no casefreq codes to tell common words by")
        classes = FREQ_EDGES.index(min_logprob)  # frequency classes 0..classes lie above the cut
        keep = (self.stats > 0) & ((self.stats.astype(np.int64) - 1) % 8 <= classes)
        return ClusterTable(self.keys[keep], self.paths[keep], self.stats[keep], self.senses[keep])

    def items(self) -> Iterable[Tuple[int, int]]:
        """(key, path) of the forms that have a path."""
        keep = self.paths > 0
        return zip(self.keys[keep].tolist(), self.paths[keep].tolist())

    @property
    def n_clusters(self) -> int:
        return int(np.unique(self.paths[self.paths > 0]).size)

    def __len__(self) -> int:
        return int(self.keys.size)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ClusterTable) and np.array_equal(self.keys, other.keys)
                and np.array_equal(self.paths, other.paths) and np.array_equal(self.stats, other.stats)
                and np.array_equal(self.senses, other.senses))

    __hash__ = None  # type: ignore[assignment]


EMPTY = ClusterTable()


def atoms_read(templates: Iterable) -> List[str]:
    """The `clu*`, `casefreq` and `wnpos` atoms a set of parsed templates reads (sorted)."""
    return sorted({a.attr for t in templates for a in t.atoms} & ATOMS)


def fold(h: int) -> int:
    """A 64-bit string hash folded to the 32 bits a table stores."""
    return (h ^ (h >> 32)) & 0xFFFFFFFF


def key_of(text: str) -> int:
    return fold(get_string_id(text))


def table_from_words(pairs: Iterable[Tuple[str, int]], logprobs: Optional[Dict[str, float]] = None,
                     lemmas: Optional["Lemmas"] = None) -> ClusterTable:
    """(word, path int) pairs -> a table. A form whose lowercase has the same
    path is left out (the lookup falls back to the lowercase), which makes
    the table a third smaller. `logprobs` (word form -> log probability, as
    lexeme_prob has them) add each lowercase form's casefreq code, and
    `lemmas` the WordNet readings of the lowercase forms of `logprobs` and
    of the lemmas themselves."""
    words = {w: int(p) for w, p in pairs if w and int(p) > 1}
    codes = casefreq_codes(logprobs or {})
    readings = {}
    if lemmas:  # every form of the corpus and every one-word lemma, however rare
        forms = {w.lower() for w in logprobs or {}} | {w for ws in lemmas.index.values() for w in ws if "_" not in w}
        readings = {w: wordnet_readings(lemmas, w) for w in forms if w}
    return ClusterTable.from_dict({key_of(w): p for w, p in words.items()
                                   if not (w != w.lower() and words.get(w.lower()) == p)},
                                  {key_of(w): c for w, c in codes.items()},
                                  {key_of(w): r for w, r in readings.items() if r})


def path_int(bits: str) -> int:
    """'0110' -> 0b10110 (a leading 1 keeps leading zeros)."""
    if not bits or len(bits) > MAX_PATH_BITS or set(bits) - {"0", "1"}:
        raise ValueError(f"not a cluster bit path: {bits!r}")
    return int("1" + bits, 2)


def read_liang(path: Path) -> ClusterTable:
    """Liang's `paths` file: `bits<TAB>word<TAB>count` per line."""
    pairs = []
    with Path(path).open(encoding="utf8") as f:
        for number, line in enumerate(f, start=1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 2:
                raise ValueError(f"{path}, line {number}: expected 'bits<TAB>word[<TAB>count]'")
            try:
                pairs.append((parts[1], path_int(parts[0])))
            except ValueError as err:
                raise ValueError(f"{path}, line {number}: {err}") from None
    return table_from_words(pairs)


def read_lookups(lang: str) -> ClusterTable:
    """spacy-lookups-data's `{lang}_lexeme_cluster` table (word forms kept,
    so case variants can be merged), with casefreq codes from its
    `{lang}_lexeme_prob` table and WordNet readings from its lemma tables
    where it has them."""
    import gzip
    import json

    try:
        import spacy_lookups_data
    except ImportError:
        raise ValueError("clusters = 'lookups' reads spacy-lookups-data: pip install spacy-lookups-data") from None
    path = Path(spacy_lookups_data.__file__).parent / "data" / f"{lang}_lexeme_cluster.json.gz"
    if not path.exists():
        raise ValueError(f"spacy-lookups-data has no lexeme_cluster table for language {lang!r}")
    with gzip.open(path, "rt", encoding="utf8") as f:
        pairs = json.load(f)
    def table(name: str) -> Optional[dict]:
        found = path.parent / f"{lang}_{name}.json.gz"
        if not found.exists():
            return None
        with gzip.open(found, "rt", encoding="utf8") as f:
            return json.load(f)

    index, exceptions, rules = table("lemma_index"), table("lemma_exc"), table("lemma_rules")
    lemmas = (Lemmas({pos: frozenset(words) for pos, words in index.items()}, exceptions or {}, rules or {})
              if index else None)
    return table_from_words(pairs.items(), table("lexeme_prob") or {}, lemmas)


def resolve(source: Union[str, Path], lang: str = "en") -> ClusterTable:
    """A `clusters` setting -> a table (see the module docstring)."""
    name = str(source)
    if name == "lookups":
        return read_lookups(lang)
    if name in SHIPPED and not Path(name).exists():
        path = Path(__file__).parent / "data" / "clusters" / SHIPPED[name]
        return read_table(path.read_bytes())
    path = Path(name)
    if not path.is_file():
        known = ", ".join(["lookups", *SHIPPED])
        raise ValueError(f"clusters: no file {name!r}, and not one of {known}")
    data = path.read_bytes()
    if data[:1] in (b"\x80", b"\x81", b"\x82", b"\x83", b"\xde", b"\xdf"):  # a msgpack map
        return read_table(data)
    return read_liang(path)


def encode(table: ClusterTable) -> Dict[str, object]:
    """The stored form: sorted keys as steps and the paths, both zipped."""
    keys = table.keys.astype(np.uint64)
    out = {"cluster_keys": zipped(np.diff(keys, prepend=np.uint64(0))), "cluster_paths": zipped(table.paths)}
    if table.has_stats:
        out["cluster_stats"] = zipped(table.stats)
    if table.has_senses:
        out["cluster_senses"] = zipped(table.senses)
    return out


def decode(msg: Dict[str, object]) -> ClusterTable:
    """Inverse of encode; a model written before clusters has none."""
    if "cluster_keys" not in msg and "cluster_paths" not in msg:
        return ClusterTable()
    steps = array_field(msg, "cluster_keys", (np.uint64,), 1, limit=MAX_ENTRIES)
    paths = array_field(msg, "cluster_paths", (np.uint64,), 1, limit=MAX_ENTRIES)
    stats = array_field(msg, "cluster_stats", (np.uint8,), 1, limit=MAX_ENTRIES) if "cluster_stats" in msg else None
    senses = array_field(msg, "cluster_senses", (np.uint16,), 1, limit=MAX_ENTRIES) if "cluster_senses" in msg else None
    keys = np.cumsum(steps, dtype=np.uint64)
    if keys.size and int(keys.max()) > 0xFFFFFFFF:
        raise ValueError("Corrupt model: the cluster table is damaged")
    if paths.size and (int(paths.max()) >= 1 << (MAX_PATH_BITS + 1) or bool(np.any(paths == 1))
                       or (stats is None and senses is None and int(paths.min()) < 2)):
        raise ValueError("Corrupt model: cluster paths out of range")
    try:
        return ClusterTable(keys, paths, stats, senses)  # checks the lengths and that keys climb
    except ValueError:
        raise ValueError("Corrupt model: the cluster table is damaged") from None


def write_table(table: ClusterTable) -> bytes:
    """A table as a file of its own (sealed like a model file)."""
    from .codec import seal

    return seal({"format": FORMAT_NAME, **encode(table)})


def read_table(data: bytes) -> ClusterTable:
    from .codec import unseal

    msg = unseal(data)
    if not isinstance(msg, dict) or msg.get("format") != FORMAT_NAME:
        raise ValueError(f"Not a spacy-sparse cluster table: expected format {FORMAT_NAME!r}")
    return decode(msg)


def atoms(table: ClusterTable, text: str) -> Dict[str, int]:
    """The `clu*` atom values of a word form: its path (or that of its
    lowercase or title-case form) cut to each prefix length, hashed; 0 for a
    form the table does not hold; and its casefreq and wnpos values."""
    return dict(zip([name for name, _ in PREFIXES] + [CASEFREQ, WNPOS], atom_values(table, text)))


NO_CLUSTER = (0,) * len(PREFIXES)
_CODE_VALUES = np.array([0] + [get_string_id(f"casefreq:{code}") for code in range(1, 256)], dtype=np.uint64)
_READING_VALUES: Dict[int, int] = {0: 0}  # reading bits -> atom value
_VALUES_OF_PATH: Dict[int, Tuple[int, ...]] = {}  # path -> its atom values (paths are few: 1,000 clusters)


def atom_values(table: ClusterTable, text: str) -> Tuple[int, ...]:
    """atoms() as a tuple: the PREFIXES values, then casefreq and wnpos."""
    return tuple(atom_value_rows(table, [text])[0].tolist())


def string_hashes(texts: Sequence[str]) -> np.ndarray:
    return np.array([get_string_id(t) for t in texts], dtype=np.uint64)


def fold_many(hashes: np.ndarray) -> np.ndarray:
    """fold() of an array of 64-bit string hashes."""
    return (hashes ^ (hashes >> np.uint64(32))) & np.uint64(0xFFFFFFFF)


def atom_value_rows(table: ClusterTable, texts: Sequence[str], orths: Optional[np.ndarray] = None,
                    lowers: Optional[np.ndarray] = None) -> np.ndarray:
    """atom_values of many word forms, a row each (the lexicon's new word
    types): the table is searched once per kind of key for all of them, not
    four times per form in Python. `orths` and `lowers` are the forms' and
    their lowercase forms' string hashes, where the caller has them. A form
    takes the path of the first of itself, its lowercase and its title case
    that has one; casefreq and wnpos come from the lowercase form."""
    n = len(texts)
    out = np.zeros((n, len(PREFIXES) + 2), dtype=np.uint64)
    if not table or not n:
        return out
    orths = string_hashes(texts) if orths is None else orths
    lowers = string_hashes([t.lower() for t in texts]) if lowers is None else lowers
    if n <= FEW_FORMS:
        for i, (text, orth, lower) in enumerate(zip(texts, orths.tolist(), lowers.tolist())):
            out[i] = _form_atoms(table, text, orth, lower)
        return out
    if table.has_stats or table.has_senses:
        at = table.find_many(fold_many(lowers))
        found = at >= 0
        out[:, -2] = _CODE_VALUES[np.where(found, table.stats[at], 0)]
        bits, where = unique(np.where(found, table.senses[at], 0), return_inverse=True)
        out[:, -1] = np.array([_reading_value(b) for b in bits.tolist()], dtype=np.uint64)[where.reshape(-1)]
    path = np.zeros(n, dtype=np.uint64)
    for form in ("text", "lower", "title"):
        need = np.flatnonzero(path == 0)
        if not need.size:
            break
        hashes = orths[need] if form == "text" else lowers[need] if form == "lower" else \
            string_hashes([texts[i].title() for i in need.tolist()])
        at = table.find_many(fold_many(hashes))
        path[need] = np.where(at >= 0, table.paths[at], 0)
    paths, where = unique(path, return_inverse=True)
    values = np.array([_path_atoms(p) for p in paths.tolist()], dtype=np.uint64).reshape(-1, len(PREFIXES))
    out[:, :len(PREFIXES)] = values[where.reshape(-1)]
    return out


def _form_atoms(table: ClusterTable, text: str, orth: int, lower: int) -> List[int]:
    """atom_value_rows' row of one form, found by a search per key instead of one per kind of key for all:
    for the few new word types of one short doc, a batch's array calls cost more than the searches."""
    row = [0] * (len(PREFIXES) + 2)
    if table.has_stats or table.has_senses:
        at = table.find(fold(lower))
        row[-2] = int(_CODE_VALUES[table.stats[at] if at >= 0 else 0])
        row[-1] = _reading_value(int(table.senses[at]) if at >= 0 else 0)
    path = 0
    for form in ("text", "lower", "title"):
        h = orth if form == "text" else lower if form == "lower" else get_string_id(text.title())
        at = table.find(fold(h))
        path = int(table.paths[at]) if at >= 0 else 0
        if path:
            break
    row[:len(PREFIXES)] = _path_atoms(path)
    return row


def _reading_value(bits: int) -> int:
    reading = _READING_VALUES.get(bits)
    if reading is None:
        reading = _READING_VALUES[bits] = get_string_id(f"wnpos:{bits}")
    return reading


def _path_atoms(path: int) -> Tuple[int, ...]:
    """The PREFIXES values of a cluster path (0: no path, no values)."""
    if not path:
        return NO_CLUSTER
    values = _VALUES_OF_PATH.get(path)
    if values is None:
        bits = bin(path)[3:]
        values = tuple(get_string_id(f"clu:{bits[:n]}") for _, n in PREFIXES)
        if len(_VALUES_OF_PATH) < 1 << 16:
            _VALUES_OF_PATH[path] = values
    return values
