"""Optically switched cubes (TPU v4-style pods): the spec grammar and the allocators."""
