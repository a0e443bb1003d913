"""Jobs as the simulator reads them: SWF traces, cleaning, the job table, BSP and
submesh properties.
"""
