# torus-sweep: parameter sweeps of job scheduling on torus- and mesh-connected machines.
#
#   snakemake --cores N                      the default config (offline, synthetic workloads)
#   snakemake --cores N --configfile config/papers.yaml     the seeds' experiments on PWA traces
#   snakemake --cores N archive              pack results/<dataset>/archive/<dataset>.tar.xz
#   snakemake --report report.html           the figures and tables as an HTML report
#
# This root Snakefile is the main file (it carries the default target); rules live in
# workflow/rules/*.smk and each calls one simcore command.
from snakemake.utils import min_version

min_version("9.27")


# A --configfile is a complete configuration: it replaces the default instead of being
# merged into it (--config KEY=VALUE still overrides single keys).
if not workflow.config_settings.configfiles:

    configfile: "config/config.yaml"



report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/traces.smk"
include: "workflow/rules/sweep.smk"
include: "workflow/rules/results.smk"
include: "workflow/rules/schedules.smk"


rule all:
    # The tables and figures, and every file they derive from, so that deleting any of
    # these rebuilds it (Snakemake does not remake a missing intermediate file otherwise).
    default_target: True
    input:
        dataset_file(patterns.TABLES),
        dataset_file(patterns.FIGURES),
        dataset_file(patterns.REPRODUCTION),
        [str(path) for path in verdict_paths(dataset_file(patterns.REPRODUCTION))],
        shard_outputs(),
        schedule_outputs(),
        workload_files(),


onsuccess:
    # The last lines of a run: where the results are and what to open first.
    from simcore.report.guide import where_to_look
    from simcore.base.patterns import RESULTS

    print(where_to_look(RESULTS, DATASET))
    for line in second_stages_due():
        print(line)
