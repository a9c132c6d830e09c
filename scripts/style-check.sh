#!/usr/bin/env bash
# Machine-checked rules of the codebase (run by `make test`):
#  - src/core is pure: no I/O, no clock, no environment, no randomness source;
#  - every .c/.h file opens with a comment saying what it is;
#  - files stay under 800 lines;
#  - folders include only the layers below them (docs/development.md, "Layers"), and
#    the front doors (api, maas, portal) see the daemon through ops/ops.h and
#    ops/kinds.h alone.
set -uo pipefail
cd "$(dirname "$0")/.."
fail=0

# strip /* ... */ on one line and // comments, then look for forbidden calls
pure=$(for f in src/core/*.c src/core/*.h; do
         sed -E 's#/\*.*\*/##g; s#//.*##; s#^\s*\*.*##' "$f" | grep -nE '\b(printf|fprintf|puts|fopen|fread|fwrite|open|read|write|close|time|clock_gettime|gettimeofday|getenv|rand|random|srand|sleep|usleep|socket|epoll_[a-z]+|sqlite3_[a-z_]+)\s*\(' \
           | grep -vE 'snprintf' | sed "s#^#$f:#"
       done)
# core's allocations go through lib/alloc (the one policy), and its internals stay inside
core_alloc=$(grep -nE '\b(malloc|calloc|realloc|strdup)\(' src/core/*.c src/core/*.h)
if [[ -n "$core_alloc" ]]; then echo "style: src/core allocates through lib/alloc.h:"; echo "$core_alloc"; fail=1; fi
leak=$(grep -rln '"core/engine_int.h"' src tests bench | grep -v '^src/core/')
if [[ -n "$leak" ]]; then echo "style: core/engine_int.h is core's own:"; echo "$leak"; fail=1; fi

if [[ -n "$pure" ]]; then
  echo "style: src/core must not do I/O or read clocks/environment:"; echo "$pure"; fail=1
fi

for f in $(find src tests/unit -name '*.[ch]'); do
  first=$(grep -m1 -vE '^\s*$' "$f")
  if [[ "$first" != /\** ]]; then echo "style: $f does not open with a comment saying what it is"; fail=1; fi
  n=$(wc -l < "$f")
  if (( n > 800 )); then echo "style: $f has $n lines (limit 800): split it along a seam"; fail=1; fi
done

# The layer picture of docs/development.md: what each folder may include besides itself.
declare -A may=(
  [lib]="" [net]="lib" [core]="lib" [store]="lib" [gpu]="lib core store" [auth]="lib store"
  [run]="lib core store gpu net" [config]="lib core gpu run"
  [fleet]="lib net core store gpu run config"
  [ops]="lib net core store gpu run auth config fleet"
  [api]="lib net core store auth ops" [maas]="lib net core store auth ops"
  [portal]="lib net core store auth ops"
  [daemon]="lib net core store gpu run auth config fleet ops api maas portal"
  [cli]="lib" [sim]="lib core" [shim]="" [cudashim]="gpu"
)
for dir in src/*/; do
  d=$(basename "$dir")
  if [[ -z "${may[$d]+set}" ]]; then echo "style: src/$d is not in the layer table of scripts/style-check.sh"; fail=1; continue; fi
  while IFS=: read -r f inc; do
    to=${inc%%/*}
    [[ "$to" == "$d" ]] && continue
    if [[ " ${may[$d]} " != *" $to "* ]]; then
      echo "style: $f includes $inc: src/$d may include only: ${may[$d]:-nothing}"; fail=1
    fi
    if [[ "$d" =~ ^(api|maas|portal)$ && "$to" == ops && "$inc" != ops/ops.h && "$inc" != ops/kinds.h ]]; then
      echo "style: $f includes $inc: a front door sees the daemon through ops/ops.h and ops/kinds.h only"; fail=1
    fi
  done < <(grep -HoE '^#include "[a-z_]+/[a-z_0-9]+\.h"' "$dir"*.[ch] 2>/dev/null | sed -E 's/#include "(.*)"/\1/')
done

if (( fail )); then exit 1; fi
echo "style: ok"
