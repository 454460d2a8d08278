#!/usr/bin/env bash
# Issue 22's efficiency measurement on the device machine's 16 cores, in rounds (the hosts lent
# are noisy): the CPU 4pCF (5 bins, rmin 1, rmax 33, spatial hub order) of the N = 10^6 benchmark
# catalogue as 1 rank x 16 threads (a plain process, then one rank under `mpirun -n 1`) and as
# 16 ranks x 1 thread (each bound to one logical CPU, with ALMAGEST_SPLIT_TRACE), outputs
# compared bit for bit (BIND=none|core|hwthread: the 16 ranks' binding, default hwthread); first the launch cost of mpirun alone (`almagest-cli --version`). Needs
# .device-libs/mpi22 from tests/bench/mpi_device_libs.sh (carried, or unpacked from
# .device-pack/mpi22.tgz). Usage: bash tests/bench/mpi_efficiency_device.sh [rounds (default 3)]
set -u
source "$(dirname "${BASH_SOURCE[0]}")/mpi_device_env.sh"
# mpirun's own start on these hosts: hwloc's GPU plugins (OpenCL, CUDA, NVML) initialise the
# NVIDIA driver while mpirun discovers the topology (0.3 s; tests/bench/mpi_launch_device.sh).
# HWLOC=default keeps them.
if [ "${HWLOC:-tuned}" = tuned ] && [ -z "${HWLOC_COMPONENTS:-}" ]; then
  launch_default=$( { TIMEFORMAT="%R"; time mpirun -n "${K:-16}" --use-hwthread-cpus --bind-to hwthread almagest-cli --version > /dev/null; } 2>&1 )
  export HWLOC_COMPONENTS=-opencl,-cuda,-nvml,-gl
  echo "HWLOC_COMPONENTS=$HWLOC_COMPONENTS (mpirun -n ${K:-16} almagest-cli --version without it: $launch_default s)"
fi
rounds=${1:-3}
w=/tmp/mpi22
mkdir -p "$w"
cd "$w" || exit 1
# N and K (default 10^6 points, 16 ranks / threads) only for trying the script on a small machine.
K=${K:-16}
bench_npcf_loadbalance --catalogue bench --n "${N:-1000000}" --write-catalogues "$w" --write-only
for t in "$K" 1; do
  printf 'data = "gal.txt"\nrandoms = "ran.txt"\nrmin = 1\nrmax = 33\nnbins = 5\nstat = "4pcf"\nthreads = %d\nhub-order = "spatial"\noutput = "out%d.h5"\n' "$t" "$t" > "job$t.toml"
done
cp "job$K.toml" job16.toml 2> /dev/null
sed -i "s/out$K.h5/out16.h5/" job16.toml
TIMEFORMAT="%R"
date -u
grep -m1 'model name' /proc/cpuinfo
plain=$( { time almagest-cli --version > /dev/null; } 2>&1 )
launch=$( { time mpirun -n "$K" --use-hwthread-cpus --bind-to hwthread almagest-cli --version > /dev/null; } 2>&1 )
echo "launch: plain $plain s; mpirun -n $K $launch s"
TIMEFORMAT="%R %U %S"
# One run: its wall, user and system seconds (the ranks' own under mpirun) into $last.
run() {
  last=$( { time "$@"; } 2>&1 > /dev/null | tail -1 )
}
plain_job() { almagest-cli run job16.toml --force > o16.txt 2>&1; }
one_rank() { mpirun -n 1 --bind-to none almagest-cli run job16.toml --force > o16m.txt 2>&1; }
ranks() {  # (in a subshell: the epoch times go through a file)
  local t0 t1
  t0=$(date +%s.%N)
  mpirun -n "$K" --use-hwthread-cpus --bind-to "${BIND:-hwthread}" -x ALMAGEST_SPLIT_TRACE=1 almagest-cli run job1.toml --force > o1.txt 2>&1
  t1=$(date +%s.%N)
  echo "$t0 $t1" > ranks_epoch.txt
}
# ALT="mpirun options": a fourth run per round, 16 x 1 with these instead of --bind-to (o1alt.txt).
ranks_alt() { mpirun -n "$K" --use-hwthread-cpus $ALT almagest-cli run job1.toml --force > o1alt.txt 2>&1; }
# ALT1="VAR=value ...": a fifth run per round, the plain 16-thread process with this environment.
plain_alt() { env $ALT1 almagest-cli run job16.toml --force > o16alt.txt 2>&1; }
sums=""
for round in $(seq 1 "$rounds"); do
  # The order alternates between rounds (a host that slows under sustained load favours no run).
  if [ $((round % 2)) = 1 ]; then order="a b c d e"; else order="e d c b a"; fi
  a="" b="" c="" d="" e=""
  for k in $order; do
    case $k in
      a) run plain_job; a=$last ;;
      b) run one_rank; b=$last ;;
      c) run ranks; c=$last ;;
      d) if [ -n "${ALT:-}" ]; then run ranks_alt; d=$last; fi ;;
      e) if [ -n "${ALT1:-}" ]; then run plain_alt; e=$last; fi ;;
    esac
  done
  wa=${a%% *} wb=${b%% *} wc=${c%% *} wd=${d%% *}
  read -r s0 s1 < ranks_epoch.txt
  echo "round $round ($order): wall, user, sys s: 1x16 plain $a; 1x16 under mpirun -n 1 $b; 16x1 (--bind-to ${BIND:-hwthread}) $c${ALT:+; 16x1 ($ALT) $d}; efficiency $(awk -v x="$wa" -v y="$wc" 'BEGIN{printf "%.3f", x/y}') (plain), $(awk -v x="$wb" -v y="$wc" 'BEGIN{printf "%.3f", x/y}') (mpirun -n 1)${ALT:+, $(awk -v x="$wa" -v y="$wd" 'BEGIN{printf "%.3f", x/y}') (plain, $ALT)}${ALT1:+; 1x16 ($ALT1) $e}"
  sums="$sums $wa $wb $wc ${wd:-0}"
  grep -h "graph edges" o16.txt o16m.txt o1.txt
  [ -n "${ALT1:-}" ] && grep -h "graph edges" o16alt.txt | sed "s/^/  ($ALT1) /"
  # The 16 ranks' timeline from the trace's epoch times (mpi.cpp, split.cpp): mpirun to the first
  # rank's session, MPI_Init, the member's run, rank 0's output and MPI_Finalize, mpirun's exit.
  awk -v s0="$s0" -v s1="$s1" '
    /^mpi rank/ { for (i = 1; i <= NF; ++i) { if ($i == "at") e = $(i + 1) + 0; if ($i == "MPI_Init") init = $(i + 1) + 0;
                    if ($i == "MPI_Finalize") { f = $(i + 2) + 0; sub(",", "", $(i + 2)); fd = $(i + 3) + 0 } }
                  if (n == 0 || e < emin) emin = e; if (e > emax) emax = e; if (init > imax) imax = init; if (init + e > idone) idone = init + e;
                  if (f + fd > fend) fend = f + fd; if (fmin == 0 || f < fmin) fmin = f; ++n }
    /^split rank/ { for (i = 1; i <= NF; ++i) { if ($i == "from") { a = $(i + 1) + 0; z = $(i + 3) + 0 }
                    if ($i == "counting") cs += $(i + 1); if ($i == "lists") ts += $(i + 1) }
                    if (m == 0 || a < amin) amin = a; if (a > amax) amax = a; if (z > zmax) zmax = z; if (zmin == 0 || z < zmin) zmin = z; ++m }
    END { if (n && m) printf "  timeline (s after mpirun began): sessions entered %.3f-%.3f, MPI_Init done by %.3f (longest %.3f), member runs %.3f-%.3f to %.3f-%.3f, MPI_Finalize %.3f-%.3f, mpirun exits %.3f; ranks counting %.2f s in all, %.2f of it taken chunks'"'"' lists\n",
            emin - s0, emax - s0, idone - s0, imax, amin - s0, amax - s0, zmin - s0, zmax - s0, fmin - s0, fend - s0, s1 - s0, cs, ts }' o1.txt
  grep -h "split over" o1.txt
  grep -h "split rank 0/" o1.txt
done
echo "$sums" | awk -v r="$rounds" '{ for (k = 0; k < r; ++k) { a = $(4 * k + 1); b = $(4 * k + 2); c = $(4 * k + 3); d = $(4 * k + 4);
    ep += a / c; em += b / c; if (d > 0) { ed += a / d; nd++ } }
  printf "mean efficiency over %d rounds: %.3f against the plain 16-thread process, %.3f against mpirun -n 1", r, ep / r, em / r
  if (nd) printf ", %.3f with the fourth run'"'"'s options", ed / nd; printf "\n" }'
bench_npcf_loadbalance --compare out16.h5 out1.h5
