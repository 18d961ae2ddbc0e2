"""Argument contracts shared by the Energy Transformer's modules."""

from __future__ import annotations

from seqbook._contracts import Shaped

#: Tokens ``(B, N, D)`` of the module's ``dim`` features and dtype, finite, and at least
#: two of them: a token never attends to itself. The dtype must be the parameters'
#: (float64 input is computed in float64 only by a float64 module: ``module.double()``).
Tokens = Shaped("B N dim", floating=True, dtype_of="module", finite=True, min_size={"N": 2})
