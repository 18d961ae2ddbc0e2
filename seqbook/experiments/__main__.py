"""``python -m seqbook.experiments``: compute the committed result tables (see
:mod:`seqbook.experiments.long_lag`; ``--help`` lists the options)."""

import sys

from seqbook.experiments.long_lag import main

if __name__ == "__main__":
    sys.exit(main())
