#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ (built by `make fuzz-build` into build/fuzz/bin/).
# Usage: fuzz/run.sh SECONDS [TARGET...]   (TARGET: yaml, http, ...; default: all)
# Each target starts from its seed corpus (fuzz/corpus/TARGET/) and replays its
# regression inputs (fuzz/regressions/TARGET/); both are read only: new inputs go to a
# temporary folder, so the repository is never modified. A finding stops that target;
# its input is kept under build/fuzz/findings/TARGET/ (copy it to fuzz/regressions/TARGET/
# once fixed). Prints each target's executions from libFuzzer's final stats, then
# "fuzz: N passed, M failed"; exits 1 when any target failed.
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${1:?usage: fuzz/run.sh SECONDS [TARGET...]}
shift
bin=build/fuzz/bin
if (( $# )); then targets=("$@"); else
  targets=()
  for f in fuzz/fuzz_*.c; do t=${f#fuzz/fuzz_}; targets+=("${t%.c}"); done
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 failed=0 total=0
for t in "${targets[@]}"; do
  exe=$bin/fuzz_$t
  if [[ ! -x $exe ]]; then echo "fuzz: $exe is not built (make fuzz-build)"; failed=$((failed + 1)); continue; fi
  mkdir -p "$tmp/$t" "build/fuzz/findings/$t"
  dirs=("$tmp/$t")  # the first folder is where libFuzzer writes: the temporary one
  for d in "fuzz/corpus/$t" "fuzz/regressions/$t"; do [[ -d $d ]] && dirs+=("$d"); done
  log=build/fuzz/findings/$t/last.log
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
    "$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="build/fuzz/findings/$t/" "${dirs[@]}" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1)
  if (( rc == 0 )); then
    pass=$((pass + 1)); total=$((total + ${execs:-0}))
    printf 'fuzz: %-10s %9s executions in %ss (%s)\n' "$t" "${execs:-?}" "$secs" "${cov:-cov: ?}"
  else
    failed=$((failed + 1))
    echo "fuzz: $t FAILED (exit $rc); log: $log"
    grep -E 'ERROR|property failed|SUMMARY|Test unit written' "$log" | head -8 | sed 's/^/  /'
  fi
done
echo "fuzz: $total executions in all"
echo "fuzz: $pass passed, $failed failed"
(( failed == 0 ))
