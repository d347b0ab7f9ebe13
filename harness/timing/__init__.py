"""Measurement: the timed loop, its stopping criteria, and the statistics of samples."""
