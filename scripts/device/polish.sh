#!/usr/bin/env bash
# Issue 11 on the GPU machine, from the repo root with a release binary: the check rows whose
# tolerances this branch tightened (bedpost_chain at 2.5 % diverged, CPU dti_scalars against
# float64 invariants, CPU geodesic trace against exact lines) on every device; a quick-scale
# reproduce of the tables whose plots changed (geodesic-t1, geodesic-f7, geodesic-prep) with
# their PNGs copied to $OUT to look at; compare of that run with a copy relabelled paper scale
# (must warn); and bench geodesic's progress lines. ~2 minutes.
. "$(dirname "$0")/common.sh"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

echo "--- check --backend all (tightened rows marked)"
$B check --backend all --seed 11 | tee "$OUT/check.txt" | grep -E "bedpost_chain|dti_scalars|geodesic_trace|passed"
echo "--- reproduce geodesic-t1 geodesic-f7 geodesic-prep, quick scale"
$B reproduce geodesic-t1 geodesic-f7 geodesic-prep --scale quick --repeats 1 --out "$W/r" > /dev/null 2> "$W/err"; echo "exit $?"
tail -3 "$W/err"
cp "$W"/r/*.png "$W"/r/*.csv "$OUT/" 2>/dev/null
echo "--- compare with a paper-labelled copy (expect a scale warning, rows labelled by machine)"
sed 's/,quick,/,paper,/' "$W/r/geodesic-prep.csv" > "$W/paper.csv"
$B compare "$W/r/geodesic-prep.csv" "$W/paper.csv" --out "$W/c" 2>&1 | head -3
cp "$W/c/compare.png" "$OUT/compare.png" 2>/dev/null
cut -d, -f1-4,22- "$W/c/compare.csv" | head -4
echo "--- bench geodesic progress (small)"
$B bench geodesic --fibres 65536 --cpu-fibres 4096 --steps 200 --repeats 1 2>&1 | tee "$OUT/bench-geodesic.txt" | head -20
