#!/usr/bin/env bash
# The wind field's GPU checks and measurements, as run on the GPU machine from a gpu-pack'ed tree:
#   bash scripts/bench_wind_gpu.sh OUT_DIR [tests|bench|e2e]...
# tests: the CUDA wind tests (kernels and GPU-vs-CPU); bench: geofield bench wind (GPU rows, R1..R64
# and 512x512x128); e2e: a 20 km x 20 km DEM at 30 m, 40 levels, 10 stations, speed and direction
# GeoTIFFs at 10 m, end to end (`geofield wind`, timed by the shell).
set -uo pipefail
out="$1"; shift
g=.gpu/bin/geofield
export GEOFIELD_REQUIRE_GPU=1
status=0
for step in "$@"; do
  case "$step" in
    tests)
      nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
      for t in .gpu/tests/geofield_cuda-*; do timeout 300 "$t" wind --test-threads=1 || status=1; done
      for t in .gpu/tests/wind_backends-*; do timeout 300 "$t" --test-threads=1 --nocapture || status=1; done ;;
    bench)
      timeout 400 $g bench wind --backend cuda --cpu-max-slow-r 0 --repeats 3 --json "$out/wind_bench.json" || status=1 ;;
    e2e)
      d=$(mktemp -d)
      $g synth terrain --kind gaussian-hill --cols 667 --rows 667 --cell-size-m 30 --height-m 250 \
        --width-m 3000 --out "$d/dem.tif" --stations "$d/st.csv" --station-count 10 --crs 32633
      for i in 1 2 3; do
        s=$(date +%s%N)
        $g wind --backend cuda --dem "$d/dem.tif" --stations "$d/st.csv" --nz 40 --dz-m 10 \
          --height-agl-m 10 --speed-out "$d/speed.tif" --direction-out "$d/dir.tif" -q \
          --json "$out/e2e_$i.json" || status=1
        e=$(date +%s%N)
        echo "e2e run $i: $(( (e - s) / 1000000 )) ms wall"
      done
      rm -rf "$d" ;;
  esac
done
exit $status
