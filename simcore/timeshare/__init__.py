"""Time-sharing of BSP jobs: gang scheduling, spin-block and Flexible CoScheduling.

Frachtenberg, Feitelson, Petrini and Fernandez, "Adaptive Parallel Job Scheduling with
Flexible CoScheduling" (FCS). Jobs follow the BSP job model of `bsp`; `engine` simulates
them in time slices with the progress of every job integrated analytically inside a
slice (`rates`), the Ousterhout matrix and its queue in `matrix`, FCS's process
classification in `fcs`; `scenarios` holds the paper's four synthetic workloads. What
the model decides where the paper is silent, and what it leaves out, is in
docs/timesharing.md.
"""
