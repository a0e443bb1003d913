"""Machines of base blocks aggregated into blocks (Slurm topology/block)."""
