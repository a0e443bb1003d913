"""Space-sharing schedulers: numba decision steps, one policy struct each.

A scheduler module builds the struct its registry row (`simcore.schedulers.registry`) names
(`kernel_policy`) and implements `simcore.core.decide.decide` for it.
"""
