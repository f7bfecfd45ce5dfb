#!/usr/bin/env bash
# The checks to run on a machine with an NVIDIA GPU, in one go (MAINTAINERS, "CUDA"): versions, a smoke test,
# bench_gpu.py, the CUDA tests on the GPU, and 32_cuda_ops's cells (its `#| cuda` cell included).
# Each step has its own time limit and its own log under $OUT (default gpu-check/), so a failing step does not
# hide the others. Uses the machine's python3 with numba-cuda; packages it lacks travel as wheels in .whl/
# (fastcore; and NumPy 2.4, where numba-cuda 0.30 fails with NumPy 2.5: it has no np.row_stack).
#     bash tools/bench/gpu_check.sh
set -u
out=${OUT:-gpu-check}
mkdir -p "$out"
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} NUMBA_ENABLE_CUDASIM=0 PYTHONUNBUFFERED=1 MPLBACKEND=Agg

step() {  # step NAME SECONDS COMMAND...: run COMMAND with a time limit, its output in $out/NAME.log
    local name=$1 limit=$2 started=$SECONDS
    shift 2
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    echo "== $name: exit $? after $((SECONDS - started)) s (limit $limit s)"
    tail -n "${TAIL:-30}" "$out/$name.log"
}

step versions 60 bash -c 'nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc;
    python3 -c "import sys, numpy, numba, torch; print(sys.version.split()[0], numpy.__version__, numba.__version__, torch.__version__)";
    python3 -m pip list 2>/dev/null | grep -i -E "^(numba|numba-cuda|llvmlite|cuda-bindings|hypothesis|pytest|pytest-xdist) "'
step smoke 60 python3 -c '
import minitorch
gpu = minitorch.backend("cuda")
a = minitorch.rand((33, 17), backend=gpu, seed=1)
b = minitorch.rand((17, 9), backend=gpu, seed=2)
host = a.to_numpy() @ b.to_numpy()
print("matmul on the GPU matches NumPy:", abs((a @ b).to_numpy() - host).max() < 1e-12)'
step bench 240 python3 tools/bench/bench_gpu.py --min-seconds 0.2
parallel=$(python3 -c "import xdist, pytest_timeout" 2>/dev/null && echo "-n 12 --timeout 150")
step tests 200 python3 -m pytest -q $parallel -k cuda --maxfail 25 -p no:cacheprovider -p no:benchmark tests \
    --ignore tests/test_course_tools.py --ignore tests/test_exercises.py --ignore tests/test_nbtest.py  # need nbformat
step notebook 45 python3 -c '
import json, sys
cells = [c["source"] for c in json.load(open("nbs/32_cuda_ops.ipynb"))["cells"] if c["cell_type"] == "code"]
scope = {"display": print, "show_doc": lambda *args, **kwargs: None}
for number, cell in enumerate(cells):
    source = "".join(cell)
    if "#| eval: false" in source or "#| notest" in source:
        continue
    source = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))
                       and "nbdev" not in line)
    print(f"-- cell {number}", flush=True)
    exec(compile(source, f"32_cuda_ops cell {number}", "exec"), scope)'
