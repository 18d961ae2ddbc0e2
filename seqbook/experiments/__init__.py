"""The chapters' experiment harnesses: measurements that more than one chapter runs.

The translation chapters' measurements live in :mod:`seqbook.experiments.translation`
(and their several-seed study in ``seqbook.experiments.translation_study``); what the
recurrent chapters share is exported here.

The chapters on RNNs, vanishing gradients, LSTMs and GRUs run the same experiments on
different networks; the code they share lives here, tested once:

- tasks that draw fresh batches from a generator, ``task(batch, generator) -> (x, y)``:
  :class:`FirstSymbolTask` (a long time lag), :class:`CoincidenceTask` (the lecture's
  LSTM example) and :class:`ValueStreamTask` (a stream that needs forgetting);
- a recurrent layer with a linear readout (:class:`LastOutputClassifier`,
  :class:`StepClassifier`, :class:`StepRegressor`), its loss and its score;
- :func:`train_until_solved`, the chapters' training protocol; the recurrent layers
  they compare (:class:`LayerSpec`, :func:`recurrent_layer`); the long-lag and
  forgetting runs (:func:`long_lag_run`, :func:`value_stream_run`) and the committed
  result tables they compute (:func:`load_first_symbol_table`,
  :func:`load_chrono_table`, :func:`load_value_stream_table`);
- forward and backward passes to time (:func:`forward_backward`; the timer and the
  operation counts are :mod:`seqbook.costs`'s).
"""

from seqbook.experiments.classifier import (
    LastOutputClassifier,
    StepClassifier,
    accuracy,
    classify_loss,
)
from seqbook.experiments.coincidence import CoincidenceTask
from seqbook.experiments.first_symbol import FirstSymbolTask
from seqbook.experiments.layers import LayerSpec, recurrent_layer
from seqbook.experiments.long_lag import (
    RunRecord,
    load_chrono_table,
    load_first_symbol_table,
    load_value_stream_table,
    long_lag_run,
    run_grid,
)
from seqbook.experiments.results import load_table, save_table
from seqbook.experiments.timing import (
    forward_backward,
    forward_backward_ms,
)
from seqbook.experiments.until_solved import SolveResult, train_until_solved
from seqbook.experiments.value_stream import (
    StepRegressor,
    ValueStreamRecord,
    ValueStreamTask,
    masked_mse,
    rmse,
    value_stream_run,
)

__all__ = [
    "CoincidenceTask",
    "FirstSymbolTask",
    "LastOutputClassifier",
    "LayerSpec",
    "RunRecord",
    "SolveResult",
    "StepClassifier",
    "StepRegressor",
    "ValueStreamRecord",
    "ValueStreamTask",
    "accuracy",
    "classify_loss",
    "forward_backward",
    "forward_backward_ms",
    "load_chrono_table",
    "load_first_symbol_table",
    "load_table",
    "load_value_stream_table",
    "long_lag_run",
    "masked_mse",
    "recurrent_layer",
    "rmse",
    "run_grid",
    "save_table",
    "train_until_solved",
    "value_stream_run",
]
