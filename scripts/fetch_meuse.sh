#!/usr/bin/env bash
# Fetches the Meuse samples (R sp's meuse, GPL; not stored in this repository) for the kriging
# parity tests, from the scikit-gstat wheel on PyPI, and prints the path of meuse.txt.
#
#   MEUSE=$(bash scripts/fetch_meuse.sh CACHE_DIR)
#   GEOFIELD_MEUSE="$MEUSE" cargo test -p geofield kriging
#
# The wheel is downloaded (not installed) with `pip download --no-deps`; only
# skgstat/data/samples/meuse.txt is extracted, to CACHE_DIR/meuse.txt, and its sha256 is checked
# against the one that crates/geofield/tests/data/kriging_peers.json records. A cached file with
# the right sha256 is reused without any download. Needs python3 with pip (no other package).
set -euo pipefail

SKGSTAT_VERSION=1.0.26
SHA256=b27776bc1cad63c4bf308923c86a5a76a0a02566ac75984b018df2a477b52f64
MEMBER=skgstat/data/samples/meuse.txt

if [ $# -ne 1 ]; then
  echo "usage: $0 CACHE_DIR   (prints the path of meuse.txt)" >&2
  exit 2
fi
cache=$1
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
out="$cache/meuse.txt"

sha_of() { python3 -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1"; }

if [ -f "$out" ] && [ "$(sha_of "$out")" = "$SHA256" ]; then
  echo "$out"
  exit 0
fi

wheels="$cache/wheel"
mkdir -p "$wheels"
python3 -m pip download --quiet --no-deps --only-binary :all: \
  "scikit-gstat==$SKGSTAT_VERSION" -d "$wheels" >&2
wheel=$(ls "$wheels"/scikit_gstat-"$SKGSTAT_VERSION"-*.whl | head -n 1)
python3 - "$wheel" "$MEMBER" "$out.tmp" <<'PY'
import sys, zipfile
wheel, member, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, open(dest, "wb") as f:
    f.write(z.read(member))
PY
got=$(sha_of "$out.tmp")
if [ "$got" != "$SHA256" ]; then
  rm -f "$out.tmp"
  echo "$0: $MEMBER in $(basename "$wheel") has sha256 $got, expected $SHA256" >&2
  exit 1
fi
mv "$out.tmp" "$out"
rm -rf "$wheels"
echo "$out"
