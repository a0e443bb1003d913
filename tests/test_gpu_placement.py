"""The placement comparison's reduction (`simcore.tools.gpu_placement`): runs read back to
their placement and dilation, reduced over seeds, as tables and a figure."""

from __future__ import annotations

import polars as pl
import pytest

from simcore.tools.gpu_placement import markdown, placement, placement_rows, write_placement


@pytest.mark.parametrize(("spec", "expected"), [
    ("flat:1152", ("flat", 0.0)),
    ("blocks:64x18", ("block", 0.0)),
    ("blocks:64x18 allocator=slurm-tree block_dilation=0.2", ("tree", 0.2)),
    ("blocks:64x18 allocator=kueue-tas tas_level=fit tas_request=required",
     ("kueue-required", 0.0)),
    ("blocks:64x18 allocator=kueue-tas block_dilation=0.1", ("kueue-preferred", 0.1)),
])
def test_a_runs_placement_is_read_from_its_machine(spec, expected):
    assert tuple(placement(spec).values()) == expected


def summaries() -> pl.DataFrame:
    """Two seeds of two placements under EASY, one of them also under BestEffortFIFO."""
    rows = []
    for spec, policy, seed, wait, share in (
            ("blocks:64x18 allocator=slurm-tree", "aggressive-backfill", 1, 3600.0, 0.5),
            ("blocks:64x18 allocator=slurm-tree", "aggressive-backfill", 2, 7200.0, 0.7),
            ("flat:1152", "aggressive-backfill", 1, 1800.0, None),
            ("blocks:64x18 allocator=kueue-tas", "best-effort-fifo", 1, 10800.0, 0.4)):
        rows.append({"experiment": "modern-gpu-placement", "workload": "blue-racks",
                     "offered_load": 0.9, "machine_spec": spec, "policy": policy,
                     "seed": seed, "utilization": 0.8, "mean_wait_s": wait, "mean_bsld": 9.0,
                     "one_block_share": share, "blocks_spanned_mean": 2.0,
                     "refused_jobs": 0})
    rows.append({**rows[0], "experiment": "other"})
    return pl.DataFrame(rows)


def test_runs_of_a_setting_are_reduced_over_seeds(tmp_path):
    rows = placement_rows(summaries())
    assert rows["placement"].to_list() == ["flat", "tree", "kueue-preferred"]
    assert rows["admission"].to_list() == ["EASY", "EASY", "BestEffortFIFO"]
    tree = rows.row(1, named=True)
    assert tree["runs"] == 2 and tree["mean_wait_s_mean"] == 5400.0
    assert tree["one_block_share_mean"] == pytest.approx(0.6)
    assert tree["mean_wait_s_ci95"] > 0
    text = markdown(rows)
    assert "| EASY | tree | 0 | 2 | 0.800 | 1.50 | 9 | 0.60 | 2.00 | 0 |" in text
    files = write_placement(summaries(), tmp_path)
    assert {f.name for f in files} >= {"placement.csv", "placement.md"}
    assert any(f.suffix == ".png" for f in files)


def test_a_store_without_the_experiment_writes_nothing(tmp_path):
    assert write_placement(summaries().filter(pl.col("experiment") == "other"), tmp_path) == []
