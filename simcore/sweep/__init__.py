"""The sweep: experiments from the configuration, shards of runs, the result store,
planning and timing.
"""
