"""Sweep commands: compile its kernels (`warm`), run a shard (`sweep-shard`) and make its
results: `tables`, `reproduction`, `figures`, `archive`."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from simcore.base.errors import SpecError
from simcore.base.jsontext import json_text
from simcore.base.patterns import PUBLISHED, RESULTS, SHARD_TIMING_FILE
from simcore.cli.common import check_store, check_workers, json_argument


def add_commands(commands: argparse._SubParsersAction) -> None:
    """Add the sweep commands to `commands`."""
    warm = commands.add_parser("warm", help="compile the simulation kernels into the cache")
    warm.add_argument("--pair", nargs=2, action="append", metavar=("ALLOCATOR", "SCHEDULER"),
                      help="only this allocator and scheduler (repeatable; default: all)")
    warm.add_argument("--jobs", type=int, default=1,
                      help="engines compiled at once, each in its own process (default 1)")
    warm.add_argument("--flag", help="touch this file when done")
    warm.set_defaults(handler=_warm)

    shard = commands.add_parser("sweep-shard", help="run one shard of a sweep")
    spec = shard.add_mutually_exclusive_group(required=True)
    spec.add_argument("--spec", metavar="JSON", help="shard specification")
    spec.add_argument("--spec-packed", metavar="WORD",
                      help="shard specification as the workflow passes it (compressed)")
    shard.add_argument("--results", default="results", help="results root (store and cache)")
    shard.add_argument("--workers", type=int, default=1, help="local Dask worker processes")
    shard.add_argument("--dask", default='{"backend": "local"}', metavar="JSON",
                       help="Dask backend: local, address or slurm, with options")
    shard.add_argument("--timing-dir", metavar="DIR",
                       help="write the shard's wall seconds and its runs' seconds by phase "
                            "(read, prepare, engine, simulate, fidelity, store; JSON) to "
                            "DIR/<dataset>/<experiment>/<workload>/<machine>/<policy>.json")
    shard.set_defaults(handler=_sweep_shard)

    again = commands.add_parser(
        "resimulate", help="simulate selected runs of a configuration again (to fill in a "
                           "column the store gained after they ran)")
    again.add_argument("--configfile", required=True, help="the configuration")
    again.add_argument("--results", default=RESULTS, help="results root (store and cache)")
    again.add_argument("--experiment", action="append", default=[],
                       help="only this experiment's runs (repeatable: any of them)")
    again.add_argument("--policy", action="append", default=[],
                       help="only this policy's runs (repeatable: any of them)")
    again.add_argument("--where", action="append", default=[], metavar="NAME=VALUE",
                       help="only runs with this value of a transform, scheduler parameter, "
                            "allocator option or seed (repeatable: all of them)")
    again.add_argument("--workers", type=int, default=1, help="local Dask worker processes")
    again.set_defaults(handler=_resimulate)

    store = commands.add_parser("store", help="maintain the run cache")
    store_commands = store.add_subparsers(dest="store_command", required=True)
    compact = store_commands.add_parser(
        "compact", help="keep in the run cache only the runs the configurations use, in as "
                        "few files as their rows allow (run it while no sweep runs)")
    compact.add_argument("--configfile", action="append", required=True,
                         help="a configuration whose runs are kept (repeatable: every "
                              "configuration whose results share the cache)")
    compact.add_argument("--results", default=RESULTS, help="results root (run cache)")
    compact.set_defaults(handler=_compact)
    _add_results(commands)
    _add_archive(commands)


def _add_results(commands: argparse._SubParsersAction) -> None:
    tables = commands.add_parser("tables", help="aggregate a dataset's store into tables")
    tables.add_argument("--store", help="a dataset's store directory, e.g. "
                                        "results/torus-sweep-default/store")
    tables.add_argument("--out", required=True, help="directory of the tables")
    tables.add_argument("--summaries", nargs="+", metavar="FILE",
                        help="only these shard summary files (default: the whole store)")
    tables.set_defaults(handler=_tables)

    reproduction = commands.add_parser(
        "reproduction", help="the seeds' published numbers beside a dataset's results")
    reproduction.add_argument("--published", default=str(PUBLISHED),
                              help="the published numbers (config/published.yaml)")
    reproduction.add_argument("--store", help="a dataset's store directory")
    reproduction.add_argument("--summaries", nargs="+", metavar="FILE",
                              help="only these shard summary files (default: the whole store)")
    reproduction.add_argument("--figures", default="figures",
                              help="where the report links figures, relative to it")
    reproduction.add_argument("--copy-figures", metavar="DIR",
                              help="copy the linked figures from this dataset figure directory "
                                   "to --figures beside the report (for a report kept "
                                   "outside the dataset, e.g. docs/reproduction.md)")
    reproduction.add_argument("--out", required=True, help="the report (.md)")
    reproduction.set_defaults(handler=_reproduction)

    figures = commands.add_parser("figures", help="plot the tables")
    figures.add_argument("--tables", required=True, help="directory of the tables")
    figures.add_argument("--out", required=True, help="directory of the figures")
    figures.add_argument("--jobs", type=int, default=1,
                         help="processes drawing experiments side by side (default 1)")
    figures.set_defaults(handler=_figures)


def _add_archive(commands: argparse._SubParsersAction) -> None:
    archive = commands.add_parser("archive", help="pack or verify a result dataset archive")
    archive_commands = archive.add_subparsers(dest="archive_command", required=True)
    pack = archive_commands.add_parser("pack", help="store, tables, figures, config -> one file")
    pack.add_argument("--out", required=True, help="archive path (.tar.xz, .tar.gz or .tar)")
    pack.add_argument("--results", required=True,
                      help="the dataset's directory, e.g. results/torus-sweep-default")
    pack.add_argument("--config-json", default="{}", metavar="JSON", help="resolved config")
    pack.add_argument("--configfiles", nargs="+", default=[], metavar="FILE",
                      help="the configuration files the workflow was given, packed as "
                           "written under config/")
    pack.add_argument("--name", help="dataset name (default: config 'dataset')")
    pack.add_argument("--summaries", nargs="+", metavar="FILE",
                      help="only these shards (default: the whole store)")
    pack.set_defaults(handler=_archive_pack)
    check = archive_commands.add_parser("verify", help="check every checksum, reload tables")
    check.add_argument("path")
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.set_defaults(handler=_archive_verify)


def _warm(args: argparse.Namespace) -> int:
    from simcore.base.caches import numba_base
    from simcore.machines.registry import get_allocator
    from simcore.policy import get_scheduler
    from simcore.sweep.runner import warm_kernels

    began = time.perf_counter()
    pairs = [tuple(p) for p in args.pair] if args.pair else None
    for allocator, scheduler in pairs or []:
        get_allocator(allocator)
        get_scheduler(scheduler)
    if args.jobs < 1:
        raise SpecError(f"--jobs {args.jobs}: expected at least 1")
    if args.flag and Path(args.flag).is_dir():
        raise SpecError(f"--flag {args.flag}: is a directory; expected a file name")
    warmed = warm_kernels(pairs, args.jobs)
    print(f"kernels: {len(warmed)} engine(s) compiled in {time.perf_counter() - began:.1f} s "
          f"with {args.jobs} process(es) (cache {numba_base()}, a directory per engine)",
          file=sys.stderr)
    if args.flag:
        Path(args.flag).parent.mkdir(parents=True, exist_ok=True)
        Path(args.flag).touch()
    return 0


def _sweep_shard(args: argparse.Namespace) -> int:
    from simcore.base.atomic import atomic_write_bytes
    from simcore.sweep.experiments import Shard
    from simcore.sweep.runner import check_backend, run_shard

    dask = json_argument("--dask", args.dask)
    check_workers(args.workers)
    check_backend(dask)
    shard = (Shard.from_json(args.spec) if args.spec is not None
             else Shard.unpack(args.spec_packed))
    report = run_shard(shard, args.results, args.workers, dask)
    if args.timing_dir:
        name = SHARD_TIMING_FILE.format(dataset=shard.dataset, **shard.names)
        atomic_write_bytes(Path(args.timing_dir) / name,
                           json_text(report.timing(args.workers)).encode())
    return 0


def _resimulate(args: argparse.Namespace) -> int:
    from simcore.sweep.resimulation import conditions, resimulate

    where = conditions(args.where)
    check_workers(args.workers)
    done = resimulate(args.configfile, args.results, args.experiment, args.policy, where,
                      args.workers)
    print(f"{done} runs simulated again; `snakemake --cores N --configfile {args.configfile}` "
          "renews the tables and figures from them", file=sys.stderr)
    return 0


def _compact(args: argparse.Namespace) -> int:
    from simcore.sweep.cache import compact
    from simcore.sweep.planning import used_keys

    used = used_keys(args.configfile, args.results)
    counts = compact(args.results, used)
    print(f"{args.results}: run cache compacted: {counts['files_before']} files before, "
          f"{counts['files_after']} after, holding {counts['runs_kept']} of the "
          f"{sum(len(k) for k in used.values())} runs the configurations use")
    return 0


def _tables(args: argparse.Namespace) -> int:
    import pyarrow as pa

    from simcore.report.tables import write_tables

    # freed Arrow memory goes back to the system (mimalloc, the default, keeps it): the
    # store is read one shard file at a time, and a million runs stay under 3.5 GB
    pa.set_memory_pool(pa.system_memory_pool())
    if args.store is None and not args.summaries:
        raise SpecError("tables: give --store or --summaries")
    check_store(args.store)
    if args.store is not None and Path(args.store).resolve() in \
            (Path(args.out).resolve(), *Path(args.out).resolve().parents):
        raise SpecError(f"--out {args.out}: inside the store {args.store}; expected a "
                        "directory outside it (the store holds only shard files)")
    for path in write_tables(args.store, args.out, args.summaries):
        print(path)
    return 0


def _reproduction(args: argparse.Namespace) -> int:
    from simcore.report.reproduction import write_report

    if args.store is None and not args.summaries:
        raise SpecError("reproduction: give --store or --summaries")
    check_store(args.store)
    if args.copy_figures is not None and not Path(args.copy_figures).is_dir():
        raise SpecError(f"--copy-figures {args.copy_figures}: no such directory; expected a "
                        "dataset's figure directory")
    write_report(args.published, args.store, args.summaries, args.out, args.figures,
                 args.copy_figures)
    print(args.out)
    return 0


def _figures(args: argparse.Namespace) -> int:
    from simcore.report.plots import write_figures

    if args.jobs < 1:
        raise SpecError(f"--jobs {args.jobs}; expected at least 1")
    for path in write_figures(args.tables, args.out, args.jobs):
        print(path)
    return 0


def _archive_pack(args: argparse.Namespace) -> int:
    from simcore.report.archive import pack_dataset

    print(pack_dataset(args.out, args.results, json_argument("--config-json", args.config_json),
                       name=args.name, summaries=args.summaries,
                       configfiles=args.configfiles))
    return 0


def _archive_verify(args: argparse.Namespace) -> int:
    from simcore.report.archive import verify

    report = verify(args.path)
    if args.json:
        print(json_text(report))
        return 0
    print(f"{args.path}: {report['members']} members, {report['bytes']} bytes, checksums OK")
    tables = report["tables"]
    assert isinstance(tables, dict)  # table name -> rows
    for table, rows in tables.items():
        print(f"  {table}: {rows} rows")
    return 0
