"""Machines: specifications, the registry of kinds and allocators, and one folder per family.

Families (`flat`, `boxes/`, `bgl/`, `mesh2d/`, `curves/`, `slurm/`, `cubes/`) build the
structs the kernels run on and implement `simcore.core.allocate` for them; they import
only `contract` and `descriptions` of this folder, never the registry or the spec above
them, which name them by module.
"""
