# Trace acquisition (mirror or archive, sha256-verified) and SWF -> Parquet conversion.


localrules:
    acquire_trace,
    convert_trace,


rule acquire_trace:
    output:
        "resources/traces/{trace}.swf.gz",
    params:
        catalogue=config["traces"]["catalogue"],
        mirrors=" ".join(f"--mirror {m}" for m in config["traces"].get("mirrors", [])),
    log:
        "logs/acquire_trace/{trace}.log",
    retries: 2
    shell:
        "simcore fetch-trace {wildcards.trace} --catalogue {params.catalogue}"
        " --out {output} {params.mirrors} > {log} 2>&1"


rule convert_trace:
    input:
        swf="resources/traces/{trace}.swf.gz",
        code=code_paths(PACKAGE / name for name in TRACE_CODE),
    output:
        "results/workloads/{trace}/jobs.parquet",
    params:
        cleaning=json.dumps(config["traces"].get("cleaning", {}), sort_keys=True),
        jobs=lambda wildcards: CATALOGUE[wildcards.trace].jobs,
        max_procs=lambda wildcards: CATALOGUE[wildcards.trace].max_procs,
    log:
        "logs/convert_trace/{trace}.log",
    shell:
        "simcore convert-trace {input.swf} {output} --cleaning {params.cleaning:q}"
        " --expect-jobs {params.jobs} --expect-max-procs {params.max_procs} > {log} 2>&1"
