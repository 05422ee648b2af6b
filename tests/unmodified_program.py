"""A program that knows nothing of passlab's recorder: two builds through TVM's own entry
points, one line on stdout, exit status 3. test_autorecord and test_wheel run it
unmodified under `passlab record` and PASSLAB_TRACE."""

import sys

import tvm
from tvm import relax

import passlab

mod = passlab.models.mlp()
relax.build(mod, "llvm")
tvm.compile(mod, target="llvm")
print("built twice")
sys.exit(3)
