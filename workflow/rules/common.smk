# Shared helpers for the rules: config lookups and target lists.


def trace_names():
    """Traces the configured workloads use."""
    return sorted(config["traces"].get("use", []))


def workload_files():
    """Converted job tables of every trace in use."""
    return [f"results/workloads/{name}/jobs.parquet" for name in trace_names()]
