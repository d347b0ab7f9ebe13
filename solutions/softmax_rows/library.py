"""softmax_rows with the library call a CuPy user would pick:
cupyx.scipy.special.softmax along the rows (it shifts by the row maximum),
copied into the given output."""

import cupyx.scipy.special


def solve(input, output, rows, cols):
    output[...] = cupyx.scipy.special.softmax(input, axis=1)
