"""xLSTM's two cells (Beck et al., 2024): the sLSTM, an LSTM with exponential input
gates, a normaliser and a stabiliser; and the mLSTM, a matrix memory with the same
gates, in a recurrent and a parallel form.

The chapter "xLSTM: the LSTM with exponential gates and a matrix memory"
(``book/xlstm.md``) explains every piece. (The ``xlstm`` package of the paper's
authors, against which the tests check these cells, is another package.)
"""

from seqbook.xlstm.mlstm import mlstm_parallel, mlstm_recurrent, mlstm_step
from seqbook.xlstm.slstm import SLSTM, SLSTMState

__all__ = ["SLSTM", "SLSTMState", "mlstm_parallel", "mlstm_recurrent", "mlstm_step"]
