"""Chu's 2D-mesh allocators and the grid helpers they share."""
