# Synthetic workloads, numba warm-up, and one job per shard (experiment x workload x
# machine x policy) that simulates its runs on Dask workers. No rule here has a `run:`
# block: Snakemake runs such a job in a new Snakemake process that parses the whole
# workflow again, seconds per job.


localrules:
    synthesize_workload,
    warm_kernels,


rule synthesize_workload:
    # every seed's sample of one workload in one job (many seeds to a file in the directory)
    output:
        directory(R(patterns.SYNTHETIC_SAMPLES)),
    params:
        spec=synthetic_spec,
        code=synthetic_code,
        seeds=synthetic_seeds,
        out=lambda wildcards, output: output[0],
    log:
        "logs/synthesize_workload/{workload}/{variant}.log",
    benchmark:
        benchmark("synthesize_workload", "{workload}/{variant}")
    shell:
        "simcore synthesize --spec {params.spec:q} --seeds {params.seeds:q}"
        " --samples {params.out:q}"
        " > {log:q} 2>&1"


rule warm_kernels:
    # Compile the engine of every (allocator, scheduler) pair the configuration uses, in
    # parallel processes, before the shards' workers load them from numba's cache.
    output:
        touch(KERNELS_READY),
    params:
        pairs=[arg for pair in ENGINE_PAIRS for arg in ("--pair", *pair)],
    threads: all_cores
    log:
        "logs/warm_kernels.log",
    benchmark:
        benchmark("warm_kernels", "warm_kernels")
    shell:
        "simcore warm {params.pairs:q} --jobs {threads} 2>&1 | tee {log:q}"


rule simulate_shard:
    input:
        workloads=shard_workloads,
        kernels=KERNELS_READY,
    output:
        summary=R(patterns.SHARD_SUMMARY),
        jobs=R(patterns.SHARD_JOBS),
    params:
        # digests of the specification and of the code its runs can execute: a change
        # of either re-runs exactly this shard, and the re-run reason reads as words
        identity=shard_identity,
        shard=packed_shard,
        root=patterns.RESULTS,
        # the shard's own measurements (runs, their seconds by phase): `simcore plan --timing`
        timing=patterns.SHARD_TIMING_DIR,
        dask=json.dumps(
            config.get("sweep", {}).get("dask", {"backend": "local"}), sort_keys=True
        ),
    threads: shard_threads
    resources:
        mem_mb=lambda wildcards, threads, attempt: shard_resources(wildcards, threads, attempt)[
            "mem_mb"
        ],
        runtime=lambda wildcards, threads, attempt: shard_resources(
            wildcards, threads, attempt
        )["runtime"],
    log:
        f"logs/simulate_shard/{patterns.SHARD_JOB}.log",
    benchmark:
        benchmark("simulate_shard", patterns.SHARD_JOB)
    shell:
        # everything to the log; its last line (runs cached and simulated) to the console
        "simcore sweep-shard --spec-packed {params.shard:q} --results {params.root:q}"
        " --workers {threads} --dask {params.dask:q} --timing-dir {params.timing:q}"
        " 2>&1 | tee {log:q} | tail -n 1"
