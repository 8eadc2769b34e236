#!/bin/bash
# Alternate two builds on the same bench cluster: each round runs every benchmark once per build, with that build's
# own interpreter and scripts, so a change in the machine's load hits both alike. Outputs go to OUT/<script>-<build>-
# <round>.txt; bench/compare_summary.py OUT turns them into ratios against each baseline's median over both builds.
#
#   bench/compare.sh OLD_CHECKOUT OLD_PYTHON NEW_CHECKOUT NEW_PYTHON OUT [ROUNDS]
#   e.g. git worktree add /work/wt-old b16b56d && python3 -m venv /work/wt-old/.venv && (cd /work/wt-old && .venv/bin/pip install .)
set -euo pipefail
old_dir=$1 old_py=$2 new_dir=$3 new_py=$4 out=$5 rounds=${6:-3}
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for build in old new; do
    if [ "$build" = old ]; then py=$old_py dir=$old_dir; else py=$new_py dir=$new_dir; fi
    for s in scan diagnose salvage carve unload; do
      extra=(); [ "$s" = carve ] && extra=(--repeat 1)
      echo "round $r $build $s $(date +%T)" >> "$out/log"
      (cd "$dir" && PATH="$(dirname "$py"):$PATH" "$py" "bench/$s.py" "${extra[@]}") > "$out/$s-$build-$r.txt" 2>&1
    done
  done
done
