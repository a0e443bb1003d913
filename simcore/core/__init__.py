"""The event engine: simulation state, the interfaces allocators and schedulers
implement, failures, run metrics and results.
"""
