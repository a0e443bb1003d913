# Tables and figures over the whole store, and the dataset archive.


localrules:
    tables,
    figures,
    archive,


rule tables:
    input:
        shard_summaries(),
    output:
        report(
            directory("results/tables"),
            patterns=["{name}.csv"],
            caption="../report/tables.rst",
            category="Tables",
        ),
    log:
        "logs/tables.log",
    shell:
        "simcore tables --results results --out {output} --summaries {input} > {log} 2>&1"


rule figures:
    input:
        "results/tables",
    output:
        report(
            directory("results/figures"),
            patterns=["{name}.png"],
            caption="../report/figures.rst",
            category="Figures",
        ),
    log:
        "logs/figures.log",
    shell:
        "simcore figures --tables {input} --out {output} > {log} 2>&1"


rule archive:
    # Not part of the default target: `snakemake archive` packs the dataset for deposit.
    input:
        summaries=shard_summaries(),
        tables="results/tables",
        figures="results/figures",
    output:
        f"results/archive/{config.get('dataset', 'torus-sweep')}.tar.xz",
    params:
        config=json.dumps(config, sort_keys=True),
    log:
        "logs/archive.log",
    shell:
        "simcore archive pack --out {output} --results results"
        " --summaries {input.summaries} --config-json {params.config:q} > {log} 2>&1"
