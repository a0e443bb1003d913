# Tables and figures over the dataset's shards, and the dataset archive.

from simcore.report.plots import captions as figure_captions
from simcore.report.reproduction import verdict_paths
from simcore.report.tables import TABLE_DEFINITIONS


localrules:
    tables,
    figures,
    reproduction,
    archive,


rule tables:
    input:
        shard_summaries(),
    output:
        report(
            directory(R(patterns.TABLES)),
            patterns=["{name,[a-z_]+}.csv"],
            caption="../report/tables.rst",
            category="Tables",
        ),
    params:
        # each table's description, from its definition (simcore.report.tables)
        descriptions={name: t.description for name, t in TABLE_DEFINITIONS.items()},
    log:
        "logs/tables/{dataset}.log",
    benchmark:
        benchmark("tables", "{dataset}")
    shell:
        "simcore tables --out {output:q} --summaries {input:q} > {log:q} 2>&1"


rule figures:
    input:
        R(patterns.TABLES),
    output:
        report(
            directory(R(patterns.FIGURES)),
            patterns=["{experiment}/{figure}.png"],
            caption="../report/figures.rst",
            category="Figures",
            subcategory="{experiment}",
        ),
    params:
        # each figure's caption, from its definition (simcore.report.plots.FIGURES)
        captions=figure_captions(),
    threads: all_cores
    log:
        "logs/figures/{dataset}.log",
    benchmark:
        benchmark("figures", "{dataset}")
    shell:
        "simcore figures --tables {input:q} --out {output:q} --jobs {threads}"
        " > {log:q} 2>&1"


rule reproduction:
    # The seeds' published numbers beside this dataset's (config/published.yaml).
    input:
        summaries=shard_summaries(),
        published="config/published.yaml",
        figures=R(patterns.FIGURES),
    output:
        page=report(
            R(patterns.REPRODUCTION),
            caption="../report/reproduction.rst",
            category="Reproduction",
        ),
        verdicts=[str(path) for path in verdict_paths(R(patterns.REPRODUCTION))],
    log:
        "logs/reproduction/{dataset}.log",
    benchmark:
        benchmark("reproduction", "{dataset}")
    shell:
        "simcore reproduction --published {input.published:q} --summaries {input.summaries:q}"
        " --figures figures --out {output.page:q} > {log:q} 2>&1"


rule archive:
    # Not part of the default target: `snakemake archive` packs the dataset for deposit.
    input:
        summaries=shard_summaries(),
        tables=dataset_file(patterns.TABLES),
        figures=dataset_file(patterns.FIGURES),
        reproduction=dataset_file(patterns.REPRODUCTION),
        schedules=schedule_outputs(),
        # packed as written, each under its own name (the resolved configuration, every
        # file merged with any --config, goes into the manifest and the README)
        configfiles=workflow.configfiles,
    output:
        dataset_file(patterns.ARCHIVE),
    params:
        dataset=R(DATASET),
        config=json.dumps(config, sort_keys=True),
    log:
        f"logs/archive/{DATASET}.log",
    benchmark:
        benchmark("archive", DATASET)
    shell:
        "simcore archive pack --out {output:q} --results {params.dataset:q}"
        " --summaries {input.summaries:q} --config-json {params.config:q}"
        " --configfiles {input.configfiles:q} > {log:q} 2>&1"
