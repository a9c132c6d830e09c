#!/usr/bin/env bash
# Conformance scenarios: replay every tests/scenarios/*.yaml with
# `$GPUAAS_BIN sim scenario` and diff the output against NAME.expected.
# Prints "ok NAME" / "FAIL NAME" per scenario; exits non-zero on any failure.
# Usage: GPUAAS_BIN=build/gpuaas tests/integration/scenarios.sh [NAME...]
set -u
here=$(cd "$(dirname "$0")/../scenarios" && pwd)
bin=${GPUAAS_BIN:-$(cd "$here/../.." && pwd)/build/gpuaas}
if [ ! -x "$bin" ]; then echo "scenarios.sh: GPUAAS_BIN ($bin) is not an executable" >&2; exit 2; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
if [ $# -gt 0 ]; then names=("$@"); else names=(); for f in "$here"/*.yaml; do names+=("$(basename "$f" .yaml)"); done; fi
for name in "${names[@]}"; do
    y="$here/$name.yaml" exp="$here/$name.expected"
    n=$((n + 1))
    if [ ! -f "$exp" ]; then echo "FAIL $name (no $name.expected)"; fail=1; continue; fi
    if ! "$bin" sim scenario "$y" >"$tmp/out" 2>"$tmp/err"; then
        echo "FAIL $name (exit status $?)"; sed 's/^/    /' "$tmp/err"; fail=1; continue
    fi
    # determinism: a second run must be byte for byte identical
    "$bin" sim scenario "$y" >"$tmp/out2" 2>/dev/null
    if ! cmp -s "$tmp/out" "$tmp/out2"; then echo "FAIL $name (output differs between two runs)"; fail=1; continue; fi
    if diff -u "$exp" "$tmp/out" >"$tmp/diff"; then echo "ok $name"
    else echo "FAIL $name"; sed 's/^/    /' "$tmp/diff"; fail=1; fi
done
# Kueue's own documentation examples (tests/scenarios/kueue-examples) must load:
# setups alone, Jobs on top of the quick-start setup (they use its LocalQueue).
ex="$here/kueue-examples"
if [ $# -eq 0 ] && [ -d "$ex" ]; then
    for f in "$ex"/*.yaml; do
        name="kueue-example $(basename "$f" .yaml)"
        n=$((n + 1))
        args=("$f")
        grep -q '^kind: Job' "$f" && args=("$ex/quick-start-setup.yaml" "$f")
        if "$bin" sim scenario "${args[@]}" >"$tmp/out" 2>"$tmp/err" && grep -q '"summary"' "$tmp/out"; then echo "ok $name"
        else echo "FAIL $name"; sed 's/^/    /' "$tmp/err"; fail=1; fi
    done
fi
echo "# $n scenarios, $([ $fail = 0 ] && echo all passed || echo some failed)"
exit $fail
