"""transpose with what a CuPy user would write: assign the transposed view,
which CuPy copies with one strided elementwise kernel."""


def solve(input, output, rows, cols):
    output[...] = input.T
