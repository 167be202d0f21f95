#!/usr/bin/env bash
# Download, here, the wheels that scripts/gpu_checks.sh installs on a GPU machine that has torch,
# pytest, rich, jinja2, psutil, nvidia-ml-py and pytest-xdist but no network: the project's other
# dependencies, for CPython 3.12 on x86-64 Linux. They land in .whl/ (add `/.whl/` to
# .git/info/exclude so that they never reach a commit).
set -euo pipefail
cd "$(dirname "$0")/.."
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
    platforms+=(--platform "$p")
done
for package in libcst pathspec unidiff hyperscan github3.py ruamel.yaml ruamel.yaml.clib PyJWT uritemplate; do
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        "${platforms[@]}" -d .whl "$package"
done
ls .whl
