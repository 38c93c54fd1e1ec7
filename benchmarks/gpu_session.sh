#!/usr/bin/env bash
# One device session: everything rigplan measures on a CUDA GPU, in order of value, each step bounded.
#   OUT=/some/dir bash benchmarks/gpu_session.sh            # first part
#   OUT=/some/dir bash benchmarks/gpu_session.sh second     # second part: allocator grid, MoE, LoRA check
#   OUT=/some/dir bash benchmarks/gpu_session.sh third      # third part: five other HF model families
#   OUT=/some/dir bash benchmarks/gpu_session.sh fourth     # per-layer saved bytes of HF modules and peft LoRA
# First part writes OUT/{env.txt,gemm.json,probe.yaml,hf.json,hf_expandable.json,checks.jsonl,log.txt}, the
# second OUT/{grid.json,grid_expandable.json,moe.json,checks.jsonl,log.txt}; recorded in
# docs/measurements/h200-2026-12.md. Needs torch (CUDA build), transformers and, for LoRA, peft.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:?set OUT to an output folder}
log="$OUT/log.txt"
step() { echo "== $* ($(date -u +%T))" | tee -a "$log"; }
if [ "${1:-first}" = fourth ]; then
  step saved
  timeout 120 python3 benchmarks/gpu_session.py saved --out "$OUT/saved.json" >> "$log" 2>&1
  step done
  exit 0
fi
if [ "${1:-first}" = third ]; then
  step families
  timeout 200 python3 benchmarks/gpu_session.py hf --subset families --out "$OUT/families.json" >> "$log" 2>&1
  step done
  exit 0
fi
if [ "${1:-first}" = second ]; then
  step grid
  timeout 180 python3 benchmarks/gpu_session.py hf --subset grid --out "$OUT/grid.json" >> "$log" 2>&1
  step moe
  timeout 60 python3 benchmarks/gpu_session.py hf --subset moe --out "$OUT/moe.json" >> "$log" 2>&1
  step check
  timeout 90 python3 -m rigplan.cli.main check llama-3.1-8b --method lora --precision bf16-true --seq 2048 \
    --micro-batch 4 --device cuda --gpu h200-sxm --steps 4 --calibration docs/measurements/h200-2026-12/probe.yaml \
    --json >> "$OUT/checks.jsonl" 2>> "$log"
  step grid-expandable
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True timeout 180 python3 benchmarks/gpu_session.py hf --subset grid \
    --out "$OUT/grid_expandable.json" >> "$log" 2>&1
  step done
  exit 0
fi
step env
{ nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit,clocks.max.sm --format=csv; python3 -c \
  "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__)"; \
  python3 -c "import peft; print('peft', peft.__version__)"
  # CUDA context as nvidia-smi sees it: after torch's first allocation, then after a cuBLAS bf16 GEMM.
  python3 -c "
import subprocess, torch
used = lambda: subprocess.run(['nvidia-smi', '--query-gpu=memory.used', '--format=csv,noheader,nounits'],
                              capture_output=True, text=True).stdout.strip()
x = torch.zeros(1, device='cuda'); torch.cuda.synchronize(); print('context_mib_after_init', used())
a = torch.randn(4096, 4096, device='cuda', dtype=torch.bfloat16); (a @ a).sum().item()
print('context_mib_after_gemm', used(), 'allocated_mib', torch.cuda.memory_allocated() / 2**20,
      'reserved_mib', torch.cuda.memory_reserved() / 2**20)"; } > "$OUT/env.txt" 2>&1
step gemm
timeout 120 python3 benchmarks/gpu_session.py gemm --out "$OUT/gemm.json" >> "$log" 2>&1
step probe
timeout 120 python3 -m rigplan.cli.main probe --gpu h200-sxm -o "$OUT/probe.yaml" >> "$log" 2>&1
step hf
timeout 240 python3 benchmarks/gpu_session.py hf --out "$OUT/hf.json" >> "$log" 2>&1
step hf-expandable
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True timeout 120 python3 benchmarks/gpu_session.py hf --subset allocator \
  --out "$OUT/hf_expandable.json" >> "$log" 2>&1
step check
calib=()
[ -s "$OUT/probe.yaml" ] && calib=(--calibration "$OUT/probe.yaml")
for args in "llama-3.2-1b --seq 4096 --micro-batch 2" "llama-3.2-1b --seq 4096 --micro-batch 2 --recompute full" \
            "llama-3.2-3b --seq 2048 --micro-batch 2" "llama-3.1-8b --method lora --precision bf16-true --seq 2048 --micro-batch 4"; do
  # shellcheck disable=SC2086
  timeout 90 python3 -m rigplan.cli.main check $args --device cuda --gpu h200-sxm --steps 4 "${calib[@]}" --json \
    >> "$OUT/checks.jsonl" 2>> "$log" || echo "check failed: $args" >> "$log"
done
step done
