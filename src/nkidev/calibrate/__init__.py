"""Calibration of the cost model from measured profiles: read measurements, re-simulate their kernels, fit
the target's free constants, and report how well the fit predicts what it did not see (leave-one-out)."""
