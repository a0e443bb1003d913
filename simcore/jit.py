"""How simulation kernels are compiled.

`kernel` compiles without numba's runtime (NRT): the arrays a simulation touches are all
allocated by the Python caller and outlive the run, so the kernels never allocate and need
no reference counting. With the runtime, every call that receives the state namedtuple
increments and decrements the reference count of each of its arrays atomically, which was
most of the run time of a simulation. A kernel therefore must not create arrays (views and
scalars are fine; scratch space lives in the simulation state).
"""

from __future__ import annotations

from numba import njit

kernel = njit(cache=True, nogil=True, _nrt=False)
