#!/usr/bin/env bash
# libgpuaas-cuda.so (src/cudashim, issue 20) against the fake driver (tests/fakes/cuda:
# the real libcuda.so.1 cannot exist in CI) and the fake NVML, driven by the test programs
# of tests/cuda: every hooked allocation entry point under and over the limit, frees,
# cuMemGetInfo and NVML reporting the limit, two processes of one pod, fork, a crashed
# process's memory coming back, every way around the hooks a program might try, no region
# (pass through), a bad region, and the compute share at 30 % and 70 %.
source "$(dirname "$0")/lib.sh"
SHIM=$ROOT/build/libgpuaas-cuda.so
P=$ROOT/build/cuda/cuda_probe
for f in "$SHIM" "$P" "$ROOT/build/cuda/cuda_link" "$ROOT/build/fakes/cuda/libcuda.so.1" "$ROOT/build/fakes/nvml/libnvidia-ml.so.1"; do
  [[ -f "$f" ]] || { fail "$f missing: run make cuda fakes"; finish; exit 1; }
done
export LD_LIBRARY_PATH=$ROOT/build/fakes/cuda:$ROOT/build/fakes/nvml
export FAKE_NVML_GPUS=H100-80GB FAKE_CUDA_MEM_MIB=81920
REG=$TMP/cuda-region
export GPUAAS_CUDA_REGION=$REG
# shim CMD...: run under the shim, as the sandbox's /etc/ld.so.preload would
shim() { LD_PRELOAD=$SHIM "$@"; }
field() { grep -o "$1=[0-9.-]*" <<<"$2" | head -1 | cut -d= -f2; }

# Every allocation entry point: 500 MiB under a 1000 MiB limit passes, 501 more is
# refused with CUDA_ERROR_OUT_OF_MEMORY (2) and the process goes on, the free gives the
# bytes back (501 then passes), and nothing is left counted.
for e in cuMemAlloc_v2 cuMemAllocPitch_v2 cuMemAllocManaged cuMemAllocAsync cuMemAllocFromPoolAsync \
         cuMemCreate cuArrayCreate_v2 cuArray3DCreate_v2 cuMipmappedArrayCreate; do
  "$P" mkregion "$REG" 1000
  out=$(shim "$P" entry "$e" 1000 2>&1)
  expect_eq "$e: under the limit passes" "$(field under "$out")" 0
  expect_eq "$e: counted" "$(field used_under "$out")" 500
  expect_eq "$e: over the limit is OUT_OF_MEMORY, the process lives" "$(field over "$out")" 2
  expect_eq "$e: free gives the memory back" "$(field used_freed "$out"),$(field again "$out")" 0,0
  expect_eq "$e: nothing left counted" "$(field used_end "$out")" 0
done
r=$("$P" region "$REG")
expect_eq "refusals are counted in the region" "$(field refused "$r")" 1
expect_eq "peak kept" "$(field peak "$r")" 501

# cuMemCreate on a host location is not GPU memory (HAMi-core #187 read a device from it)
"$P" mkregion "$REG" 1000
out=$(shim "$P" hosttype 5000)
expect_eq "cuMemCreate on a HOST location passes, uncounted" "$out" "host rc=0 used=0 release=0"

# cuMemGetInfo and NVML (both entry points) report the limit and the pod's use
"$P" mkregion "$REG" 1000
out=$(shim "$P" meminfo)
expect_match "cuMemGetInfo_v2 shows the limit" "$out" "cuda rc=0 total=1000 free=900"
expect_match "nvmlDeviceGetMemoryInfo shows the limit" "$out" "nvml rc=0 total=1000 free=900 used=100"
expect_match "nvmlDeviceGetMemoryInfo_v2 shows the limit" "$out" "nvml2 rc=0 total=1000 free=900 used=100"
out=$(GPUAAS_CUDA_REGION= shim "$P" meminfo)
expect_match "no region: the device's own figures" "$out" "cuda rc=0 total=81920 free=81820"

# Two processes of one pod (one region), each after 60 %: the second is refused
"$P" mkregion "$REG" 1000
LD_PRELOAD=$SHIM "$P" hold 600 30 >"$TMP/hold1" &   # not through shim(): $! must be the probe
h1=$!
until_file() { for _ in $(seq 100); do [[ -s "$1" ]] && return 0; sleep 0.1; done; return 1; }
until_file "$TMP/hold1"
expect_eq "first process takes 60 %" "$(cat "$TMP/hold1")" "held rc=0"
expect_eq "second process of the pod is refused its 60 %" "$(shim "$P" hold 600 0)" "held rc=2"
expect_eq "the holder is unharmed" "$(kill -0 $h1 && echo alive)" alive
# crash: SIGKILL the holder; the next allocation finds its slot dead and reaps it
kill -9 $h1; wait $h1 2>/dev/null
expect_eq "after the holder is killed, another process gets the memory" "$(shim "$P" hold 600 0)" "held rc=0"
r=$("$P" region "$REG")
expect_eq "nothing left counted after the crash and reap" "$(field used "$r"),$(field slots "$r")" 0,0

# fork: the child takes a slot of its own and accounts separately; its exit frees its use
"$P" mkregion "$REG" 1000
out=$(shim "$P" fork 300)
expect_match "parent counted" "$out" "parent rc=0 used=300"
expect_match "child counted on top, in its own slot" "$out" "child rc=0 used=600"
expect_match "two slots while both live" "$out" "slots=2"
expect_match "the child's exit gives its use back" "$out" "after child used=300"

# Bypass attempts: every way of finding cuMemAlloc is the hook (1001 MiB over a 1000 limit)
"$P" mkregion "$REG" 1000
out=$(shim "$P" bypass 1001)
for how in gpa2_cuMemAlloc_12000 gpa1_cuMemAlloc_3020 dlsym_default dlsym_handle dlsym_second_handle \
           nested_gpa nested_gpa_v1 gpa2_ptsz_cuMemAllocAsync; do
  expect_match "bypass via $how is hooked" "$out" "$how rc=2"
done
expect_eq "an application linked with -lcuda is hooked" "$(shim "$ROOT/build/cuda/cuda_link" 1001)" "linked rc=2"
out=$(GPUAAS_CUDA_REGION= shim "$P" bypass 1001)
expect_match "no region: everything passes through" "$out" "gpa2_cuMemAlloc_12000 rc=0"
expect_eq "no region: linked application passes through" "$(GPUAAS_CUDA_REGION= shim "$ROOT/build/cuda/cuda_link" 1001)" "linked rc=0"
# the fake's physical limit is still the driver's answer
expect_eq "no region: the physical limit stays the driver's" \
  "$(GPUAAS_CUDA_REGION= FAKE_CUDA_MEM_MIB=500 shim "$P" hold 600 0)" "held rc=2"

# A region of another version: pass through, one clear line on stderr
"$P" mkregion "$REG" 1000 0 1
out=$(shim "$P" hold 1001 0 2>"$TMP/bad.err")
expect_eq "bad region: pass through" "$out" "held rc=0"
expect_match "bad region: says so once" "$(cat "$TMP/bad.err")" "^gpuaas-cuda: .* is not a region this library knows .*no limits kept$"

# Compute share: 200 kernels of 2 ms, all four launch calls in turn
for target in 30 70; do
  "$P" mkregion "$REG" 1000 "$target"
  out=$(FAKE_CUDA_KERNEL_US=2000 shim "$P" share 200)
  got=$(field achieved "$out")
  echo "compute share: target $target %, achieved $got % ($out)"
  r=$("$P" region "$REG")
  echo "  region: $r"
  if awk -v g="$got" -v t="$target" 'BEGIN { exit !(g >= t - 10 && g <= t + 10) }'; then
    ok "compute share $target %: achieved $got % (within 10 points)"
  else
    fail "compute share $target %: achieved $got %"
  fi
  expect_eq "launches counted ($target %)" "$(field launches "$r")" 200
  rb=$(field busy_ms "$r"); rw=$(field window_ms "$r")
  check "the region reports busy and window ($target %)" test "$rb" -gt 0 -a "$rw" -ge "$rb"
done
# Two processes of one pod at 40 %: one clock in the region, so they share the 40 between
# them (each about 20), instead of taking 40 each
"$P" mkregion "$REG" 1000 40
FAKE_CUDA_KERNEL_US=2000 shim "$P" share 100 >"$TMP/share1.out" &
FAKE_CUDA_KERNEL_US=2000 shim "$P" share 100 >"$TMP/share2.out"
wait
g1=$(field achieved "$(cat "$TMP/share1.out")"); g2=$(field achieved "$(cat "$TMP/share2.out")")
sum=$(awk -v a="$g1" -v b="$g2" 'BEGIN { printf "%.1f", a + b }')
echo "compute share of two processes at 40 %: $g1 % + $g2 % = $sum %"
check "two processes share one 40 % between them ($g1 + $g2 = $sum)" awk -v g="$sum" 'BEGIN { exit !(g >= 30 && g <= 50) }'
"$P" mkregion "$REG" 1000 0
out=$(FAKE_CUDA_KERNEL_US=2000 shim "$P" share 200)
got=$(field achieved "$out")
check "no share: launches are not held back ($got %)" awk -v g="$got" 'BEGIN { exit !(g >= 90) }'

finish
