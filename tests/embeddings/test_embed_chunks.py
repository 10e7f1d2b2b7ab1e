"""The embedder's chunk-wise tokenisation gives the tokenizer's own ids, and the memory-mapped tables."""
from __future__ import annotations

import numpy as np
import pytest

from memkit.embeddings.static import StaticEmbedder

TRICKY = [
    "Prefers bomba rice for paella (2026-02-12)",
    "Router is a MikroTik hAP ax3 running RouterOS 7.16, node-3/v1.2_rc; caroline's",
    "tabs\tand\nnewlines\r\nand  double  spaces ",
    "",
    "   ",
    "[UNK] and [PAD] inside[UNK]words",
    "supercalifragilisticexpialidocious" * 4,  # longer than a WordPiece word may be: [UNK]
    "ctrl\x01char and \x0bvertical tab",  # control characters: the tokenizer takes the whole text
    "Ünïcödé naïve café — déjà vu 🙂",  # not ASCII: the tokenizer takes the whole text
    "word " * 700,  # more tokens than max_length
    "!!! ... -- ?? a.b.c 3.14 $5 #tag @name",
]


def bert_model(tmp_path):
    from model2vec import StaticModel
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    words = sorted({w.strip(".,;()!?").lower() for t in TRICKY for w in t.split()} - {""})
    pieces = ["[PAD]", "[UNK]", *"abcdefghijklmnopqrstuvwxyz0123456789.,;:!?()[]-_/'$#@",
              *(f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz0123456789"), *words[:60]]
    vocab = {p: i for i, p in enumerate(dict.fromkeys(pieces))}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.add_special_tokens(["[PAD]", "[UNK]"])
    table = np.random.default_rng(0).standard_normal((len(vocab), 16)).astype(np.float16)
    StaticModel(vectors=table, tokenizer=tokenizer, normalize=True).save_pretrained(str(tmp_path / "m"))
    return tmp_path / "m"


def test_chunk_tokenisation_gives_the_tokenizers_ids(tmp_path):
    folder = bert_model(tmp_path)
    chunked = StaticEmbedder(folder)
    assert chunked.token_ids(["warm up"])  # the first call checks itself against the tokenizer
    with_tokenizer = StaticEmbedder(folder)
    with_tokenizer._chunks = None  # the tokenizer on whole texts
    texts = TRICKY * 3
    assert chunked.token_ids(texts) == with_tokenizer.token_ids(texts)
    assert chunked._chunks  # the chunk path was used
    np.testing.assert_array_equal(chunked.embed(texts), with_tokenizer.embed(texts))
    one = np.vstack([chunked.embed([t]) for t in TRICKY])  # a single text takes a shorter path
    np.testing.assert_array_equal(one, chunked.embed(TRICKY))


def test_same_vectors_as_model2vec_with_a_bert_tokenizer(tmp_path):
    from model2vec import StaticModel

    folder = bert_model(tmp_path)
    ours = StaticEmbedder(folder).embed(TRICKY)
    theirs = StaticModel.from_pretrained(str(folder)).encode(TRICKY).astype(np.float32)
    np.testing.assert_allclose(ours, theirs, atol=2e-3)  # float16 table: model2vec averages in float16


def test_tables_are_memory_mapped_and_a_bulk_batch_widens_once(tmp_path):
    folder = bert_model(tmp_path)
    e = StaticEmbedder(folder)
    assert isinstance(e.embeddings.base, np.memmap) or isinstance(e.embeddings, np.memmap) or \
        not e.embeddings.flags.owndata
    assert e._table(1) is e.embeddings and e._table(10_000).dtype == np.float32
    assert e._table(10_000) is e._table(10_000)  # converted once


@pytest.mark.parametrize("bad", [b"", b"\x08\x00\x00\x00\x00\x00\x00\x00{}", b"\xff" * 16])
def test_a_damaged_model_file_is_a_model_error(tmp_path, bad):
    from memkit import ModelError

    folder = bert_model(tmp_path)
    (folder / "model.safetensors").write_bytes(bad)
    with pytest.raises(ModelError, match="cannot load the model|no 'embeddings'"):
        StaticEmbedder(folder)


def test_a_batch_straddling_the_chunk_cache_limit_keeps_its_words(tmp_path, monkeypatch):
    """Issue 31: the word-chunk cache is cleared when it passes its limit; a batch whose words were
    found in the cache before the clear must still get their ids (it raised KeyError)."""
    import memkit.embeddings.static as embed

    monkeypatch.setattr(embed, "MAX_CACHED_CHUNKS", 4)
    folder = bert_model(tmp_path)
    chunked = StaticEmbedder(folder)
    whole = StaticEmbedder(folder)
    whole._chunks = None
    first = ["prefers bomba rice for paella"]  # five words: the cache passes the limit
    second = ["rice for paella", "prefers new words here", "bomba and more words"]  # old and new words
    third = ["a b c d e f g h", "rice bomba", "tabs and newlines"]
    for batch in (first, second, third, second):
        assert chunked.token_ids(batch) == whole.token_ids(batch)
    assert chunked._chunks is not None  # still the chunk path
    np.testing.assert_array_equal(chunked.embed(second + third), whole.embed(second + third))


def test_a_cache_cleared_mid_batch_by_another_call_drops_nothing_the_batch_needs(tmp_path, monkeypatch):
    """Another thread (a server's second vault shares the process's model) may clear the cache
    while a batch is being tokenised: the batch keeps what it looked up."""
    folder = bert_model(tmp_path)
    chunked = StaticEmbedder(folder)
    whole = StaticEmbedder(folder)
    whole._chunks = None
    texts = ["prefers bomba rice for paella", "rice for paella node-3"]
    assert chunked.token_ids(texts[:1]) == whole.token_ids(texts[:1])  # the cache holds those words
    encode = chunked._encode

    def clearing(batch):
        assert chunked._chunks is not None
        chunked._chunks.clear()  # what a concurrent call past the limit does
        return encode(batch)

    monkeypatch.setattr(chunked, "_encode", clearing)
    assert chunked.token_ids(texts) == whole.token_ids(texts)


def test_memkit_index_with_more_distinct_words_than_the_cache_holds(tmp_path, monkeypatch):
    """Issue 31 end to end: `memkit index` on a vault whose distinct words pass the cache's limit
    (each entry carries a unique token, as ids and numbers do) indexes, and search finds them."""
    from click.testing import CliRunner

    import memkit.embeddings.static as embed
    from memkit.frontends.cli.group import main

    monkeypatch.setattr(embed, "MAX_CACHED_CHUNKS", 50)
    topics = tmp_path / "v" / "topics"
    runner = CliRunner()
    assert runner.invoke(main, ["init", str(tmp_path / "v")]).exit_code == 0
    for t in range(6):
        lines = "".join(f"- Ticket n{t}x{i} was about the router on desk {i}\n" for i in range(40))
        (topics / f"t{t}.md").write_text(f"# T{t}\n\n{lines}", encoding="utf-8")
    got = runner.invoke(main, ["--vault", str(tmp_path / "v"), "index"])
    assert got.exit_code == 0, got.output
    got = runner.invoke(main, ["--vault", str(tmp_path / "v"), "search", "ticket n3x17"])
    assert got.exit_code == 0 and "n3x17" in got.output, got.output
