"""The argument contracts of seqbook._contracts: what they accept, what they refuse
and with which message, and how they wrap functions and methods."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn

from seqbook._contracts import (
    FiniteReal,
    Flag,
    FloatDtype,
    IndexInto,
    InstanceOf,
    IntAtLeast,
    IntIn,
    MultipleOf,
    NonNegativeReal,
    OneOf,
    OtherThan,
    PositiveInt,
    Probability,
    RandomGenerator,
    RealIn,
    SequenceOf,
    Shaped,
    _checked,
    check_signatures,
    contracts_of,
)

__all__ = ["scale", "Cell", "lookup"]


def scale(x: Shaped("B T D", floating=True), factor: NonNegativeReal = 1,
          mode: OneOf("sum", "mean") = "sum", mask: Shaped("B T") | None = None) -> float:
    """A public function with contracts; returns ``factor`` as the body received it."""
    return factor


def lookup(ids: Shaped("B T", ids="vocab_size"), vocab_size: PositiveInt,
           generator: RandomGenerator = None) -> torch.Tensor:
    return ids


class Cell(nn.Module):
    def __init__(self, input_size: PositiveInt, dropout: Probability = 0.0, bias: Flag = True):
        super().__init__()
        self.input_size = input_size
        self.weight = nn.Parameter(torch.zeros(input_size, 2))

    def forward(self, x: Shaped("B input_size", floating=True, dtype_of="module"),
                h: Shaped("B 2", dtype_of="x") | None = None) -> torch.Tensor:
        return x @ self.weight

    @torch.no_grad()
    def run(self, steps: PositiveInt) -> int:
        return steps

    @staticmethod
    def make(size: RealIn(0.0, 1.0)) -> float:
        return size

    def _kernel(self, steps: PositiveInt) -> int:  # private: trusts its arguments
        return steps

    def describe(self, other: InstanceOf(nn.Module, what="a module")) -> str:
        return type(other).__name__


check_signatures(globals())


def test_good_arguments_pass_and_scalars_arrive_converted():
    x = torch.zeros(2, 3, 4)
    assert scale(x, 2) == 2.0 and isinstance(scale(x, 2), float)
    assert scale(x, mask=torch.ones(2, 3, dtype=torch.bool)) == 1.0
    cell = Cell(4)
    assert cell(torch.zeros(5, 4)).shape == (5, 2)
    assert cell.run(3) == 3 and Cell.make(0.5) == 0.5 and cell.describe(cell) == "Cell"
    assert lookup(torch.tensor([[0, 2]]), 3).tolist() == [[0, 2]]


@pytest.mark.parametrize("call, error, message", [
    (lambda: scale(torch.zeros(2, 3)), ValueError, r"x must have 3 dimensions \(B, T, D\)"),
    (lambda: scale(torch.zeros(2, 3, 4, dtype=torch.long)), TypeError, "x must have a floating"),
    (lambda: scale([1.0]), TypeError, "x must be a torch.Tensor"),
    (lambda: scale(torch.zeros(2, 3, 4), -1), ValueError, "factor must be >= 0"),
    (lambda: scale(torch.zeros(2, 3, 4), True), TypeError, "factor must be a real number"),
    (lambda: scale(torch.zeros(2, 3, 4), mode="max"), ValueError, "mode must be one of"),
    (lambda: scale(torch.zeros(2, 3, 4), mask=torch.ones(2, 4)), ValueError,
     r"mask must have shape \(B, T\) with T = 3 \(as in x\), got \(2, 4\)"),
    (lambda: Cell(0), ValueError, "input_size must be >= 1"),
    (lambda: Cell(2, dropout=1.0), ValueError, r"dropout must be in \[0, 1\)"),
    (lambda: Cell(2, bias=1), TypeError, "bias must be a bool"),
    (lambda: Cell(4)(torch.zeros(5, 3)), ValueError,
     r"x must have shape \(B, input_size\) with input_size = 4 \(the module's input_size\)"),
    (lambda: Cell(4)(torch.zeros(5, 4, dtype=torch.float64)), TypeError,
     "x has dtype torch.float64 but the module's parameters"),
    (lambda: Cell(4)(torch.zeros(5, 4), torch.zeros(6, 2)), ValueError,
     r"h must have shape \(B, 2\) with B = 5 \(as in x\)"),
    (lambda: Cell(4)(torch.zeros(5, 4), torch.zeros(5, 2, dtype=torch.float64)), TypeError,
     "h has dtype torch.float64 but x has dtype"),
    (lambda: Cell(4).run(0), ValueError, "steps must be >= 1"),
    (lambda: Cell.make(2.0), ValueError, "size must be <= 1.0"),
    (lambda: Cell(4).describe(3), TypeError, r"other must be a module, got 3 \(int\)"),
    (lambda: lookup(torch.tensor([[0, 3]]), 3), ValueError,
     r"ids must hold token ids in \[0, 3\) \(the argument vocab_size\)"),
    (lambda: lookup(torch.tensor([[0]]), 3, generator=0), TypeError, "generator must be a torch"),
])
def test_bad_arguments_are_refused_naming_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_defaults_are_checked_and_none_passes_only_where_allowed():
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        scale(None)
    assert scale(torch.zeros(1, 1, 1), mask=None) == 1.0


def test_private_methods_are_not_wrapped_and_wrappers_keep_signature_and_source():
    assert Cell._kernel(None, -5) == -5
    assert set(contracts_of(Cell.forward)) == {"x", "h"}
    assert contracts_of(Cell._kernel) == {}
    assert list(inspect.signature(scale).parameters) == ["x", "factor", "mode", "mask"]
    assert "return factor" in inspect.getsource(scale)
    with pytest.raises(TypeError):
        scale(torch.zeros(1, 1, 1), 1, "sum", None, "extra")


def test_extra_positional_and_keyword_arguments_pass_through_unchecked():
    def plot(values: Shaped("N"), scale: PositiveInt = 1, *more, **options):
        return values.shape, scale, more, options

    wrapped = _checked(plot)
    assert wrapped(torch.zeros(3), 2, "a", color="red") == ((3,), 2, ("a",), {"color": "red"})
    with pytest.raises(ValueError, match="scale must be >= 1"):
        wrapped(torch.zeros(3), 0, color="red")
    with pytest.raises(ValueError, match=r"values must have 1 dimensions \(N\)"):
        wrapped(torch.zeros(3, 1), color="red")


def test_the_shared_contracts_added_for_several_modules():
    def f(
        model: InstanceOf(nn.Linear),
        x: Shaped("B model.in_features", dtype_of="model", device_of="model"),
        keep: Shaped("B", dtype=torch.bool) | None = None,
        k: IntIn(1, 3) = 1,
        bias: FiniteReal = 0.0,
        dtype: FloatDtype | None = None,
        items: SequenceOf("a list of words", non_empty=True) = ("a",),
    ):
        return x.shape

    g = _checked(f)
    lin = nn.Linear(3, 2)
    assert g(lin, torch.zeros(4, 3), torch.ones(4, dtype=torch.bool), 3, 1.5, torch.float64,
             ["w"]) == (4, 3)
    cases = [
        (lambda: g(lin, torch.zeros(4, 2)), ValueError,
         r"x must have shape \(B, model.in_features\) with model.in_features = 3 "
         r"\(model.in_features of the argument model\)"),
        (lambda: g(lin, torch.zeros(4, 3, dtype=torch.float64)), TypeError,
         "x has dtype torch.float64 but the parameters of model have dtype torch.float32"),
        (lambda: g(lin, torch.zeros(4, 3), torch.ones(4)), TypeError,
         "keep must have dtype torch.bool, got torch.float32"),
        (lambda: g(lin, torch.zeros(4, 3), k=4), ValueError, "k must be <= 3"),
        (lambda: g(lin, torch.zeros(4, 3), bias=float("inf")), ValueError, "bias must be finite"),
        (lambda: g(lin, torch.zeros(4, 3), dtype=torch.int64), TypeError,
         "dtype must be a floating-point torch.dtype"),
        (lambda: g(lin, torch.zeros(4, 3), items="word"), TypeError,
         "items must be a list of words, got 'word'"),
        (lambda: g(lin, torch.zeros(4, 3), items=[]), ValueError,
         r"items must hold at least one item \(a list of words\)"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()


def test_a_misspelt_contract_fails_at_import_not_silently():
    def f(x: PositiveIntt) -> None:  # noqa: F821
        pass

    with pytest.raises(NameError, match="PositiveIntt"):
        _checked(f)


def _functions_of(module):
    """Every function a seqbook module defines, with the name it is reached by: its
    module-level functions and the methods (static and class methods too) of its classes."""
    for name, obj in vars(module).items():
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(obj):
            yield name, obj
        elif inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if inspect.isfunction(member):
                    yield f"{name}.{attr}", member


def test_every_contract_in_a_signature_is_checked():
    """A contract on a function that check_signatures does not wrap (not in __all__, a
    private method, a module imported past the package's import hook) would check
    nothing: none exists."""
    import importlib
    import pkgutil

    import seqbook
    from seqbook._contracts import _contracts_of, _hints

    unchecked = []
    for info in pkgutil.walk_packages(seqbook.__path__, "seqbook."):
        module = importlib.import_module(info.name)
        if info.name == "seqbook._contracts":
            continue
        for name, function in _functions_of(module):
            if hasattr(function, "__contracts__"):
                continue  # wrapped
            if _contracts_of(_hints(function)):
                unchecked.append(f"{info.name}.{name}")
    assert not unchecked, f"contracts that nothing checks: {unchecked}"


def test_sphinx_reads_the_source_of_every_module():
    """The API reference links each entry to its module's highlighted source, which
    Sphinx's own parser reads; it cannot read every annotation (a starred argument in a
    class-level one), and a module it fails on loses its source page."""
    import pkgutil

    from sphinx.pycode import ModuleAnalyzer

    import seqbook

    for info in pkgutil.walk_packages(seqbook.__path__, "seqbook."):
        analyzer = ModuleAnalyzer.for_module(info.name)
        analyzer.find_tags()
        analyzer.find_attr_docs()


def test_the_package_installs_its_import_hook_once():
    """``seqbook/__init__.py`` puts one finder on ``sys.meta_path``; calling it again (a
    reloaded package) does not stack a second one."""
    import sys

    import seqbook
    from seqbook._checked_imports import _CheckingFinder, check_package_signatures

    check_package_signatures("seqbook")
    finders = [f for f in sys.meta_path if isinstance(f, _CheckingFinder)]
    assert [f.prefix for f in finders] == ["seqbook."]
    assert seqbook.__name__ == "seqbook"


def test_a_reloaded_module_checks_its_contracts_again():
    import importlib

    import seqbook.attention.dot_product as module

    module = importlib.reload(module)
    assert contracts_of(module.scaled_dot_product_attention)
    with pytest.raises(ValueError, match="K must have shape"):
        module.scaled_dot_product_attention(torch.randn(2, 3, 4), torch.randn(2, 3, 5),
                                            torch.randn(2, 3, 4))


def test_a_module_run_as_a_script_reads_its_source_through_the_hook():
    """``python -m seqbook.<module>`` and inspect read the code through the wrapped
    loader, which passes ``get_code``/``get_source`` on to the module's own."""
    import importlib.util
    import inspect
    from pathlib import Path

    import seqbook.hopfield.modern as module

    spec = importlib.util.find_spec("seqbook.hopfield.modern")
    assert spec.loader.get_code("seqbook.hopfield.modern") is not None
    assert inspect.getsource(module) == Path(module.__file__).read_text()


def test_ints_bounded_by_sizes_of_the_call():
    """A bound names an int argument, the module's attribute or a size a tensor brings;
    an argument left out (None) bounds nothing."""

    def window(ids: Shaped("B T"), k1: PositiveInt, k2: IntAtLeast("k1"),
               start: IndexInto("T"), d: MultipleOf("heads"), heads: PositiveInt = 2,
               last: IntIn(0, "limit") = 0, limit: int | None = None):
        return k2, start, d

    window = _checked(window)
    ids = torch.zeros(2, 5, dtype=torch.long)
    assert window(ids, 3, 3, 4, 6) == (3, 4, 6)
    assert window(ids, 3, 4, 0, 6, last=9) == (4, 0, 6)  # limit left out: not bounded
    with pytest.raises(ValueError, match=r"k2 must be >= k1 = 3 \(the argument k1\), got 2"):
        window(ids, 3, 2, 0, 6)
    with pytest.raises(ValueError, match=r"start must be < T = 5 \(as in ids\), got 5"):
        window(ids, 3, 3, 5, 6)
    with pytest.raises(ValueError, match="start must be >= 0, got -1"):
        window(ids, 3, 3, -1, 6)
    with pytest.raises(ValueError, match=r"d must be a multiple of heads = 4 \(the argument"):
        window(ids, 3, 3, 0, 6, heads=4)
    with pytest.raises(ValueError, match=r"last must be <= limit = 2"):
        window(ids, 3, 3, 0, 6, last=3, limit=2)
    with pytest.raises(TypeError, match=r"start must be an int, got 1.0 \(float\)"):
        window(ids, 3, 3, 1.0, 6)


def test_shaped_values_finiteness_least_sizes_and_named_leading_dimensions():
    def f(x: Shaped("*batch N", finite=True, min_size={"N": 2}),
          p: Shaped("*batch N", min_value=0.0, max_value=1.0) | None = None):
        return x

    f = _checked(f)
    assert f(torch.zeros(2, 3, 4), torch.rand(2, 3, 4)).shape == (2, 3, 4)
    assert f(torch.zeros(4)).shape == (4,)
    with pytest.raises(ValueError, match="x must be finite"):
        f(torch.tensor([0.0, float("nan")]))
    with pytest.raises(ValueError, match=r"x must have shape \(\*batch, N\) with N >= 2"):
        f(torch.zeros(3, 1))
    with pytest.raises(ValueError, match=r"p must have shape \(\*batch, N\) with \*batch = \(2, 3"):
        f(torch.zeros(2, 3, 4), torch.rand(3, 4))
    with pytest.raises(ValueError, match=r"p must hold values in \[0.0, 1.0\], got values from"):
        f(torch.zeros(2, 4), torch.full((2, 4), 2.0))


def test_bounds_named_by_sizes_several_of_a_kind_and_other_than():
    def ids(pad: IndexInto("src_vocab", "tgt_vocab"), bos: int, eos: OtherThan("bos"),
            src_vocab: PositiveInt = 5, tgt_vocab: PositiveInt = 7):
        return pad

    ids = _checked(ids)
    assert ids(4, 1, 2) == 4
    with pytest.raises(ValueError, match=r"pad must be < src_vocab = 5 \(the argument"):
        ids(5, 1, 2)
    with pytest.raises(ValueError, match=r"pad must be < tgt_vocab = 3 \(the argument"):
        ids(4, 1, 2, src_vocab=9, tgt_vocab=3)
    with pytest.raises(ValueError, match=r"eos must be different from bos = 1"):
        ids(0, 1, 1)


def test_shaped_bounds_named_by_sizes_max_size_and_spins():
    def f(x: Shaped("B T", max_size={"T": "max_len"}),
          lengths: Shaped("B", floating=False, min_value=1, max_value="T"),
          s: Shaped("B n", spins=True) | None = None, max_len: PositiveInt = 4):
        return lengths

    f = _checked(f)
    x = torch.zeros(2, 3)
    assert f(x, torch.tensor([1, 3])).tolist() == [1, 3]
    with pytest.raises(ValueError, match=r"lengths must hold values in \[1, T = 3 \(as in x\)\]"):
        f(x, torch.tensor([1, 4]))
    with pytest.raises(ValueError, match=r"x must have shape \(B, T\) with T <= max_len = 2 "):
        f(x, torch.tensor([1, 3]), max_len=2)
    with pytest.raises(ValueError, match=r"s must contain only -1 and \+1"):
        f(x, torch.tensor([1, 3]), torch.tensor([[1.0, 0.0], [1.0, -1.0]]))


def test_sequences_of_a_type_and_of_a_named_length():
    def f(hyps: SequenceOf("a list of str", of=str, size="N"),
          refs: SequenceOf("a list of references", size="N"),
          p: RealIn(0.0, 1.0, strict_max=True) = 0.5):
        return len(hyps)

    f = _checked(f)
    assert f(["a", "b"], [[], []]) == 2
    with pytest.raises(TypeError, match=r"hyps must be a list of str, got an item 3 \(int\)"):
        f(["a", 3], [[], []])
    with pytest.raises(ValueError, match=r"refs must hold N = 2 items \(as in hyps\), got 1"):
        f(["a", "b"], [[]])
    with pytest.raises(ValueError, match="p must be < 1.0, got 1.0"):
        f(["a"], [[]], p=1.0)


def test_dtype_of_an_arguments_attribute():
    class Cache:
        dtype = torch.float64

    def f(cache: object, x: Shaped("n", dtype_of="cache.dtype")):
        return x

    f = _checked(f)
    assert f(Cache(), torch.zeros(2, dtype=torch.float64)).dtype == torch.float64
    with pytest.raises(TypeError, match="x has dtype torch.float32 but cache.dtype"):
        f(Cache(), torch.zeros(2))


def test_trailing_dimensions_dimension_multiples_and_bools_that_are_no_choice():
    def f(x: Shaped("B T"), targets: Shaped("B T ..."),
          images: Shaped("H W", multiple_of={"H": "patch", "W": "patch"}) | None = None,
          patch: PositiveInt = 2, ord: OneOf(1, 2, "fro") = 2):
        return targets

    f = _checked(f)
    x = torch.zeros(2, 3)
    assert f(x, torch.zeros(2, 3, 4, 5)).shape == (2, 3, 4, 5)
    assert f(x, torch.zeros(2, 3), torch.zeros(4, 6)).shape == (2, 3)
    with pytest.raises(ValueError, match=r"targets must have shape \(B, T, ...\) with T = 3"):
        f(x, torch.zeros(2, 4, 1))
    with pytest.raises(ValueError, match=r"targets must have at least 2 dimensions"):
        f(x, torch.zeros(2))
    with pytest.raises(ValueError, match=r"images must have shape \(H, W\) with W a multiple "
                                         r"of patch = 4 \(the argument patch\), got \(4, 6\)"):
        f(x, x, torch.zeros(4, 6), patch=4)
    with pytest.raises(TypeError, match="ord must be one of 1, 2, 'fro', not a bool; got True"):
        f(x, x, ord=True)
