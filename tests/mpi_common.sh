# Sourced by the MPI tests (tests/mpi_*.sh) after they set MPIEXEC: a scratch folder $dir, the
# environment and the helpers they share.
# One CPU worker a rank, unbound (up to 4 ranks share this machine's cores); StarPU's models and
# ours in the test's folder; OpenMPI as root, oversubscribed, without cross-memory attach
# (containers often forbid it).
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
export STARPU_SILENT=1 STARPU_NCPU=1 STARPU_NCUDA=0 STARPU_WORKERS_NOBIND=1 STARPU_HOME=$dir FNNDTPS_SAVE=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
fails=0; passed=0
pass() { passed=$((passed + 1)); echo "ok   $*"; }
fail() { fails=$((fails + 1)); echo "FAIL $*"; }
# run RANKS CMD...: one job, its output in $dir/out.txt and $dir/err.txt.
run() { timeout -k 5 120 "$MPIEXEC" -np "$@" >"$dir/out.txt" 2>"$dir/err.txt"; }
# run_slowed CMD...: one job of two ranks, rank 1's worker emulated 2x slower (FNNDTPS_SLOWDOWN
# on that rank only); output as run's.
run_slowed() {
  timeout -k 5 120 "$MPIEXEC" -np 1 "$@" : -np 1 env FNNDTPS_SLOWDOWN=0:2 "$@" >"$dir/out.txt" 2>"$dir/err.txt"
}
# run_slowed3 CMD...: the same over three ranks, the last one (rank 2) slowed. Three ranks on
# this machine's 2 cores: MPI's waits yield the core (OpenMPI spins by default); without it the
# slowed rank's share of gemm-mpi's blocks under dtps spread over 0.02-0.36 in 20 runs, with it
# over 0.14-0.26 in 27.
run_slowed3() {
  OMPI_MCA_mpi_yield_when_idle=1 timeout -k 5 120 "$MPIEXEC" -np 2 "$@" : -np 1 env FNNDTPS_SLOWDOWN=0:2 "$@" \
    >"$dir/out.txt" 2>"$dir/err.txt"
}
# slowed_share WHAT [RANK]: rank RANK's (default 1) share of WHAT (blocks, units), from its line
# "rank RANK: N of M WHAT...".
slowed_share() {
  awk -v what="$1" -v r="${2:-1}:" '$1 == "rank" && $2 == r && $6 ~ "^" what { printf "%.3f", $3 / $5 }' "$dir/out.txt"
}
# within X LO HI: LO <= X <= HI.
within() { awk -v s="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(s >= lo && s <= hi) }'; }
