# The schedules of the runs experiments ask for (`schedules: N`): each exported from its
# shard's store (its per-job rows, or the run simulated again) and drawn.


rule export_schedule:
    input:
        summary=R(patterns.SHARD_SUMMARY),
        jobs=R(patterns.SHARD_JOBS),
        workloads=shard_workloads,  # read again where the shard kept no per-job rows
    output:
        report(
            directory(R(patterns.SCHEDULE)),
            patterns=["{picture}.png"],
            caption="../report/schedules.rst",
            category="Schedules",
            subcategory="{experiment}: {workload}, {machine}, {policy}, run {run}",
        ),
    params:
        store=lambda wildcards: R(patterns.STORE).format(dataset=wildcards.dataset),
    log:
        f"logs/export_schedule/{patterns.SHARD_JOB}/run={{run}}.log",
    benchmark:
        benchmark("export_schedule", patterns.SHARD_JOB + "/run={run}")
    shell:
        "(simcore export --store {params.store:q} --experiment {wildcards.experiment:q}"
        " --workload {wildcards.workload:q} --machine {wildcards.machine:q}"
        " --policy {wildcards.policy:q} --run {wildcards.run:q} --out {output:q}"
        " && simcore show {output:q}) > {log:q} 2>&1"
