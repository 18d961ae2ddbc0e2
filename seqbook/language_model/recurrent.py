r"""A recurrent character-level language model: embedding, one LSTM or GRU layer, readout.

Shape letters: ``B`` batch, ``T`` time, ``E`` embedding size, ``H`` hidden units,
``V`` vocabulary.
"""

from __future__ import annotations

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from seqbook._checks import _describe, check_choice, check_positive_int, check_token_ids

__all__ = ["RecurrentLM"]

_LAYERS = {"lstm": nn.LSTM, "gru": nn.GRU}
_STATES = {"lstm": "an (h, c) pair of tensors", "gru": "a tensor"}  # what each layer returns


class RecurrentLM(nn.Module):
    r"""Embedding, a recurrent layer and a linear readout to next-token scores.

    .. math::
        \mathbf{e}_t = \mathbf{E}[x_t], \qquad
        \mathbf{h}_t = \operatorname{RNN}(\mathbf{e}_t, \mathbf{h}_{t-1}), \qquad
        P(x_{t+1} \mid x_{\le t}) = \operatorname{softmax}(\mathbf{W}\mathbf{h}_t +
        \mathbf{b})

    The recurrent layer is PyTorch's fused ``nn.LSTM`` or ``nn.GRU`` (fast to train);
    the book's own :class:`~seqbook.recurrent.LSTM` or :class:`~seqbook.recurrent.GRU`
    can replace it after training (``model.rnn = LSTM.from_torch(model.rnn)``), since
    the model only passes the layer's state back to it.

    Args:
        vocab_size: :math:`V`.
        hidden_size: :math:`H`.
        embedding_dim: :math:`E`.
        cell: ``"lstm"`` or ``"gru"``.

    Shapes:
        ids: ``(B, T)``.
        returns (forward): ``(logits (B, T, V), state)``, the state in the layer's own
        format (e.g. ``(h, c)`` of ``nn.LSTM``), to pass back to continue the stream.

    Example:
        >>> model = RecurrentLM(vocab_size=10, hidden_size=16, embedding_dim=8)
        >>> logits, state = model(torch.tensor([[1, 2, 3]]))
        >>> tuple(logits.shape)
        (1, 3, 10)
        >>> more, _ = model(torch.tensor([[4]]), state)   # continue where it stopped
        >>> full, _ = model(torch.tensor([[1, 2, 3, 4]]))
        >>> torch.allclose(more[0, -1], full[0, -1], atol=1e-6)
        True
    """

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int = 128,
        embedding_dim: int = 32,
        cell: str = "lstm",
    ) -> None:
        super().__init__()
        for name, size in dict(vocab_size=vocab_size, hidden_size=hidden_size,
                               embedding_dim=embedding_dim).items():
            check_positive_int(name, size)
        check_choice("cell", cell, _LAYERS)
        self.vocab_size = vocab_size
        self.cell = cell
        self.embed = nn.Embedding(vocab_size, embedding_dim)
        self.rnn = _LAYERS[cell](embedding_dim, hidden_size, batch_first=True)
        self.readout = nn.Linear(hidden_size, vocab_size)

    def init_state(self, batch_size: int) -> None:
        """The state before the first token: ``None``, which the layer reads as zeros."""
        check_positive_int("batch_size", batch_size)
        return None

    def forward(
        self, ids: Int[Tensor, "B T"], state: object = None
    ) -> tuple[Float[Tensor, "B T {self.vocab_size}"], object]:
        check_token_ids("ids", ids, self.vocab_size)
        # what the layer returned: an LSTM's (h, c) pair of tensors, a GRU's tensor
        pair = isinstance(state, (tuple, list)) and len(state) == 2 and all(
            isinstance(s, torch.Tensor) for s in state)
        if state is not None and not (pair if self.cell == "lstm"
                                      else isinstance(state, torch.Tensor)):
            raise TypeError(f"state must be None or {_STATES[self.cell]} (the state an earlier "
                            f"call of this {self.cell} model returned), got {_describe(state)}")
        outputs, state = self.rnn(self.embed(ids), state)  # (B, T, H)
        return self.readout(outputs), state  # (B, T, V)
