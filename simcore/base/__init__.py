"""Foundations every layer uses: errors, typed parameters, file formats and atomic
writes, bitsets, the numba set-up and code fingerprints.
"""
