#!/usr/bin/env bash
# Device measurements for issue 13 section 5. Run from the repo root: bash .gpu-perf/perf.sh [phase]
set -u
R=$(pwd); B=$R/.gpu-perf/bin/geofield; CT=$R/.gpu-perf/bin/compile_times
export GEOFIELD_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
W=/tmp/w; mkdir -p $W; cd $W
$B synth wells --wells 500 --surfaces 1 --extent 0,0,1000,1000 --out wells.csv >/dev/null
$B synth forest --trees 2000 --extent 0,0,1000,1000 --out stand.csv --species-out species.toml >/dev/null
$B synth terrain --kind gaussian-hill --out dem.tif --stations st.csv >/dev/null
python3 -c "
import numpy as np; r=np.random.default_rng(1); np.save('pts.npy', r.uniform(0,1000,(1000000,2)))"
KR="$B krige --samples wells.csv --values s01 --model exponential --sill 1 --range 300 --extent 0,0,1000,1000 --cell-size-m 1 --out k.tif --backend cuda"
declare -A CMD
CMD[krige]="$KR"
CMD[krige_var]="$KR --variance v.tif"
CMD[krige_var_f64]="$KR --variance v.tif --precision f64"
CMD[krige_local]="$KR --neighbors 32"
CMD[disperse]="$B disperse --trees stand.csv --species species.toml --extent 0,0,1000,1000 --cell-size-m 1 --out d.tif --backend cuda --method exact"
CMD[knn]="$B knn --points pts.npy --k 8 --out nn.npy --backend cuda"
CMD[flock]="$B flock --agents 100000 --steps 10 --backend cuda"
CMD[wind]="$B wind --dem dem.tif --stations st.csv --out w.nc --backend cuda"
now() { date +%s.%N; }
phase=${1:-all}
if [ "$phase" = all ] || [ "$phase" = compile ]; then
  echo "== whole-module NVRTC compile (what the first run paid before: one module per capability)"
  for i in 1 2; do $CT sm_90 kriging dispersal grid neighbors flock wind; done
  echo "== first run (fresh kernel cache) vs warm, wall seconds per command"
  for c in krige krige_var krige_local disperse knn flock wind; do
    for i in 1 2 3; do
      d=$(mktemp -d); t0=$(now); XDG_CACHE_HOME=$d ${CMD[$c]} > $W/out_$c.txt 2>&1; rc=$?; t1=$(now)
      t2=$(now); XDG_CACHE_HOME=$d ${CMD[$c]} > $W/outw_$c.txt 2>&1; t3=$(now)
      echo "$c rc=$rc fresh $(awk "BEGIN{print $t1 - $t0}") warm $(awk "BEGIN{print $t3 - $t2}") cache_files $(ls $d/geofield | wc -l)"
      rm -rf $d
    done
    grep -i "compiling" $W/out_$c.txt | head -1 | cut -c1-300
    tail -2 $W/outw_$c.txt
  done
fi
if [ "$phase" = all ] || [ "$phase" = krige ]; then
  echo "== krige grid evaluation (warm cache), seconds_grid from --json"
  d=$(mktemp -d)
  for c in krige krige_var krige_var_f64 krige_local; do
    for i in 1 2 3 4; do XDG_CACHE_HOME=$d ${CMD[$c]} --json $W/k.json > /dev/null 2>&1; python3 -c "
import json; j=json.load(open('$W/k.json')); print('$c', {k: v for k, v in j.items() if 'second' in k or 'device' in k})"; done
  done
fi
if [ "$phase" = all ] || [ "$phase" = knncpu ]; then
  echo "== knn on the CPU, 1e6 uniform points, k = 8: index uniform / dynamic / auto (wall s, 3 runs)"
  for ix in uniform dynamic auto; do
    for i in 1 2 3; do $B knn --points pts.npy --k 8 --out nn.npy --backend cpu --index $ix 2>&1 | tail -1; done
  done
fi
if [ "$phase" = all ] || [ "$phase" = bench ]; then
  echo "== bench kriging, large case n = 500 (krige_grid_with: the path geofield krige takes)"
  XDG_CACHE_HOME=/tmp/benchcache $B bench kriging --backend cuda --cases large --large-n 500 --gpu-only --repeats 5 2>&1 | tail -12
fi
