#!/usr/bin/env bash
# Machine-checked rules of the codebase (run by `make test`):
#  - src/core is pure: no I/O, no clock, no environment, no randomness source;
#  - every .c/.h file opens with a comment saying what it is;
#  - files stay under 1,500 lines.
set -uo pipefail
cd "$(dirname "$0")/.."
fail=0

# strip /* ... */ on one line and // comments, then look for forbidden calls
pure=$(for f in src/core/*.c src/core/*.h; do
         sed -E 's#/\*.*\*/##g; s#//.*##; s#^\s*\*.*##' "$f" | grep -nE '\b(printf|fprintf|puts|fopen|fread|fwrite|open|read|write|close|time|clock_gettime|gettimeofday|getenv|rand|random|srand|sleep|usleep|socket|epoll_[a-z]+|sqlite3_[a-z_]+)\s*\(' \
           | grep -vE 'snprintf' | sed "s#^#$f:#"
       done)
if [[ -n "$pure" ]]; then
  echo "style: src/core must not do I/O or read clocks/environment:"; echo "$pure"; fail=1
fi

for f in $(find src tests/unit -name '*.[ch]'); do
  first=$(grep -m1 -vE '^\s*$' "$f")
  if [[ "$first" != /\** ]]; then echo "style: $f does not open with a comment saying what it is"; fail=1; fi
  n=$(wc -l < "$f")
  if (( n > 1500 )); then echo "style: $f has $n lines (limit 1500): split it"; fail=1; fi
done

if (( fail )); then exit 1; fi
echo "style: ok"
