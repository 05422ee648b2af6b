#!/usr/bin/env bash
# Run passlab's GPU checks on a machine that has an NVIDIA GPU, CUDA and Python but no
# TVM and no package index (the GPU machine lent to some development sessions; see
# shared/recipes/gpu-host.md). What it needs is carried in .gpu/ (kept out of git):
#   .gpu/a1/, .gpu/a2/             TVM's compiler library, xz-compressed and split in two
#                                  (`split -b 31M -d`: a call carries at most 64 MiB with
#                                  the working tree), each copied to /root/keep by a call
#                                  of its own: `bash benchmarks/gpu_host.sh keep`
#   .gpu/b/*.whl                   apache-tvm-ffi (cp312) and onnx, protobuf, ml_dtypes
#   .gpu/b/tvm_rest.tar.xz         the rest of the apache-tvm wheel's tvm/ package
#   .gpu/b/src.tar.gz              optional: `git archive HEAD passlab benchmarks tests
#                                  pyproject.toml`, to check a commit rather than the tree
# Then `bash benchmarks/gpu_host.sh run` installs them under /tmp/site, runs
# benchmarks/gpu_check.py and the tests marked gpu, and leaves the logs in $OUT.
set -uo pipefail
KEEP=/root/keep
SITE=/tmp/site
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
case "${1:-run}" in
keep)
    mkdir -p "$KEEP" && cp .gpu/a*/libtvm_compiler.so.xz.part* "$KEEP/"
    nvidia-smi -L; python3 --version
    python3 -c "import numpy, torch; print('numpy', numpy.__version__, 'torch', torch.__version__)"
    python3 -c "import pytest; print('pytest', pytest.__version__)" || echo "no pytest"
    python3 -c "import cuda.bindings; print('cuda-bindings ok')" || echo "no cuda-bindings"
    ls -la "$KEEP"
    ;;
run)
    if [ ! -f "$SITE/.ready" ]; then
        start=$(date +%s)
        mkdir -p "$SITE"
        python3 -m pip install -q --no-index --no-deps --target "$SITE" .gpu/b/*.whl || exit 3
        tar -xJf .gpu/b/tvm_rest.tar.xz -C "$SITE" || exit 3
        cat "$KEEP"/libtvm_compiler.so.xz.part* | xz -T0 -dc > "$SITE/tvm/lib/libtvm_compiler.so" || exit 3
        touch "$SITE/.ready"
        echo "TVM installed under $SITE in $(( $(date +%s) - start )) s"
    fi
    src=$PWD
    if [ -f .gpu/b/src.tar.gz ]; then
        src=/tmp/src && rm -rf "$src" && mkdir -p "$src" && tar -xzf .gpu/b/src.tar.gz -C "$src"
    fi
    cd "$src" || exit 3
    export PYTHONPATH="$SITE:$src"
    export LD_LIBRARY_PATH="/usr/local/cuda-13/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
    export PASSLAB_PROGRESS=0
    python3 -c "import tvm; print('tvm', tvm.__version__, 'cuda', tvm.cuda(0).exist)"
    python3 benchmarks/gpu_check.py 2>&1 | tee "$OUT/gpu_check.log" | grep -v "^  "
    check=${PIPESTATUS[0]}
    if python3 -c "import pytest" 2>/dev/null; then
        python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu.py -x \
            -o addopts="" 2>&1 | tee "$OUT/test_gpu.log" | tail -15
    else
        echo "no pytest on this machine: tests/test_gpu.py not run"
    fi
    exit "$check"
    ;;
esac
