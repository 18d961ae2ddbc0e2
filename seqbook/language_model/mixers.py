r"""One language model, seven token mixers: what part VI compares.

A :class:`~seqbook.language_model.MixerLM` is the decoder-only model of the
language-model chapter with its attention swappable: embedding, a short causal
convolution (each position also sees the previous token, as the short convolutions of
H3, Mamba and xLSTM's mLSTM block do), then blocks of a *mixer* and an MLP, each
residual behind a layer norm, and a readout. The mixers, with the state each keeps per
layer while generating (:func:`~seqbook.language_model.state_floats`):

- ``softmax``: causal softmax attention; a KV cache of :math:`2td` floats (grows);
- ``linear``: linear attention with features elu + 1; :math:`d^2/H + d`;
- ``delta``: delta-rule attention (DeltaNet's recurrence); :math:`d^2/H`;
- ``mamba``: Mamba's selective SSM block; :math:`e d (N + w - 1)`;
- ``mlstm``: the mLSTM memory with its output gate; :math:`d^2/H + d + H`;
- ``lstm``: ``nn.LSTM``; :math:`2d`;
- ``gru``: ``nn.GRU``; :math:`d`;

with :math:`t` tokens so far, width :math:`d`, :math:`H` heads, SSM state :math:`N`,
the Mamba convolution's width :math:`w` and expansion :math:`e`. Every mixer runs in
two forms: ``forward`` over a whole sequence (training), and ``step`` one token at a
time from a state (generation); the two agree (tested in float64). The mixers call the
book's own kernels from :mod:`seqbook.linear_attention`, :mod:`seqbook.ssm` and
:mod:`seqbook.xlstm`.

Shape letters: ``B`` batch, ``T`` time, ``d`` width, ``H`` heads, ``V`` vocabulary.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor, nn

from seqbook._checks import (
    check_bool,
    check_choice,
    check_int,
    check_positive_int,
    check_token_ids,
)
from seqbook.linear_attention import (
    delta_write,
    elu_feature_map,
    linear_attention,
    linear_attention_step,
)
from seqbook.ssm import MambaBlock
from seqbook.xlstm import mlstm_parallel, mlstm_step

__all__ = ["MIXERS", "MixerLM", "state_floats"]


def _heads(x: Tensor, H: int) -> Tensor:
    """(B, T, d) -> (B * H, T, d / H): each head becomes a batch row of the kernels."""
    B, T, d = x.shape
    return x.reshape(B, T, H, d // H).transpose(1, 2).reshape(B * H, T, d // H)


def _merge(x: Tensor, H: int) -> Tensor:
    """The inverse of :func:`_heads`."""
    BH, T, dh = x.shape
    return x.reshape(BH // H, H, T, dh).transpose(1, 2).reshape(BH // H, T, H * dh)


class _Mixer(nn.Module):
    """A token mixer: ``forward`` over a whole sequence, ``step`` over one token from
    the state that ``init_state`` starts."""

    def init_state(self, B: int, like: Tensor) -> Any:
        raise NotImplementedError

    def step(self, x: Tensor, state: Any) -> tuple[Tensor, Any]:
        raise NotImplementedError


class _Attention(_Mixer):
    """What the attention mixers share: the projections of queries, keys and values."""

    def __init__(self, d: int, num_heads: int) -> None:
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.out = nn.Linear(d, d, bias=False)
        self.H = num_heads

    def _project(self, x: Tensor) -> tuple[Tensor, ...]:
        return tuple(_heads(part, self.H) for part in self.qkv(x).chunk(3, dim=-1))


class SoftmaxMixer(_Attention):
    """Causal softmax attention; its generation state is the KV cache."""

    def forward(self, x: Tensor) -> Tensor:
        q, k, v = self._project(x)
        return self.out(_merge(F.scaled_dot_product_attention(q, k, v, is_causal=True), self.H))

    def init_state(self, B: int, like: Tensor) -> tuple[Tensor, Tensor]:
        empty = like.new_zeros(B * self.H, 0, like.shape[-1] // self.H)
        return empty, empty

    def step(self, x: Tensor, state: tuple) -> tuple[Tensor, tuple]:
        q, k, v = self._project(x[:, None])
        K, V = torch.cat([state[0], k], 1), torch.cat([state[1], v], 1)  # the cache grows
        return self.out(_merge(F.scaled_dot_product_attention(q, K, V), self.H))[:, 0], (K, V)


class LinearMixer(_Attention):
    """Causal linear attention with Katharopoulos et al.'s feature map elu + 1."""

    def forward(self, x: Tensor) -> Tensor:
        q, k, v = self._project(x)
        phi = elu_feature_map
        return self.out(_merge(linear_attention(phi(q), phi(k), v), self.H))

    def init_state(self, B: int, like: Tensor) -> tuple[Tensor, Tensor]:
        dh = like.shape[-1] // self.H
        return like.new_zeros(B * self.H, dh, dh), like.new_zeros(B * self.H, dh)

    def step(self, x: Tensor, state: tuple) -> tuple[Tensor, tuple]:
        q, k, v = (part[:, 0] for part in self._project(x[:, None]))
        phi = elu_feature_map
        S, n = state
        S, n, y = linear_attention_step(S, n, phi(q), phi(k), v)
        return self.out(_merge(y[:, None], self.H))[:, 0], (S, n)


class DeltaMixer(_Attention):
    """Delta-rule attention (DeltaNet): unit queries and keys, a writing strength
    :math:`\\beta_t = \\sigma(\\mathbf{w}_\\beta^\\top \\mathbf{x}_t)` per token and head."""

    def __init__(self, d: int, num_heads: int) -> None:
        super().__init__(d, num_heads)
        self.beta = nn.Linear(d, num_heads)

    def _inputs(self, x: Tensor) -> tuple[Tensor, ...]:
        q, k, v = self._project(x)
        beta = torch.sigmoid(self.beta(x)).transpose(1, 2).reshape(-1, x.shape[1])  # (BH, T)
        return F.normalize(q, dim=-1), F.normalize(k, dim=-1), v, beta

    def forward(self, x: Tensor) -> Tensor:
        q, k, v, beta = self._inputs(x)
        S = v.new_zeros(v.shape[0], v.shape[2], k.shape[2])  # (BH, d_v, d_k)
        outputs = []
        for t in range(x.shape[1]):
            S = delta_write(S, k[:, t], v[:, t], beta[:, t, None, None])
            outputs.append((S @ q[:, t, :, None])[:, :, 0])
        return self.out(_merge(torch.stack(outputs, 1), self.H))

    def init_state(self, B: int, like: Tensor) -> Tensor:
        dh = like.shape[-1] // self.H
        return like.new_zeros(B * self.H, dh, dh)

    def step(self, x: Tensor, S: Tensor) -> tuple[Tensor, Tensor]:
        q, k, v, beta = (part[:, 0] for part in self._inputs(x[:, None]))
        S = delta_write(S, k, v, beta[:, None, None])
        return self.out(_merge((S @ q[:, :, None]).transpose(1, 2), self.H))[:, 0], S


class MLSTMMixer(_Attention):
    """The mLSTM cell between projections: each head's read-out normalised on its own
    (the cell's multi-head layer norm, as in Beck et al.'s ``xlstm`` package), then the
    output gate."""

    def __init__(self, d: int, num_heads: int) -> None:
        super().__init__(d, num_heads)
        self.gates = nn.Linear(d, 2 * num_heads)  # input and forget pre-activations
        self.output_gate = nn.Linear(d, d)
        # the per-head norm's gain (no bias, as the package's MultiHeadLayerNorm)
        self.head_norm_weight = nn.Parameter(torch.ones(d))
        nn.init.constant_(self.gates.bias[num_heads:], 3.0)  # forget little at first

    def _head_norm(self, h: Tensor) -> Tensor:
        """(..., d) -> (..., d): a layer norm over each head's features, one gain over all
        (``MultiHeadLayerNorm`` of the ``xlstm`` package, whose gain starts at 1)."""
        shape = h.shape
        return F.group_norm(h.reshape(-1, shape[-1]), self.H,
                            self.head_norm_weight, eps=1e-5).reshape(shape)

    def _inputs(self, x: Tensor) -> tuple[Tensor, ...]:
        q, k, v = self._project(x)
        i_pre, f_pre = (g.transpose(1, 2).reshape(-1, x.shape[1])  # (BH, T) each
                        for g in self.gates(x).chunk(2, dim=-1))
        return q, k, v, i_pre, f_pre

    def forward(self, x: Tensor) -> Tensor:
        h = self._head_norm(_merge(mlstm_parallel(*self._inputs(x)), self.H))
        return self.out(torch.sigmoid(self.output_gate(x)) * h)

    def init_state(self, B: int, like: Tensor) -> tuple[Tensor, ...]:
        dh = like.shape[-1] // self.H
        return (like.new_zeros(B * self.H, dh, dh), like.new_zeros(B * self.H, dh),
                like.new_full((B * self.H,), -math.inf))

    def step(self, x: Tensor, state: tuple) -> tuple[Tensor, tuple]:
        q, k, v, i_pre, f_pre = (part[:, 0] for part in self._inputs(x[:, None]))
        C, n, m = state
        # mlstm_step takes the key scaled as mlstm_parallel scales it
        C, n, m, h = mlstm_step(C, n, m, q, k / math.sqrt(q.shape[-1]), v, i_pre, f_pre)
        h = self._head_norm(_merge(h[:, None], self.H)[:, 0])
        return self.out(torch.sigmoid(self.output_gate(x)) * h), (C, n, m)


class MambaMixer(MambaBlock, _Mixer):
    """Mamba's block (:class:`~seqbook.ssm.MambaBlock`), with a step for generation."""

    def __init__(self, d: int, num_heads: int = 1, state_size: int = 8, expand: int = 1) -> None:
        # N = 8 and no expansion (Mamba: 16 and 2): the scan materialises a state of
        # B * T * expand * d * N floats, which a CPU without Mamba's fused kernel pays in full
        super().__init__(d, state_size=state_size, expand=expand)

    def init_state(self, B: int, like: Tensor) -> tuple[Tensor, Tensor]:
        inner, w = self.conv1d.in_channels, self.conv1d.kernel_size[0]
        return like.new_zeros(B, inner, w - 1), like.new_zeros(B, inner, self.state_size)

    def step(self, u: Tensor, state: tuple) -> tuple[Tensor, tuple]:
        window, h = state
        x, x_gate = self.in_proj(u).chunk(2, dim=-1)  # (B, inner) each
        window = torch.cat([window, x[:, :, None]], dim=2)  # the convolution's last w inputs
        assert self.conv1d.bias is not None  # MambaBlock's convolution has a bias
        x = F.silu((window * self.conv1d.weight[:, 0]).sum(-1) + self.conv1d.bias)
        dt, B, C = self.x_proj(x).split([self.dt_rank, self.state_size, self.state_size], -1)
        delta = F.softplus(self.dt_proj(dt))[:, :, None]  # (B, inner, 1)
        h = torch.exp(delta * -torch.exp(self.A_log)) * h + delta * B[:, None] * x[:, :, None]
        y = (h @ C[:, :, None])[:, :, 0] + self.D * x
        return self.out_proj(y * F.silu(x_gate)), (window[:, :, 1:], h)


class RecurrentMixer(_Mixer):
    """PyTorch's fused ``nn.LSTM`` or ``nn.GRU`` as a mixer; its state is ``h`` (and ``c``)."""

    def __init__(self, d: int, num_heads: int = 1, cell: str = "lstm") -> None:
        super().__init__()
        self.rnn = (nn.LSTM if cell == "lstm" else nn.GRU)(d, d, batch_first=True)

    def forward(self, x: Tensor) -> Tensor:
        return self.rnn(x)[0]

    def init_state(self, B: int, like: Tensor) -> object:
        h = like.new_zeros(1, B, like.shape[-1])
        return (h, h.clone()) if isinstance(self.rnn, nn.LSTM) else h

    def step(self, x: Tensor, state: Any) -> tuple[Tensor, object]:
        y, state = self.rnn(x[:, None], state)
        return y[:, 0], state


class _NoMLP(nn.Module):
    """The MLP of a block without one: it adds nothing."""

    def forward(self, x: Tensor) -> Tensor:
        return torch.zeros_like(x)


MIXERS: dict[str, Callable[[int, int], _Mixer]] = {
    "softmax": SoftmaxMixer,
    "linear": LinearMixer,
    "delta": DeltaMixer,
    "mamba": MambaMixer,
    "mlstm": MLSTMMixer,
    "lstm": lambda d, num_heads: RecurrentMixer(d, num_heads, "lstm"),
    "gru": lambda d, num_heads: RecurrentMixer(d, num_heads, "gru"),
}


def _check_sizes(mixer: str, d: int, num_heads: int, **sizes: int) -> None:
    """The mixer is one of :data:`MIXERS`, every size >= 1 (``position`` >= 0), and
    the attention-like mixers' width a multiple of their heads."""
    check_choice("mixer", mixer, MIXERS)
    check_positive_int("d", d), check_positive_int("num_heads", num_heads)
    for name, size in sizes.items():
        check_int(name, size, min_value=0 if name == "position" else 1)
    if mixer in ("softmax", "linear", "delta", "mlstm") and d % num_heads:
        raise ValueError(f"d_model must be a multiple of num_heads, got {d} and {num_heads}")


def state_floats(
    mixer: str, d: int, num_heads: int = 1, position: int = 0,
    state_size: int = 8, expand: int = 1, conv_size: int = 4,
) -> int:
    """Floats a mixer layer keeps per sequence to generate the token after ``position``.

    Example:
        >>> state_floats("lstm", 16), state_floats("softmax", 16, position=10)
        (32, 320)
    """
    _check_sizes(mixer, d, num_heads, position=position, state_size=state_size,
                 expand=expand, conv_size=conv_size)
    dh = d // num_heads
    return {
        "softmax": 2 * position * d,
        "linear": num_heads * (dh * dh + dh),
        "delta": num_heads * dh * dh,
        "mamba": expand * d * (state_size + conv_size - 1),
        "mlstm": num_heads * (dh * dh + dh + 1),
        "lstm": 2 * d,
        "gru": d,
    }[mixer]


class MixerLM(nn.Module):
    r"""A decoder-only language model whose token mixer is chosen by name.

    .. math::
        \mathbf{x}_t = \mathbf{E}[w_t] + \mathbf{W}_s \mathbf{E}[w_{t-1}], \qquad
        \mathbf{x} \leftarrow \mathbf{x} + \operatorname{mixer}(\operatorname{LN}(\mathbf{x})),
        \quad \mathbf{x} \leftarrow \mathbf{x} + \operatorname{MLP}(\operatorname{LN}(\mathbf{x}))

    per block, then a layer norm and a linear readout to next-token scores.

    Args:
        vocab_size: :math:`V`.
        d_model: the width :math:`d` (a multiple of ``num_heads`` for the attention-like
            mixers).
        mixer: one of ``MIXERS``: ``"softmax"``, ``"linear"``, ``"delta"``,
            ``"mamba"``, ``"mlstm"``, ``"lstm"``, ``"gru"``.
        num_layers: blocks.
        num_heads: heads of the attention-like mixers (ignored by the others).
        mlp: whether each block has its MLP (hidden width :math:`4d`); without it, the
            block is the mixer alone.

    Shapes:
        ids: ``(B, T)``; returns logits ``(B, T, V)``.
        step: ids ``(B,)`` and a state; returns scores ``(B, V)`` and the next state.

    Example:
        >>> model = MixerLM(10, d_model=8, mixer="mlstm").double()
        >>> ids = torch.tensor([[1, 2, 3]])
        >>> state = model.init_state(1)
        >>> for t in range(3):
        ...     logits, state = model.step(ids[:, t], state)
        >>> torch.allclose(logits, model(ids)[:, -1])
        True
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int = 64,
        mixer: str = "softmax",
        num_layers: int = 2,
        num_heads: int = 1,
        mlp: bool = True,
    ) -> None:
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("d_model", d_model), check_positive_int("num_layers", num_layers)
        _check_sizes(mixer, d_model, num_heads)
        check_bool("mlp", mlp)
        self.vocab_size = vocab_size
        d = d_model
        self.mixer = mixer
        self.has_mlp = mlp
        self.embed = nn.Embedding(vocab_size, d)
        self.shift = nn.Linear(d, d, bias=False)  # W_s: the previous token's share
        self.mixers = nn.ModuleList(MIXERS[mixer](d, num_heads) for _ in range(num_layers))
        # a layer norm before each mixer and each MLP (none before a missing MLP)
        self.norms = nn.ModuleList(nn.LayerNorm(d) if mlp or i % 2 == 0 else nn.Identity()
                                   for i in range(2 * num_layers))
        self.mlps = nn.ModuleList(
            nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)) if mlp
            else _NoMLP() for _ in range(num_layers))
        self.final_norm = nn.LayerNorm(d)
        self.readout = nn.Linear(d, vocab_size)

    def forward(self, ids: Int[Tensor, "B T"]
                ) -> Float[Tensor, "B T {self.vocab_size}"]:
        check_token_ids("ids", ids, self.vocab_size)
        e = self.embed(ids)  # (B, T, d)
        # + W_s E[w_{t-1}] (eq-mixer-block)
        x = e + self.shift(F.pad(e, (0, 0, 1, 0))[:, :-1])
        for layer, mixer in enumerate(self.mixers):
            x = x + mixer(self.norms[2 * layer](x))  # (eq-mixer-block)
            x = x + self.mlps[layer](self.norms[2 * layer + 1](x))
        return self.readout(self.final_norm(x))

    def init_state(self, batch_size: int) -> dict:
        """The state before the first token: the previous embedding and each mixer's."""
        check_positive_int("batch_size", batch_size)
        B = batch_size
        like = self.embed.weight
        mixers = cast(list[_Mixer], list(self.mixers))
        return {"previous": like.new_zeros(B, like.shape[1]),
                "mixers": [mixer.init_state(B, like) for mixer in mixers]}

    def check_state(self, ids: Tensor, state: dict) -> None:
        """What a type cannot say: ``ids`` are below the vocabulary size, and ``state``
        is what :meth:`init_state` (or an earlier step) returned for this batch."""
        check_token_ids("ids", ids, self.vocab_size)
        if not (isinstance(state, dict) and set(state) == {"previous", "mixers"}):
            raise TypeError(f"state must be the dict that init_state returns, got {state!r:.60}")
        if state["previous"].shape[0] != ids.shape[0]:  # a state of another batch
            raise ValueError(f"state['previous'] must have the batch size of ids ({ids.shape[0]})"
                             f" in its first dimension, got shape {tuple(state['previous'].shape)}")

    def step(
        self, ids: Int[Tensor, " B"], state: dict
    ) -> tuple[Float[Tensor, "B {self.vocab_size}"], dict]:
        """Read one token per row and return the next token's scores and the new state."""
        self.check_state(ids, state)
        e = self.embed(ids)  # (B, d)
        x = e + self.shift(state["previous"])
        states = []
        for layer, mixer in enumerate(cast(list[_Mixer], list(self.mixers))):
            y, mixer_state = mixer.step(self.norms[2 * layer](x), state["mixers"][layer])
            x = x + y
            x = x + self.mlps[layer](self.norms[2 * layer + 1](x))
            states.append(mixer_state)
        return self.readout(self.final_norm(x)), {"previous": e, "mixers": states}
