# torus-sweep: parameter sweeps of job scheduling on torus- and mesh-connected machines.
#
#   snakemake --cores N                      the default config (offline, synthetic workloads)
#   snakemake --cores N --configfile config/papers.yaml     the seeds' experiments on PWA traces
#
# This root Snakefile is the main file (it carries the default target); rules live in
# workflow/rules/*.smk and each calls one simcore command.
from snakemake.utils import min_version, validate

min_version("9.27")


configfile: "config/config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/traces.smk"


rule all:
    default_target: True
    input:
        workload_files(),
