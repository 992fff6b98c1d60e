# Source this file (`source scripts/mpi_env.sh`) to build and run geofield with MPI (cargo
# feature `mpi`): it installs MPICH and libclang (for the MPI bindings) from their wheels on the
# Python package index into a virtual environment the first time, then exports what cargo and
# mpiexec need. Then: cargo build --release -p geofield-cli --features mpi
#                    mpiexec -n 2 target/release/geofield forest ... --replicates 8
geofield_mpi_dir="${GEOFIELD_MPI_DIR:-${TMPDIR:-/tmp}/geofield-mpi}"
if [ ! -x "$geofield_mpi_dir/bin/mpicc" ]; then
  python3 -m venv "$geofield_mpi_dir" &&
    "$geofield_mpi_dir/bin/python" -m pip install -q --disable-pip-version-check \
      "mpich>=4.2,<6" "libclang>=16,<19" ||
    { echo "mpi_env.sh: could not install mpich and libclang into $geofield_mpi_dir" >&2; return 1 2>/dev/null || exit 1; }
fi
export PATH="$geofield_mpi_dir/bin:$PATH"
export MPICC="$geofield_mpi_dir/bin/mpicc"
export LIBCLANG_PATH="$(dirname "$(find "$geofield_mpi_dir" -name 'libclang.so*' | head -1)")"
export LD_LIBRARY_PATH="$geofield_mpi_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
