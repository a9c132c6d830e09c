#!/usr/bin/env bash
# bench/cuda_launch.sh: the launch-path overhead of libgpuaas-cuda.so (bench/cuda_launch.c)
# against the fake driver (tests/fakes/cuda); on a GPU machine, run build/bench-cuda-launch
# without the fake on the library path to measure the real driver.
set -uo pipefail
cd "$(dirname "$0")/.."
[[ -x build/bench-cuda-launch ]] || { echo "build/bench-cuda-launch missing: make cuda"; exit 1; }
LD_LIBRARY_PATH=$PWD/build/fakes/cuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} build/bench-cuda-launch "${CUDA_LAUNCHES:-1000000}"
