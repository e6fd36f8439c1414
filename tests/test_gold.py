"""Gold values kept per example from batch to batch (pipeline/gold.py): the same values spaCy's alignment gives,
read once per reference and tokenization, and read again when either changes."""
import spacy
from spacy.training import Example


def _examples(corpus):
    from spacy_sparse.readers import create_gold_token_corpus

    nlp = spacy.blank("en")
    return list(create_gold_token_corpus(corpus / "train.spacy", limit=40, sents=True, tokens="both")(nlp))


def test_gold_values_are_kept_per_reference_and_words(corpus):
    from spacy_sparse.pipeline.gold import GoldMemo
    from spacy_sparse.pipeline.parser import _aligned_parse
    from spacy_sparse.pipeline.senter import _aligned_starts

    examples = _examples(corpus)
    memo, calls = GoldMemo(), []

    def parse(eg):
        calls.append(eg)
        return _aligned_parse(eg)

    first = [memo.get(eg, parse) for eg in examples]
    # a doc's gold-token and raw-text copies are kept apart unless spaCy's tokenizer gave the gold words
    distinct = {(id(eg.reference), tuple(t.text for t in eg.predicted)) for eg in examples}
    assert len(calls) == len(distinct) < len(examples)
    for eg, (heads, deps) in zip(examples, first):
        expect_heads, expect_deps = eg.get_aligned_parse(projectivize=True)
        assert list(heads) == list(expect_heads) and list(deps) == list(expect_deps)
    # what Language.update hands a component: copies of the predicted docs, the same references
    copies = [Example(eg.predicted.copy(), eg.reference) for eg in examples]
    assert [memo.get(eg, parse) for eg in copies] == first and len(calls) == len(distinct)
    # a reference annotated otherwise is read again
    eg = examples[0]
    eg.reference[1].dep_ = "dep" if eg.reference[1].dep_ != "dep" else "amod"
    heads, deps = memo.get(Example(eg.predicted.copy(), eg.reference), parse)
    assert len(calls) == len(distinct) + 1 and deps[1] == eg.reference[1].dep_

    starts = GoldMemo()
    for eg in examples[1:]:
        assert starts.get(eg, _aligned_starts).tolist() == [
            -1 if s is None else int(s) for s in eg.get_aligned_sent_starts()]
