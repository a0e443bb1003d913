# Synthetic workloads, numba warm-up, and one job per shard (experiment x workload x
# machine x policy) that simulates its runs on Dask workers.


localrules:
    synthesize_workload,
    warm_kernels,
    shard_spec,


rule synthesize_workload:
    input:
        code=lambda wildcards: code_paths(
            closure(
                [
                    "simcore.workload.synthetic",
                    MODELS[synthetic_spec(wildcards)["model"]].function.split(":")[0],
                ]
            )
        ),
    output:
        R(patterns.SYNTHETIC_WORKLOAD),
    params:
        spec=synthetic_spec,
    log:
        "logs/synthesize_workload/{workload}/seed={seed}.log",
    run:
        from simcore.workload.io import write_workload
        from simcore.workload.synthetic import SyntheticSpec, synthesize

        values = dict(params.spec)
        spec = SyntheticSpec.create(values.pop("model"), values)
        write_workload(synthesize(spec, int(wildcards.seed)), output[0])


rule warm_kernels:
    # Compile the engine of every (allocator, scheduler) pair the configuration uses once,
    # serially, before workers load them from numba's cache (parallel first compilations
    # of one cache can crash).
    output:
        touch(KERNELS_READY),
    params:
        pairs=[arg for pair in ENGINE_PAIRS for arg in ("--pair", *pair)],
    log:
        "logs/warm_kernels.log",
    shell:
        "simcore warm {params.pairs:q} > {log:q} 2>&1"


rule shard_spec:
    # The shard's whole specification, written once per change of it: the simulation job
    # reads it from here, and a changed policy shows as one changed digest, not pages of
    # JSON.
    output:
        R(patterns.SPEC),
    params:
        digest=lambda wildcards: shard(wildcards).digest(),
    run:
        from simcore.atomic import atomic_write_bytes

        atomic_write_bytes(output[0], shard(wildcards).to_json().encode())


rule simulate_shard:
    input:
        spec=R(patterns.SPEC),
        workloads=shard_workloads,
        code=shard_code,
        kernels=KERNELS_READY,
    output:
        summary=R(patterns.SHARD_SUMMARY),
        jobs=R(patterns.SHARD_JOBS),
    params:
        what=lambda wildcards: shard(wildcards).describe(),
        root=patterns.RESULTS,
        dask=json.dumps(
            config.get("sweep", {}).get("dask", {"backend": "local"}), sort_keys=True
        ),
    threads: 64
    resources:
        mem_mb=lambda wildcards, threads: 1000 + 750 * threads,
    log:
        "logs/simulate_shard/{dataset}/{experiment}/{workload}/{machine}/{policy}.log",
    shell:
        # everything to the log; its last line (runs cached and simulated) to the console
        "simcore sweep-shard --spec-file {input.spec:q} --results {params.root:q}"
        " --workers {threads} --dask {params.dask:q} 2>&1 | tee {log:q} | tail -n 1"
