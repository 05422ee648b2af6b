"""The user pass of notebooks/08-sweep.ipynb.

A sweep builds in other processes, which import each user pass by module and name: so
the pass lives in this file, next to the notebook, not in a notebook cell.
"""

from __future__ import annotations

from tvm import relax


def fuse_conservatively(mod):
    """FuseOps at fuse_opt_level 0 instead of the pass context's level: fewer operators
    fuse into one kernel, so more kernels and more temporaries between them."""
    return relax.transform.FuseOps(fuse_opt_level=0)(mod)
