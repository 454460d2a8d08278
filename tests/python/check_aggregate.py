#!/usr/bin/env python3
"""Independent NumPy mean and covariance of batch members (tests/cli/test_cli_batch.cpp).

usage: check_aggregate.py SAMPLES.txt OUT.txt
SAMPLES.txt: one member per line, its values separated by blanks (in batch order).
OUT.txt: the mean (p values), the unbiased covariance (p*p values, row-major) and the
Hartlap factor (n - p - 2) / (n - 1), one per line with 17 significant digits.
Exit 77 when NumPy is missing (the caller skips the comparison with a message).
"""
import sys

try:
    import numpy as np
except ImportError:
    print("numpy is not installed", file=sys.stderr)
    sys.exit(77)

x = np.loadtxt(sys.argv[1], ndmin=2)
n, p = x.shape
mean = x.mean(axis=0)
cov = np.cov(x, rowvar=False, ddof=1).reshape(p, p)
hartlap = (n - p - 2) / (n - 1)
with open(sys.argv[2], "w") as f:
    for v in list(mean) + list(cov.ravel()) + [hartlap]:
        f.write("%.17g\n" % v)
