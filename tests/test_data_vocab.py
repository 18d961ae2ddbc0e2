import pytest
import torch

from seqbook.data import Vocab, tokenize


def test_tokenize_levels():
    assert tokenize("ab c") == ["a", "b", " ", "c"]
    assert tokenize("one thousand, two hundred and thirty-four", "word") == [
        "one", "thousand", ",", "two", "hundred", "and", "thirty", "-", "four",
    ]
    assert tokenize("vierunddreißig", "word") == ["vierunddreißig"]
    assert tokenize("", "char") == []


def test_tokenize_bad_input():
    with pytest.raises(ValueError, match="level"):
        tokenize("abc", "sentence")
    with pytest.raises(TypeError, match="text"):
        tokenize(["a", "b"])


def test_specials_come_first_and_tokens_by_frequency_then_alphabet():
    vocab = Vocab([["b", "a", "c"], ["c", "a"], ["c"]])
    assert vocab.tokens == ["<pad>", "<bos>", "<eos>", "<unk>", "c", "a", "b"]
    assert (vocab.pad_id, vocab.bos_id, vocab.eos_id, vocab.unk_id) == (0, 1, 2, 3)
    assert len(vocab) == 7 and "c" in vocab and "z" not in vocab


def test_ids_do_not_depend_on_corpus_order():
    corpus = [["x", "y"], ["y", "z"], ["z", "x"]]
    assert Vocab(corpus).tokens == Vocab(corpus[::-1]).tokens


def test_min_freq_maps_rare_tokens_to_unk():
    vocab = Vocab([["a", "a", "b"]], min_freq=2)
    assert "b" not in vocab
    assert vocab.encode(["a", "b"]) == [vocab["a"], vocab.unk_id]


def test_encode_decode_round_trip_with_bos_eos():
    vocab = Vocab([tokenize("hello world")])
    ids = vocab.encode(tokenize("hello"), add_bos=True, add_eos=True)
    assert ids[0] == vocab.bos_id and ids[-1] == vocab.eos_id
    assert "".join(vocab.decode(ids)) == "hello"
    assert vocab.decode(ids, skip_specials=False)[0] == "<bos>"


def test_decode_stops_at_eos_and_skips_padding():
    vocab = Vocab([["a", "b"]])
    a, b = vocab["a"], vocab["b"]
    assert vocab.decode([vocab.bos_id, a, vocab.pad_id, b, vocab.eos_id, a]) == ["a", "b"]


def test_specials_in_the_corpus_do_not_get_a_second_id():
    vocab = Vocab([["<pad>", "a", "<eos>"]])
    assert vocab.tokens == ["<pad>", "<bos>", "<eos>", "<unk>", "a"]


def test_vocab_bad_input():
    with pytest.raises(TypeError, match="corpus"):
        Vocab("a single string")
    with pytest.raises(TypeError, match=r"corpus\[1\]"):
        Vocab([["a"], "word"])
    with pytest.raises(ValueError, match="min_freq"):
        Vocab([["a"]], min_freq=0)
    vocab = Vocab([["a"]])
    with pytest.raises(TypeError, match="tokens"):
        vocab.encode("abc")
    with pytest.raises(ValueError, match="ids"):
        vocab.decode([99])


def test_decode_takes_a_tensor_of_ids_as_a_list():
    """A 1-D tensor of ids (a model's output) decodes as the list of its ids; a str or a
    number is no iterable of ids."""
    vocab = Vocab([["a", "b", "c"]])
    ids = vocab.encode(["a", "c"])
    assert vocab.decode(torch.tensor(ids)) == vocab.decode(ids) == ["a", "c"]
    with pytest.raises(TypeError, match=r"^ids must be .*Iterable\[SupportsIndex\], got 'ab'"):
        vocab.decode("ab")
