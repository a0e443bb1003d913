"""Krevat's largest-free-partition rule on tori and meshes: box tables, maximal free
boxes, partition counts.
"""
