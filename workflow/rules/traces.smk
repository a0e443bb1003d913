# Trace acquisition (mirror or archive, sha256-verified) and SWF -> Parquet conversion.


localrules:
    acquire_trace,
    convert_trace,


rule acquire_trace:
    output:
        patterns.TRACE,
    params:
        catalogue=config["traces"]["catalogue"],
        # each mirror is one quoted argument: a path is never read as shell syntax
        mirrors=[arg for m in config["traces"].get("mirrors", []) for arg in ("--mirror", m)],
    log:
        "logs/acquire_trace/{trace}.log",
    benchmark:
        benchmark("acquire_trace", "{trace}")
    retries: 2
    shell:
        "simcore fetch-trace {wildcards.trace:q} --catalogue {params.catalogue:q}"
        " --out {output:q} {params.mirrors:q} > {log:q} 2>&1"


rule convert_trace:
    input:
        swf=patterns.TRACE,
    output:
        R(patterns.TRACE_WORKLOAD),
    params:
        code=CODE[CONVERSION_MODULES],
        cleaning=json.dumps(config["traces"].get("cleaning", {}), sort_keys=True),
        jobs=lambda wildcards: CATALOGUE[wildcards.trace].jobs,
        max_procs=lambda wildcards: CATALOGUE[wildcards.trace].max_procs,
        sha256=lambda wildcards: CATALOGUE[wildcards.trace].sha256,
    log:
        "logs/convert_trace/{trace}/{variant}.log",
    benchmark:
        benchmark("convert_trace", "{trace}/{variant}")
    shell:
        "simcore convert-trace {input.swf:q} {output:q} --cleaning {params.cleaning:q}"
        " --expect-jobs {params.jobs} --expect-max-procs {params.max_procs}"
        " --expect-sha256 {params.sha256} > {log:q} 2>&1"
