#!/usr/bin/env bash
# The checks CI cannot run, on a machine with an NVIDIA GPU and the wheels of
# scripts/gpu_wheels.sh in .whl/: campaign verdicts against the naive truth on a CUDA
# mixed-precision project (tests/injector/test_differential_cuda.py), triage on CUDA errors that
# torch's CUDA build raises and on real NVML readings (tests/triage/test_triage_cuda.py), and the
# fp16 GradScaler guard. Writes the pytest log to ${OUT:-.}/gpu_tests.log.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
timeout "${GPU_CHECKS_TIMEOUT:-540}" python3 -m pytest -q -p no:cacheprovider -p no:warnings -n 3 --dist loadfile \
    -rA --durations=10 \
    tests/injector/test_differential_cuda.py tests/triage/test_triage_cuda.py \
    "tests/injector/test_guards_processes.py::test_fp16_autocast_needs_the_scaler" 2>&1 | tee "${OUT:-.}/gpu_tests.log"
