"""python tools/diagrams [NAME ...]: write the diagrams to book/images/diagrams/."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/, when run as a script

from diagrams import write  # noqa: E402

for path in write(sys.argv[1:] or None):
    print(path.relative_to(path.parents[3]))
