"""The package-wide check of annotations (seqbook/_typecheck.py): what it checks, what it
says, when it does not check, and what it costs."""

from collections.abc import Callable

import pytest
import torch
from jaxtyping import Float
from torch import Tensor, nn

from benchmarks.checks import measure
from seqbook._typecheck import typechecked, unchecked
from seqbook.attention import MultiHeadAttention, masked_softmax
from seqbook.transformer import EncoderBlock, FeedForward


class Scale(nn.Module):
    """A module with one size attribute and one parameter, checked as the package's are."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.width = width
        self.gain = nn.Parameter(torch.ones(width))
        self.calls = 0  # bodies run

    def forward(self, x: Float[Tensor, "B {self.width}"]) -> Float[Tensor, "B {self.width}"]:
        self.calls += 1
        return x * self.gain


Scale.forward = typechecked(Scale.forward)  # type: ignore[method-assign]


def test_a_size_read_from_the_module_is_checked_and_named():
    with pytest.raises(TypeError, match=r"^x must be Float\[Tensor, 'B \{self.width\}'\], got "
                                        r"f32\[2,3\]\(torch\): the dimension size 3 does not "
                                        r"equal the existing value of \{self.width\}=4"):
        Scale(4)(torch.randn(2, 3))


def test_a_renamed_attribute_fails_loudly_instead_of_turning_the_check_off():
    ffn = FeedForward(16, 32)
    del ffn.d_model  # what renaming the attribute in __init__ does
    for x in (torch.randn(2, 5, 12), torch.randn(2, 5, 16)):  # wrong or right, it fails
        with pytest.raises(TypeError, match=r"^x must be .*\(a size in the annotation cannot "
                                            r"be read: .*no attribute 'd_model'\)"):
            ffn(x)


def test_dtypes_and_missing_arguments_are_named():
    ffn = FeedForward(16, 32)
    with pytest.raises(TypeError, match=r"^x must be .*dtype int64"):
        ffn(torch.ones(2, 5, 16, dtype=torch.long))
    with pytest.raises(TypeError, match=r"x must have the dtype of the module's parameters "
                                        r"\(torch.float32\), got torch.float64"):
        ffn(torch.randn(2, 5, 16, dtype=torch.float64))
    with pytest.raises(TypeError, match="missing a required argument: 'x'"):
        ffn()
    with pytest.raises(TypeError, match=r"^x must be .*got None"):
        ffn(None)


def test_a_call_like_one_that_passed_is_not_checked_again_but_a_new_one_is():
    scale = Scale(4)
    store = scale.__dict__
    scale(torch.randn(2, 4))
    scale(torch.randn(2, 4))
    remembered = [key for key in store if key.startswith("_typechecked_")]
    assert len(remembered) == 1 and len(store[remembered[0]]) == 1
    scale(torch.randn(3, 4))  # another batch size: checked, then remembered too
    assert len(store[remembered[0]]) == 2
    with pytest.raises(TypeError):  # a new shape is always checked
        scale(torch.randn(2, 5))
    with pytest.raises(TypeError):  # so is a new dtype
        scale(torch.randn(2, 4, dtype=torch.float64))
    assert scale.calls == 3


def test_a_call_with_a_generator_or_a_tuple_is_remembered_too():
    from seqbook.hopfield import corrupt, random_patterns

    g = torch.Generator().manual_seed(0)
    X = random_patterns(3, 17, generator=g)  # a shape no other test passes
    store = corrupt.__passed_calls__  # the calls of a function that passed
    before = len(store)  # other tests in this process may have called it
    corrupt(X, 0.1, g)
    corrupt(X, 0.1, torch.Generator().manual_seed(1))  # another generator: the same key
    assert len(store) == before + 1  # (the patterns' shape, the fraction, a Generator)
    with pytest.raises(TypeError, match="^generator must be "):  # a str is still refused
        corrupt(X, 0.1, "seed")


def test_the_memory_of_passed_calls_belongs_to_the_instance():
    # a new module of another width at the same address must not inherit the old one's
    # passed calls: they are kept on the instance, and go with it
    for _ in range(20):
        scale = Scale(4)
        scale(torch.randn(2, 4))
        del scale
        with pytest.raises(TypeError):
            Scale(5)(torch.randn(2, 4))


def test_only_the_outermost_call_is_checked():
    calls = []
    inner = typechecked(lambda x: calls.append("inner") or x)

    def outer(x: Float[Tensor, " n"]) -> Float[Tensor, " n"]:
        calls.append("outer")
        return inner(x)

    inner.__annotations__ = {"x": Float[Tensor, " n"]}
    checked_outer = typechecked(outer)
    checked_outer(torch.randn(3))
    assert calls == ["outer", "inner"]
    with pytest.raises(TypeError):
        checked_outer(torch.randn(3, 2))


def test_no_check_runs_under_unchecked():
    with unchecked():
        with pytest.raises(RuntimeError):  # torch's own error, from deep inside
            FeedForward(16, 32)(torch.randn(2, 5, 12))


def _models() -> dict[str, tuple[nn.Module, Callable[[nn.Module], object]]]:
    """The attention and transformer modules, each with a call of it."""
    from seqbook.attention import AdditiveAttention, AttentionPooling
    from seqbook.transformer import DecoderBlock, Transformer

    x, memory = torch.randn(2, 5, 8), torch.randn(2, 6, 8)
    padding = torch.zeros(2, 5, dtype=torch.bool)
    src, lengths = torch.tensor([[4, 5, 2], [6, 2, 0]]), torch.tensor([3, 2])
    tgt = torch.tensor([[1, 5], [1, 6]])
    for_norm = dict(norm_first=True)  # the pre-norm stacks' final LayerNorms run too
    return {
        "EncoderBlock": (EncoderBlock(8, 2, 16), lambda m: m(x, src_key_padding_mask=padding)),
        "DecoderBlock": (DecoderBlock(8, 2, 16), lambda m: m(x, memory, tgt_is_causal=True)),
        "MultiHeadAttention": (MultiHeadAttention(8, 2), lambda m: m(x, memory, memory)),
        "AdditiveAttention": (AdditiveAttention(8, 8, 4), lambda m: m(x, memory, memory)),
        "AttentionPooling": (AttentionPooling(8, 4), lambda m: m(x)),
        "FeedForward": (FeedForward(8, 16), lambda m: m(x)),
        "Transformer": (Transformer(10, 9, d_model=8, num_heads=2, num_layers=2, d_ff=16,
                                    **for_norm), lambda m: m(src, lengths, tgt)),
    }


@pytest.mark.parametrize("name", list(_models()))
def test_forward_hooks_fire_on_every_submodule(name):
    model, call = _models()[name]
    fired = set()
    for path, module in model.named_modules():
        module.register_forward_hook(lambda m, args, out, path=path: fired.add(path))
    call(model)
    # a container (nn.ModuleList) has no forward of its own
    silent = {path for path, module in model.named_modules()
              if not isinstance(module, nn.ModuleList)} - fired
    assert not silent, f"submodules whose forward hooks did not fire: {sorted(silent)}"


def _check_share(call) -> float:
    return measure("", "", call).overhead


@pytest.mark.slow
def test_the_checks_cost_little_per_call_at_the_books_sizes():
    # the book's smallest examples, on one thread: a repeated call costs its argument
    # key, one lookup and a flag (about a microsecond), under 10% of a model's call
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        x = torch.randn(2, 8, 16)
        mha, block = MultiHeadAttention(16, 2).eval(), EncoderBlock(16, 2, 64).eval()
        scores, mask = torch.randn(2, 8, 8), torch.ones(8, 8, dtype=torch.bool).tril()
        with torch.no_grad():
            shares = {name: _check_share(call) for name, call in {
                "MultiHeadAttention": lambda: mha(x, x, x),
                "EncoderBlock": lambda: block(x)}.items()}
            assert max(shares.values()) < 0.10, shares
            # a 10 us function: its repeated calls are remembered (a full check, 30 us
            # or more, would more than double it)
            share = _check_share(lambda: masked_softmax(scores, mask))
            assert share < 1.0, share
    finally:
        torch.set_num_threads(threads)


def test_nothing_is_checked_while_torch_compiles():
    explain = getattr(torch._dynamo, "explain", None)
    if explain is None:
        pytest.skip("torch._dynamo.explain is not available")
    block = EncoderBlock(8, 2, 16).eval()
    try:
        report = explain(block)(torch.randn(2, 5, 8))
    except Exception as error:  # no compiler toolchain on this machine, etc.
        pytest.skip(f"torch._dynamo cannot trace here: {error}")
    assert report.graph_break_count == 0, report.break_reasons


def test_words_and_counts_are_remembered_by_type_but_sizes_and_devices_by_value():
    from seqbook.data import tokenize

    # a str or an int that no annotation reads is checked by its type: a loop over
    # many words is checked once
    store = tokenize.__passed_calls__
    tokenize("a word no other test splits")
    before = len(store)
    for word in ("another", "and a third", "one more"):
        tokenize(word)
    assert len(store) == before
    with pytest.raises(TypeError, match="^text must be "):
        tokenize(3)  # type: ignore[arg-type]

    # an int that an annotation reads as a size is remembered by its value
    def first(x: Float[Tensor, " n"], k: int) -> Float[Tensor, " {k}"]:
        return x[:k]

    checked = typechecked(first)
    checked(torch.arange(5.0), 2)
    with pytest.raises(TypeError, match="^the return value must be "):
        checked(torch.arange(5.0), 9)  # returns 5 items, not 9: checked again

    # a device given as a str is read by value
    def place(x: Float[Tensor, " n"], device: str) -> Float[Tensor, " n"]:
        return x.to(device)

    checked = typechecked(place)
    checked(torch.ones(2), "cpu")
    with pytest.raises(ValueError, match="^device must name a device"):
        checked(torch.ones(2), "no such device")
