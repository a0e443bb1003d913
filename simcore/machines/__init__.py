"""Machines: specs, partition tables and allocators (flat, torus/mesh, BG/L)."""
