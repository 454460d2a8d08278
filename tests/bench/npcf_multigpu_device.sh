#!/bin/bash
# Several-GPU run on the device machine (issue 6): GPU status, self-test with every GPU visible,
# the CLI's cuda backend against its cpu backend on the demo catalogue, and the scaling benchmark.
# Binaries are built here and carried in .device-libs/mg; results go to $OUT.
set -u
B=.device-libs/mg
OUT=${OUT:-/tmp/mg-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=.device-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ALMAGEST_CUDA_MODULE=$PWD/$B/libalmagest_cuda.so
nvidia-smi --query-gpu=index,name,clocks.sm,memory.total --format=csv | tee "$OUT/gpu.txt"
$B/almagest-cli info | tee "$OUT/info.txt"
timeout 90 $B/almagest-cli selftest --quick > "$OUT/selftest.txt" 2>&1; echo "selftest rc=$?"
grep -v '^PASS' "$OUT/selftest.txt" | tail -n 5
for be in cpu cuda; do
  timeout 60 $B/almagest-cli npcf --stat 2pcf,3pcf,4pcf-parity --data resources/demo/data.txt \
    --randoms resources/demo/randoms.txt --rmin 1 --rmax 20 --nbins 4 --backend $be \
    --format gramsci -o "$OUT/demo_$be.txt" --quiet; echo "cli $be rc=$?"
done
python3 - "$OUT" <<'PY'
import sys, numpy as np
out = sys.argv[1]
for s in ("2pcf", "3pcf", "4pcf-parity"):
    a = np.loadtxt(f"{out}/demo_cpu_{s}.txt", comments="#")
    b = np.loadtxt(f"{out}/demo_cuda_{s}.txt", comments="#")
    scale = np.maximum(np.abs(a).max(axis=0), 1e-300)
    rel = (np.abs(a - b) / scale).max()
    print(f"cli {s}: rows {a.shape[0]} vs {b.shape[0]}, max columnwise relative difference {rel:.2e}",
          "OK" if a.shape == b.shape and rel < 1e-12 else "DIFFER")
PY
grep -m3 -i 'backend\|device' "$OUT/demo_cuda_4pcf-parity.txt"
timeout 200 $B/bench_npcf_multigpu --n 1000000 --reps ${MG_REPS:-2} --stat ${MG_STATS:-4pcf,4pcf-parity,3pcf} | tee "$OUT/multigpu.md"
echo "multigpu rc=${PIPESTATUS[0]}"
# The same with the graph resident on every device between calls (NpcfPlan's way): the per-call
# upload that limited the efficiency above is paid once, by the warm-up call.
timeout 200 $B/bench_npcf_multigpu --n 1000000 --reps ${MG_REPS:-2} --stat ${MG_STATS:-4pcf,4pcf-parity,3pcf} --resident | tee "$OUT/multigpu_resident.md"
echo "multigpu resident rc=${PIPESTATUS[0]}"
