"""PyTorch SDPA's flash backend against its cuDNN backend in a whole training step: rigplan beside NVIDIA's
Llama-3.2-1B training benchmark on one B200 and one H200.

NVIDIA/cudnn-frontend benchmark/Llama-3.2-1B-Training (README and artifacts/{b200,h200}_training_timing.csv):
Hugging Face transformers' LlamaForCausalLM built from Llama-3.2-1B's config, bf16 weights, SGD, forward from
input embeddings, cross-entropy, backward and step, with torch.nn.attention.sdpa_kernel pinned to one backend;
mean of 100 iterations; PyTorch 2.7.0, cuDNN 9.9.0, CUDA 12.9 (NGC 25.04). The clocks were locked at the base
clock (B200 1,665 MHz, H200 1,500 MHz), so absolute times are slower than at the boost clock rigplan's peaks
assume; the ratio of two backends at one shape is what this script compares (rigplan's estimate with
--attention-kernel sdpa and with cudnn, at the part's own peak).

rigplan: rigplan estimate llama-3.2-1b --gpu GPU --gpus 1 --framework hf --precision bf16-true --optimizer sgd
--seq S --micro-batch B --global-batch B --attention-kernel {cudnn,sdpa,fa2}.

Run: python benchmarks/sdpa_backends_llama1b_check.py
"""

from __future__ import annotations

from rigplan.flow import estimate as speed
from rigplan.flow.request import EstimateRequest

MEASURED: dict[str, dict[tuple[int, int], tuple[float, float, float]]] = {
    "b200": {(1, 16384): (0.285, 0.716, 0.374), (2, 8192): (0.231, 0.444, 0.276), (3, 4096): (0.155, 0.236, 0.172),
             (6, 2048): (0.144, 0.184, 0.154), (12, 1024): (0.139, 0.160, 0.145), (24, 768): (0.200, 0.222, 0.208)},
    "h200-sxm": {(1, 16384): (0.424, 0.850, 0.500), (2, 8192): (0.357, 0.566, 0.397),
                 (3, 4096): (0.243, 0.322, 0.260), (6, 2048): (0.229, 0.270, 0.240),
                 (12, 1024): (0.222, 0.243, 0.228), (24, 768): (0.329, 0.352, 0.336)},
}
"""Seconds per iteration by (batch, sequence): (CUDNN_ATTENTION, EFFICIENT_ATTENTION, FLASH_ATTENTION)."""


def step_s(gpu: str, batch: int, seq: int, kernel: str) -> float:
    request = EstimateRequest(model="llama-3.2-1b", gpu=gpu, gpus=1, framework="hf", precision="bf16-true",
                              optimizer="sgd", seq=seq, micro_batch=batch, global_batch=batch,
                              attention_kernel=kernel)
    return float(speed.estimate(request).step.step_time_s)


def main() -> None:
    for gpu, rows in MEASURED.items():
        print(f"{gpu}: flash / cuDNN step time (measured at the base clock; rigplan's sdpa and fa2 curves)")
        print("  batch x seq     measured  rigplan sdpa  rigplan fa2   cuDNN step measured / rigplan at boost")
        for (batch, seq), (cudnn, _efficient, flash) in rows.items():
            t_cudnn = step_s(gpu, batch, seq, "cudnn")
            sdpa, fa2 = step_s(gpu, batch, seq, "sdpa") / t_cudnn, step_s(gpu, batch, seq, "fa2") / t_cudnn
            print(f"  {batch:3d} x {seq:6,d}  {flash / cudnn:8.2f}  {sdpa:12.2f}  {fa2:11.2f}   "
                  f"{cudnn:.3f} s / {t_cudnn:.3f} s")


if __name__ == "__main__":
    main()
