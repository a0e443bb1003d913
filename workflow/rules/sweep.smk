# Synthetic workloads, numba warm-up, and one job per shard (experiment x workload x
# machine x policy) that simulates its runs on Dask workers.


localrules:
    synthesize_workload,
    warm_kernels,


rule synthesize_workload:
    input:
        code=code_paths(PACKAGE / name for name in SYNTHETIC_CODE),
    output:
        "results/workloads/{workload}/seed={seed}/jobs.parquet",
    params:
        spec=synthetic_spec,
    log:
        "logs/synthesize_workload/{workload}/seed={seed}.log",
    shell:
        "simcore synthesize --model {params.spec[model]} --jobs {params.spec[jobs]}"
        " --max-procs {params.spec[max_procs]}"
        " --job-type {params.spec[job_type]} --seed {wildcards.seed} --out {output} > {log} 2>&1"


rule warm_kernels:
    # Compile every kernel once, serially, before workers load them from numba's cache
    # (parallel first compilations of one cache can crash).
    output:
        touch(KERNELS_READY),
    log:
        "logs/warm_kernels.log",
    shell:
        "simcore warm > {log} 2>&1"


rule simulate_shard:
    input:
        workloads=shard_workloads,
        code=shard_code,
        kernels=KERNELS_READY,
    output:
        summary=SHARD_SUMMARY,
        jobs=f"{SHARD_DIR}/jobs.parquet",
    params:
        spec=lambda wildcards: shard(wildcards).to_json(),
        dask=json.dumps(
            config.get("sweep", {}).get("dask", {"backend": "local"}), sort_keys=True
        ),
    threads: 64
    resources:
        mem_mb=lambda wildcards, threads: 1000 + 750 * threads,
    log:
        "logs/simulate_shard/{experiment}/{workload}/{machine}/{policy}.log",
    shell:
        "simcore sweep-shard --spec {params.spec:q} --results results --workers {threads}"
        " --dask {params.dask:q} > {log} 2>&1"
