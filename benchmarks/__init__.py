"""Side-by-side speed measurements of seqbook against reference implementations.

Run with ``python -m benchmarks`` (or ``make bench``). Each row times seqbook and its
reference in the same process, alternating between them, and reports medians and
their ratio: ratios survive a noisy machine, absolute times do not.
"""
