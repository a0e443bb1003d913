"""Slurm's topology/torus3d placement menus and the allocator that takes them."""
