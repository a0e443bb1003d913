"""BG/L-style wired machines: midplane wiring and Aridor's two-phase midplane and link
allocation.
"""
