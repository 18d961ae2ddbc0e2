r"""Does the surname RNN use the markers of a locale? The table of the chapter on
recurrent neural networks.

Shape letters: ``B`` batch, ``T`` time (letters), ``V`` characters, ``H`` hidden units
(64), ``C`` locales (12).

The chapter trains an Elman RNN over one-hot letters to name the locale of a surname
(:class:`SurnameRNN`): twelve epochs of Adam at learning rate 0.003 on the training
names, reshuffled into batches of 32 every epoch, the weights of the best validation
epoch kept (:func:`train_surname_classifier`). Four locales mark many of their names:
Finnish ones end in *-nen*, Croatian ones in *-ić*, Czech ones in *-ová*, Irish ones
begin with *Ó* or *Mac* (:data:`MARKERS`). The marked names of the validation and test
splits are classified intact, with the marker cut off, and, as a control, with as many
letters cut from the other end of the name (:func:`cut`, :func:`marked_accuracy`).
The table also records how much the best validation accuracy still gains over the last
four epochs (:func:`late_valid_gain`), as the chapter measures it for its live network.

Five networks take longer than the chapter may run, so they are trained offline
(:func:`surname_marker_grid`) into the table
``seqbook/experiments/results/surname_markers.csv`` that the chapter loads
(:func:`load_surname_marker_table`). The chapter trains seed 0 live with its own code
of the same recipe and measures its ablation live: on the machine that made the table
the two agree. The table was made with::

    python -m seqbook.experiments.surname_markers --threads 1

(about 15 s of CPU time on one core). ``--smoke`` runs a tiny version as a test that
the script works.
"""

from __future__ import annotations

import copy
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, overload

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor, nn

from seqbook._checks import check_choice, check_int, check_positive_int
from seqbook.data import Splits, Vocab, pad_batch, surnames, tokenize
from seqbook.data.surnames import Surname
from seqbook.experiments._common import one_thread
from seqbook.experiments.results import RESULTS_DIR, _table_options, _write_table, load_table
from seqbook.recurrent import RNN
from seqbook.train import History, fit
from seqbook.utils import seed_everything

__all__ = [
    "RESULTS", "SEEDS", "HIDDEN_SIZE", "MARKERS", "SurnameData", "SurnameRNN",
    "SurnameMarkerRecord", "surname_data", "encode", "split_accuracy",
    "train_surname_classifier", "late_valid_gain", "cut", "marked_names", "marked_accuracy",
    "surname_marker_grid", "load_surname_marker_table", "main",
]

#: The committed table.
RESULTS = RESULTS_DIR / "surname_markers.csv"
#: The seeds of the table.
SEEDS = (0, 1, 2, 3, 4)
#: The hidden units of the chapter's network.
HIDDEN_SIZE = 64
#: locale -> (where its marker sits, the marker's forms).
MARKERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "Finnish": ("suffix", ("nen",)),
    "Croatian": ("suffix", ("ić",)),
    "Czech": ("suffix", ("ová",)),
    "Irish": ("prefix", ("Ó", "Mac")),
}
#: Where a marker sits, and the three forms of a marked name.
WHERES = ("suffix", "prefix")
VARIANTS = ("intact", "marker", "control")


class SurnameData(NamedTuple):
    """The chapter's names, their locales (sorted) and the training names' characters."""

    names: Splits[Surname]
    languages: list[str]
    vocab: Vocab


def surname_data() -> SurnameData:
    """The chapter's data: :func:`~seqbook.data.surnames` with its defaults, the locales
    of the training names sorted, and a :class:`~seqbook.data.Vocab` of their
    characters.

    Example:
        >>> data = surname_data()
        >>> len(data.languages), data.names.sizes()
        (12, (1728, 216, 216))
    """
    names = surnames()
    languages = sorted({s.language for s in names.train})
    vocab = Vocab([tokenize(s.name) for s in names.train])
    return SurnameData(names, languages, vocab)


class SurnameRNN(nn.Module):
    """Elman RNN over one-hot letters, read out after each name's end (the chapter's).

    Shapes:
        x: ``(B, T, V)``, lengths: ``(B,)``; returns the scores ``(B, C)``.

    Example:
        >>> net = SurnameRNN(10, 4, 3)
        >>> net(torch.zeros(2, 5, 10), torch.tensor([5, 2])).shape
        torch.Size([2, 3])
    """

    def __init__(self, vocab_size: int, hidden_size: int, n_classes: int) -> None:
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("hidden_size", hidden_size)
        check_positive_int("n_classes", n_classes)
        self.vocab_size = vocab_size
        self.rnn = RNN(vocab_size, hidden_size)
        self.readout = nn.Linear(hidden_size, n_classes)

    def forward(
        self, x: Float[Tensor, "B T {self.vocab_size}"], lengths: Int[Tensor, " B"] | None = None
    ) -> Float[Tensor, "B C"]:
        _, h_last = self.rnn(x, lengths=lengths)          # (1, B, H)
        return self.readout(h_last[-1])                   # (B, C)


def encode(data: SurnameData, split: Sequence[Surname]
           ) -> tuple[Float[Tensor, "B T V"], Int[Tensor, " B"], Int[Tensor, " B"]]:
    """Names -> one-hot batch ``(B, T, V)``, lengths ``(B,)``, labels ``(B,)``.

    Example:
        >>> data = surname_data()
        >>> x, lengths, y = encode(data, data.names.train[:3])
        >>> x.shape[0], x.shape[2] == len(data.vocab), lengths.shape, y.shape
        (3, True, torch.Size([3]), torch.Size([3]))
    """
    padded, lengths, _ = pad_batch([data.vocab.encode(tokenize(s.name)) for s in split])
    labels = torch.tensor([data.languages.index(s.language) for s in split])
    return F.one_hot(padded, len(data.vocab)).float(), lengths, labels


def split_accuracy(net: nn.Module, data: SurnameData, split: Sequence[Surname]) -> float:
    """The share of ``split`` whose locale ``net`` names right."""
    x, lengths, y = encode(data, split)
    with torch.no_grad():
        return (net(x, lengths).argmax(1) == y).float().mean().item()


@overload
def train_surname_classifier(seed: int, data: SurnameData | None = ..., epochs: int = ...,
                             with_history: Literal[False] = ...) -> SurnameRNN: ...


@overload
def train_surname_classifier(seed: int, data: SurnameData | None = ..., epochs: int = ...,
                             *, with_history: Literal[True]) -> tuple[SurnameRNN, History]: ...


def train_surname_classifier(seed: int, data: SurnameData | None = None,
                             epochs: int = 12, with_history: bool = False
                             ) -> SurnameRNN | tuple[SurnameRNN, History]:
    """The chapter's recipe: a :class:`SurnameRNN` of 64 units trained with Adam.

    Seeds everything with ``seed``, then ``epochs`` epochs of Adam at learning rate
    0.003 (:func:`~seqbook.train.fit`) on the training names, reshuffled into batches
    of 32 every epoch, the mean cross-entropy as loss; the weights of the epoch with
    the best validation accuracy are kept.

    Returns:
        The network, in eval mode; with ``with_history``, also the training's
        :class:`~seqbook.train.History`, whose ``metrics["valid accuracy"]`` holds the
        validation accuracy after every epoch.

    Example:
        >>> net = train_surname_classifier(0, epochs=1)
        >>> net.training, net.rnn.hidden_size
        (False, 64)
    """
    check_int("seed", seed, min_value=0)
    check_positive_int("epochs", epochs)
    data = surname_data() if data is None else data
    train = data.names.train
    seed_everything(seed)
    net = SurnameRNN(len(data.vocab), HIDDEN_SIZE, len(data.languages))
    optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)

    def shuffled_batches(batch_size=32):
        order = torch.randperm(len(train)).tolist()
        shuffled = [train[i] for i in order]
        return [encode(data, shuffled[i:i + batch_size])
                for i in range(0, len(shuffled), batch_size)]

    def loss_fn(model, batch):
        x, lengths, y = batch
        return F.cross_entropy(model(x, lengths), y)

    kept: dict[str, Any] = {"accuracy": 0.0, "state": None}  # the best epoch's

    def keep_best(model):
        valid_acc = split_accuracy(model, data, data.names.valid)
        if valid_acc > kept["accuracy"]:
            kept.update(accuracy=valid_acc, state=copy.deepcopy(model.state_dict()))
        return {"valid accuracy": valid_acc}

    history = fit(net, loss_fn, shuffled_batches, optimizer, epochs=epochs,
                  eval_fn=keep_best, progress=False)
    net.load_state_dict(kept["state"])
    return (net.eval(), history) if with_history else net.eval()


def late_valid_gain(valid_curve: Sequence[float], late: int = 4) -> float:
    """How much the best validation accuracy gains over the last ``late`` epochs: the
    best of ``valid_curve``'s last ``late`` values minus the best before them (the
    chapter's measure; negative when the best epoch came earlier). NaN when the curve
    has no epoch before the last ``late``.

    Example:
        >>> late_valid_gain([0.25, 0.5, 0.625, 0.5, 0.75, 0.5, 0.5, 0.5])
        0.125
        >>> late_valid_gain([0.5])
        nan
    """
    check_positive_int("late", late)
    if len(valid_curve) <= late:
        return float("nan")
    return max(valid_curve[-late:]) - max(valid_curve[:-late])


def _is_marked(s: Surname) -> bool:
    if s.language not in MARKERS:
        return False
    where, forms = MARKERS[s.language]
    return s.name.endswith(forms) if where == "suffix" else s.name.startswith(forms)


def cut(name: str, locale: str, where: str) -> str:
    """Cut the locale's marker (``"marker"``) or as many letters from the other end of
    the name (``"control"``). An Irish prefix is cut with the space after it.

    Example:
        >>> cut("Pavlović", "Croatian", "marker"), cut("Pavlović", "Croatian", "control")
        ('Pavlov', 'vlović')
        >>> cut("Mac Aogáin", "Irish", "marker"), cut("Mac Aogáin", "Irish", "control")
        ('Aogáin', 'Mac Ao')
    """
    check_choice("where", where, VARIANTS[1:])
    if locale == "Irish":                       # a prefix: Ó or Mac + space
        k = len(name.split(" ")[0]) + 1
        return name[k:] if where == "marker" else name[:-k]
    k = next(len(m) for m in ("nen", "ić", "ová") if name.endswith(m))
    return name[:-k] if where == "marker" else name[k:]


def marked_names(data: SurnameData, where: str) -> list[Surname]:
    """The names of the validation and test splits that carry a marker at ``where``.

    Example:
        >>> data = surname_data()
        >>> {s.language for s in marked_names(data, "prefix")}
        {'Irish'}
    """
    check_choice("where", where, WHERES)
    return [s for s in data.names.valid + data.names.test if _is_marked(s)
            and (s.language == "Irish") == (where == "prefix")]


def marked_accuracy(net: nn.Module, data: SurnameData, where: str,
                    variant: str) -> float:
    """The share of :func:`marked_names` at ``where`` that ``net`` names right, intact
    or cut (:func:`cut`)."""
    check_choice("variant", variant, VARIANTS)
    examples = marked_names(data, where)
    cut_names = [s.name if variant == "intact" else cut(s.name, s.language, variant)
                 for s in examples]
    return split_accuracy(net, data, [s._replace(name=n)
                                      for s, n in zip(examples, cut_names)])


@dataclass(frozen=True)
class SurnameMarkerRecord:
    """One network of :func:`train_surname_classifier`: its accuracies and ablation."""

    seed: int
    epochs: int
    valid_accuracy: float  # of the kept epoch
    test_accuracy: float
    suffix_names: int  # marked validation and test names
    prefix_names: int
    suffix_intact: float
    suffix_marker: float  # the suffix cut
    suffix_control: float  # as many letters cut from the front
    prefix_intact: float
    prefix_marker: float  # the prefix cut
    prefix_control: float  # as many letters cut from the end
    late_valid_gain: float  # best valid accuracy, last 4 epochs minus the rest
    seconds: float  # CPU time of this process for the training


def surname_marker_grid(seeds: Iterable[int] = SEEDS, epochs: int = 12,
                        log=None) -> list[SurnameMarkerRecord]:
    """Train a network from every seed and measure its ablation.

    Runs on one CPU thread (restored afterwards), as the committed table was made.
    """
    data = surname_data()
    records = []
    for seed in seeds:
        start = time.process_time()
        with one_thread():
            net, history = train_surname_classifier(seed, data, epochs,
                                                    with_history=True)
            seconds = time.process_time() - start
            ablation = {f"{where}_{variant}": marked_accuracy(net, data, where, variant)
                        for where in WHERES for variant in VARIANTS}
            records.append(SurnameMarkerRecord(
                seed, epochs, split_accuracy(net, data, data.names.valid),
                split_accuracy(net, data, data.names.test),
                len(marked_names(data, "suffix")), len(marked_names(data, "prefix")),
                **ablation,
                late_valid_gain=late_valid_gain(history.metrics["valid accuracy"]),
                seconds=round(seconds, 2)))
        if log is not None:
            print(f"seed={seed} test {records[-1].test_accuracy:.3f} "
                  f"late gain {records[-1].late_valid_gain:+.3f} "
                  f"{seconds:5.1f} s", file=log, flush=True)
    return records


def load_surname_marker_table() -> list[SurnameMarkerRecord]:
    """The committed table (``results/surname_markers.csv``).

    Example:
        >>> rows = load_surname_marker_table()
        >>> [row.seed for row in rows] == list(SEEDS)
        True
    """
    return load_table(RESULTS, SurnameMarkerRecord)


def main(argv: Sequence[str] | None = None) -> list[SurnameMarkerRecord]:
    """Train and ablate a network from every seed and write the table; returns its rows."""
    args = _table_options(argv, "seqbook.experiments.surname_markers",
                          "The surname RNN's marker ablation, from several seeds.",
                          SEEDS, RESULTS)
    records = surname_marker_grid(args.seeds, epochs=1 if args.smoke else 12,
                                  log=sys.stderr)
    _write_table(records, args, "seqbook.experiments.surname_markers", argv)
    return records


if __name__ == "__main__":  # pragma: no cover
    main()
