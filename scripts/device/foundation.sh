#!/usr/bin/env bash
# Foundation on the GPU machine: devices, conformance of every kernel, geodesic-prep table.
. "$(dirname "$0")/common.sh"
$B devices
$B devices --json > "$OUT/devices.json"
$B check --backend all --seed 7
$B reproduce geodesic-prep --backend all --scale paper --repeats 5 --out "$OUT/repro"
