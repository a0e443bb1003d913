"""The last lines of a workflow run name the results directory and the files to open."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from simcore.report.guide import where_to_look
from tests.conftest import ROOT


def test_last_lines_name_the_results_and_the_first_files(tmp_path: Path) -> None:
    dataset = tmp_path / "d"
    for name in ("tables/utilization.md", "figures/e/bsld-vs-utilization.png",
                 "figures/e/utilization-vs-load.png", "reproduction.md"):
        (dataset / name).parent.mkdir(parents=True, exist_ok=True)
        (dataset / name).write_text("x")
    pl.DataFrame({"meets_target": [True, False, None]}).write_parquet(
        dataset / "tables" / "response.parquet")
    lines = where_to_look(tmp_path, "d").splitlines()
    assert lines[0] == f"Results of dataset d: {dataset}/"
    assert lines[1].startswith(f"  open {dataset / 'tables' / 'utilization.md'}  ")
    assert lines[2].startswith(f"  open {dataset / 'figures/e/utilization-vs-load.png'}  "
                               "the first of 2 figures")
    assert lines[3].startswith(f"  open {dataset / 'reproduction.md'}  ")
    assert lines[4].startswith("  precision target of the mean response met in 1 of 2 rows")
    assert where_to_look(tmp_path, "none").splitlines() == [
        f"Results of dataset none: {tmp_path / 'none'}/"]


def test_results_readme_names_every_table() -> None:
    from simcore.report.tables import TABLES

    text = " ".join((ROOT / "results" / "README.md").read_text().split())
    listed = text.split("<dataset>/tables/ ", 1)[1].split(" (.parquet", 1)[0]
    assert [name.strip() for name in listed.split(",")] == list(TABLES)
