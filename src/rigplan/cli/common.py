"""Options shared by several commands, and the one place errors become exit status 2."""

from __future__ import annotations

import functools
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from rigplan import i18n
from rigplan.bounds import BOUND_ERROR_TYPE
from rigplan.cli.given import refuse_inert_options
from rigplan.cli.job_files import MEGATRON_ARGS_OPTION, TORCHTITAN_CONFIG_OPTION, with_job_file
from rigplan.cli.language import error_line
from rigplan.domain.frameworks import FRAMEWORK_NAMES
from rigplan.domain.job import FP8_RECIPES, KERNEL_STACKS, LOSS_IMPLS, OPTIMIZERS
from rigplan.errors import InvalidSpec, RigplanError
from rigplan.flow.fields import validated
from rigplan.flow.framework import PRESET_FIELDS

if TYPE_CHECKING:  # pydantic is imported only when a request needs it (flow/fields.py)
    from pydantic import BaseModel, ValidationError


def choice(values: Any) -> click.Choice:
    """A click choice of lowercase ids that also takes them in any case (LoRA, CNY, BF16-mixed), as model and GPU ids
    are; the value passed on is the listed id."""
    return click.Choice(list(values), case_sensitive=False)


KERNELS_OPTION = click.option(
    "--kernels", type=choice(KERNEL_STACKS), default="fused", show_default=True,
    help="fused: Megatron/NeMo/TransformerEngine kernels; eager: plain PyTorch (torchtitan); "
         "hf: Hugging Face transformers modules (fp32 norm copies, peft LoRA adapters in fp32); "
         "litgpt: lit-gpt's 2023 modules (fp32 RMSNorm, LoRA dropout); "
         "torchtune: torchtune's modules (fp32 RMSNorm, GQA k/v copies, the chunked loss's fp32 log-probabilities).")
"""--kernels, as memory, estimate, plan and compare take it."""
OPTIMIZER_HELP = ("muon: one momentum per hidden-layer matrix, orthogonalised by five Newton-Schulz iterations each "
                  "step (Moonlight, Kimi K2); embeddings, head and norms on AdamW.")
LOSS_OPTION = click.option(
    "--loss", type=choice(LOSS_IMPLS), default="unfused",
    show_default=True,
    help="Cross-entropy implementation (logit buffers): unfused = on an fp32 copy of the logits "
         "(transformers, torchtitan); fused = Megatron's vocab-parallel kernel (one fp32 copy); "
         "chunked = fp32 one chunk at a time (torchtune, Unsloth); bf16 = on the bf16 logits, "
         "no upcast (NeMo AutoModel's benchmark recipes); head-chunked = LM head and loss one "
         "sequence chunk at a time, the full logits never held (torchtitan's ChunkedLossWrapper); "
         "compiled = the unfused loss under torch.compile, which saves the bf16 logits and writes "
         "their bf16 gradient in one kernel (torchtitan with --compile).")
"""--loss, as memory, estimate, plan and compare take it."""

OPTIMIZER_OPTION = click.option("--optimizer", type=choice(OPTIMIZERS), default="adamw", show_default=True,
                                help=OPTIMIZER_HELP)
"""--optimizer, as plan and compare take it (memory and estimate take it with their recipe options)."""

F = TypeVar("F", bound=Callable[..., Any])
M = TypeVar("M", bound="BaseModel")


def _validation_error(err: BaseException) -> ValidationError | None:
    """`err` when it is pydantic's ValidationError (pydantic is then loaded already), else None."""
    pydantic_core = sys.modules.get("pydantic_core")
    if pydantic_core is not None and isinstance(err, pydantic_core.ValidationError):
        return err
    return None


def fail(message: str) -> None:
    """Print one line to stderr and exit with status 2."""
    click.echo(error_line(message), err=True)
    sys.exit(2)


def check_option(what: str) -> Callable[[F], F]:
    """`--check`: exit status 1 when the answer is negative (`what`), for scripts; the report is printed first."""
    return click.option("--check", is_flag=True,
                        help=f"Exit with status 1 when {what} (0 otherwise; 2 is bad input).")


def exit_for_check(check: bool, failed: bool) -> None:
    if check and failed:
        sys.exit(1)


def pydantic_message(err: ValidationError) -> str:
    first = err.errors()[0]
    if first["type"] == BOUND_ERROR_TYPE:
        return str(first["msg"])
    field = "--" + str(first["loc"][0]).replace("_", "-") if first["loc"] else "input"
    value = first.get("input")
    shown = f" (got {value!r})" if value is not None and not isinstance(value, dict) else ""
    return f"{field}: {first['msg']}{shown}"


def check_output_path(path: str, flag: str, force: bool) -> None:
    """Fail (exit 2) unless `path` can be written: its folder exists, it is not a folder, and it is new
    or --force was given."""
    target = Path(path)
    if target.is_dir():
        fail(f"{flag} {path} is a folder; give a file name")
    if not target.parent.is_dir():
        fail(f"{flag} {path}: the folder {target.parent} does not exist; create it or choose another path")
    if target.exists() and not force:
        fail(f"{path} exists; pass --force to overwrite it or choose another name")
    if target.exists() and not target.is_file():
        fail(f"{flag} {path} is not a regular file")


def build_request(model_cls: type[M] | str, **values: Any) -> Any:
    """The validated request; a model given by its name in flow.request may be checked by the field
    table without pydantic (flow/fields.py). Bad values: one line and exit status 2."""
    given = {k: v for k, v in values.items() if v is not None}
    try:
        return validated(model_cls, given) if isinstance(model_cls, str) else model_cls.model_validate(given)
    except Exception as err:
        invalid = _validation_error(err)
        if invalid is None:
            raise
        fail(pydantic_message(invalid))
        raise AssertionError("unreachable") from err


def guarded(func: F) -> F:
    """Turn rigplan's input errors into one line and exit status 2."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            ctx = click.get_current_context(silent=True)
            if ctx is not None:
                refuse_inert_options(ctx)
            return func(*args, **kwargs)
        except RigplanError as err:
            fail(str(err))
        except OSError as err:  # a report or plot that cannot be written, a file that vanished
            where = f"{err.filename}: " if err.filename else ""
            fail(f"{where}{err.strerror or err}")
        except Exception as err:
            invalid = _validation_error(err)
            if invalid is None:
                raise
            fail(pydantic_message(invalid))
        return None

    return wrapper  # type: ignore[return-value]


def _finite(data: Any) -> Any:
    """JSON has no Infinity or NaN: they become null (as in the HTTP API)."""
    if isinstance(data, float) and not math.isfinite(data):
        return None
    if isinstance(data, dict):
        return {k: _finite(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_finite(v) for v in data]
    return data


def echo_json(data: Any) -> None:
    lang = i18n.active_language()
    if lang != "en":
        data = i18n.translate_data(data, lang)
    click.echo(json.dumps(_finite(data), indent=2, default=str, allow_nan=False, ensure_ascii=lang == "en"))


def calibration_option() -> Callable[[F], F]:
    return click.option(
        "--calibration", type=click.Path(dir_okay=False),
        help="Calibration file from `rigplan probe` or `rigplan calibrate`: its measured efficiencies and "
             "overheads replace rigplan's defaults for the device it was measured on.")


def framework_option() -> Callable[[F], F]:
    return click.option(
        "--framework",
        help=f"Training framework whose defaults fill every option you do not give (kernels, loss, recompute, "
             f"optimizer buffers, ZeRO stage, fp8 recipe): {', '.join(FRAMEWORK_NAMES)}. Explicit flags win; "
             f"the report says what the preset set (docs/methodology/frameworks.md).")


def explicit_values(values: dict[str, Any]) -> dict[str, Any]:
    """Drop the preset-settable options whose value is click's default, so that a --framework preset (or
    the request's own default) decides them; an option the user typed is kept, even at its default value."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return dict(values)
    return {k: v for k, v in values.items()
            if not (k in PRESET_FIELDS and ctx.get_parameter_source(k) is click.core.ParameterSource.DEFAULT)}


def model_argument(func: F) -> F:
    """MODEL, the command's argument, also taken as --model MODEL (the spelling of other tools); both at once must
    name the same model."""

    @functools.wraps(func)
    def with_model(*args: Any, model: str | None = None, model_option: str | None = None, **kwargs: Any) -> Any:
        if model is not None and model_option is not None and model != model_option:
            raise click.UsageError(f"MODEL is given twice, '{model}' and --model '{model_option}'; give it once")
        return func(*args, model=model if model is not None else model_option, **kwargs)

    option = click.option("--model", "model_option", metavar="MODEL",
                          help="MODEL as an option: the same as giving it as the argument.")
    return click.argument("model", required=False)(option(with_model))  # type: ignore[return-value]


def model_options(func: F) -> F:
    """MODEL shape flags (they build a model without MODEL, or override fields of one)."""
    options = [
        click.option("--layers", type=int, help="Transformer layers."),
        click.option("--hidden", type=int, help="Hidden size (d_model)."),
        click.option("--heads", type=int, help="Attention heads."),
        click.option("--kv-heads", type=int, help="Key/value heads (GQA; 1 = MQA). Default: heads."),
        click.option("--head-dim", type=int, help="Head dimension. Default: hidden / heads."),
        click.option("--ffn", type=int, help="MLP intermediate size. Default: 4 x hidden."),
        click.option("--vocab", type=int, help="Vocabulary size."),
        click.option("--mlp", type=choice(["gated", "plain"]), help="Gated (SwiGLU) or plain MLP."),
        click.option("--positions", type=choice(["rope", "learned", "alibi", "none"]), help="Position encoding."),
        click.option("--tied-embeddings/--untied-embeddings", default=None, help="Share input and output embeddings."),
        click.option("--experts", type=int, help="MoE: routed experts per layer."),
        click.option("--top-k", type=int, help="MoE: experts per token."),
        click.option("--expert-ffn", type=int, help="MoE: intermediate size of one expert."),
        click.option("--shared-experts", type=int, help="MoE: shared experts per layer."),
        click.option("--mtp-layers", type=int,
                     help="MoE: multi-token-prediction modules trained with the model (DeepSeek-V3: 1); "
                          "0 trains without them."),
        click.option("--dense-layers", type=int,
                     help="MoE: leading layers with a dense MLP of --ffn instead of experts (DeepSeek-V3: 3)."),
        click.option("--moe-latent-size", type=int,
                     help="MoE: latent width of the routed experts; tokens are projected to it before dispatch and "
                          "back after combine (Nemotron 3 Super: 1024); 0 = the hidden size."),
        click.option("--expert-groups", type=int,
                     help="MoE: groups of consecutive experts of a group-limited router (DeepSeek-V3: 8; config.json "
                          "n_group, Megatron --moe-router-num-groups); with --group-top-k a token's experts come from "
                          "at most that many groups, which DeepEP-style dispatch sends to fewer nodes. 1 = none."),
        click.option("--group-top-k", type=int,
                     help="MoE: groups each token may route to (DeepSeek-V3: 4; config.json topk_group, Megatron "
                          "--moe-router-group-topk)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def moe_routing_option_list() -> list[Callable[[F], F]]:
    """MoE routing switches shared by memory, estimate, plan and compare."""
    return [
        click.option("--moe-imbalance", type=float,
                     help="MoE: busiest expert-parallel rank's tokens over the mean (>= 1). Default 1.5 for "
                          "dropless routing (docs/methodology/moe.md)."),
        click.option("--balanced-routing", is_flag=True,
                     help="MoE: perfectly balanced routing, as benchmarks force it (imbalance 1)."),
        click.option("--capacity-factor", type=float, default=0.0, show_default=True,
                     help="MoE: expert capacity over the mean load, tokens beyond it dropped; 0 = dropless."),
        click.option("--a2a-overlap", is_flag=True,
                     help="MoE: expert all-to-all overlapped with another micro-batch's computation (Megatron-Core "
                          "1F1B EP overlap, DualPipe); uses the DeepEP dispatcher unless --moe-dispatcher says "
                          "otherwise."),
        click.option("--a2a-overlap-schedule", type=choice(["1f1b", "dualpipe"]), default="1f1b",
                     show_default=True,
                     help="MoE, with --a2a-overlap: 1f1b = Megatron-Core's EP overlap (the forward of one "
                          "micro-batch beside the backward of another; hides a third of the all-to-all, "
                          "docs/methodology/moe.md); dualpipe = DeepSeek's DualPipe (hides all of it)."),
        click.option("--moe-dispatcher", type=choice(["alltoall", "deepep", "hybridep", "einsum", "allgather"]),
                     help="MoE: token dispatcher. alltoall: NCCL all-to-all, every routed copy crosses the network; "
                          "deepep or hybridep: DeepEP or HybridEP (Megatron-Core's flex dispatcher backends), one "
                          "copy of a token per destination rank and one crossing per destination node, forwarded "
                          "over NVLink; einsum: GShard's one-hot dispatch and combine einsums into capacity slots "
                          "(MaxText's dense_matmul, DeepSpeed-MoE), needs --capacity-factor and pads every expert "
                          "to it; allgather: Megatron-LM's default dispatcher, every token gathered over the expert "
                          "tensor x expert parallel ranks and the output reduce-scattered back. Default: deepep "
                          "with --a2a-overlap, else alltoall."),
        click.option("--moe-fused-grouped-mlp", is_flag=True,
                     help="MoE, MXFP8 on Blackwell: the routed experts run Transformer Engine's fused grouped MLP "
                          "(NVTE_CUTEDSL_FUSED_GROUPED_MLP=1, Megatron-Bridge cutedsl_fused_grouped_mlp): SwiGLU "
                          "and quantization in the GEMM epilogues, grouped GEMMs at the dense fp8 rate."),
        click.option("--experts-implementation", type=choice(["grouped_mm", "eager"]),
                     help="MoE in Hugging Face transformers (from_pretrained's experts_implementation): grouped_mm, "
                          "transformers 5's default, one torch._grouped_mm per expert linear and no host wait; "
                          "eager, transformers 4's path, a Python loop over the experts with a host wait at each "
                          "(docs/methodology/moe.md). Default: grouped_mm with --framework hf."),
        click.option("--moe-rank-capacity-factor", type=float,
                     help="MoE, HybridEP: Megatron-Core's static-shape MoE (--moe-expert-rank-capacity-factor): each "
                          "expert rank's receive buffer fixed at this multiple of its balanced share (recipes use "
                          "1.05-1.5), one grouped GEMM a linear with device-side sizes, no host sync a layer."),
        click.option("--moe-pad-to-capacity", is_flag=True,
                     help="MoE: pad every expert's input to its capacity (needs --capacity-factor; Megatron "
                          "--moe-pad-expert-input-to-capacity): static shapes, no per-layer host sync."),
    ]


def weight_state_option_list() -> list[Callable[[F], F]]:
    """How Megatron stores the weights, Adam's moments and the SwiGLU input (fp8 parameter gather, bf16 moments,
    fp8 activation store), shared by memory, estimate, plan and compare."""
    return [
        click.option("--fp8-param-gather/--no-fp8-param-gather", default=False,
                     help="Megatron --fp8-param-gather: the weights are fp8 tensors with no bf16 copy (-2 B/param), "
                          "and the parameter all-gather moves fp8."),
        click.option("--bf16-moments/--no-bf16-moments", default=False,
                     help="Adam's moments in bf16 (Megatron --use-precision-aware-optimizer --exp-avg-dtype bf16 "
                          "--exp-avg-sq-dtype bf16): 4 B/param of optimizer moments instead of 8."),
        click.option("--fp8-activation-store/--no-fp8-activation-store", default=False,
                     help="Megatron --activation-func-fp8-input-store: the fused SwiGLU saves its 2f input in fp8 for "
                          "backward (1 B, not 2, per element), and casts it there and back."),
    ]


def kernel_option_list() -> list[Callable[[F], F]]:
    """How the kernels run (CUDA graphs, fp8 attention, compile, autocast, attention kernel, fp8 scaling),
    shared by memory, estimate, plan and compare."""
    return [
        click.option("--compile/--no-compile", default=False,
                     help="torch.compile on the model (torchtitan --compile, Inductor): element-wise chains are "
                          "fused, so the eager stack's extra memory traffic and kernel launches go; attention stays "
                          "the stack's kernel."),
        click.option("--autocast/--no-autocast", default=False,
                     help="torch.autocast mixed precision (Composer amp_bf16, Hugging Face Trainer bf16=True): the "
                          "residual stream stays fp32 and every matmul input is cast to bf16 first (extra traffic)."),
        click.option("--attention-kernel", type=choice(["fa2", "fa3", "cudnn", "triton", "sdpa"]),
                     help="Flash-attention kernel with --attention flash. Default: the stack's (cuDNN under "
                          "--kernels fused on Hopper/Blackwell, FlashAttention-2 on Ampere, PyTorch SDPA for "
                          "eager stacks); a kernel the GPU lacks falls back to that default."),
        click.option("--cuda-graphs", type=choice(["none", "full"]), default="none", show_default=True,
                     help="full: the whole iteration replayed as one CUDA graph (Megatron-Core cuda_graph_impl "
                          "full_iteration): no host pacing of dropless MoE layers; per-module graphs are "
                          "--cuda-graph-scope."),
        click.option("--cuda-graph-scope",
                     help="Per-module CUDA graphs (Megatron-Core cuda_graph_scope with cuda_graph_impl "
                          "transformer_engine), comma list of attn, mamba, moe_router, moe_preprocess: each captured "
                          "module is one host launch; dropless MoE still syncs once a layer."),
        click.option("--fp8-attention/--no-fp8-attention", default=False,
                     help="FP8 dot-product attention (Megatron --fp8-dot-product-attention, Transformer Engine "
                          "NVTE_FP8_DPA=1): the cuDNN kernel at its measured fp8 rate (1.26x bf16 on Blackwell, "
                          "0.90x on Hopper, cuDNN 9.19), other kernels with the matrix products in fp8 and the "
                          "softmax exponentials at their own rate; needs --precision fp8."),
        click.option("--fp8-recipe", type=choice(FP8_RECIPES), default="delayed",
                     show_default=True,
                     help="fp8 scaling with --precision fp8: delayed per-tensor (Transformer Engine on Hopper), "
                          "current per-tensor (torchao float8 tensorwise, torchtitan), blockwise: fp32 scales per "
                          "1x128 elements and 128x128 weight blocks (DeepSeek-V3's scheme, Transformer Engine "
                          "Float8BlockScaling, Megatron --fp8-recipe blockwise; Hopper and Blackwell), mxfp8 "
                          "(datacenter Blackwell, CDNA 4), "
                          "nvfp4: the linear layers' GEMMs in 4-bit NVFP4 (Transformer Engine NVFP4BlockScaling; "
                          "NVIDIA Blackwell)."),
    ]


def overlap_option_list() -> list[Callable[[F], F]]:
    """Communication overlap switches and the gradient-reduce dtype (docs/methodology/communication.md)."""
    return [
        click.option("--tp-comm-overlap/--no-tp-comm-overlap", default=None,
                     help="TP all-gather/reduce-scatter overlapped with the GEMMs (Megatron --tp-comm-overlap, "
                          "Transformer Engine userbuffers; PyTorch async TP); needs --sequence-parallel. "
                          "Default off."),
        click.option("--tp-async-backward/--no-tp-async-backward", default=None,
                     help="TP backward collectives of the column-parallel linears run beside their backward "
                          "GEMMs (Megatron-Core and Transformer Engine linears; Megatron-LM from late 2021). "
                          "Default: on with --kernels fused, off with eager stacks."),
        click.option("--overlap-grad-reduce/--no-overlap-grad-reduce", default=None,
                     help="Gradient all-reduce/reduce-scatter overlapped with backward (PyTorch DDP/FSDP; "
                          "Megatron --overlap-grad-reduce). Default on."),
        click.option("--overlap-param-gather/--no-overlap-param-gather", default=None,
                     help="Parameter all-gather overlapped with compute (Megatron --overlap-param-gather for "
                          "ZeRO-1/2; FSDP prefetch for ZeRO-3). Default: on with ZeRO-3, off with ZeRO-1/2."),
        click.option("--pp-comm-overlap/--no-pp-comm-overlap", default=None,
                     help="Pipeline send/recv overlapped with compute (Megatron --overlap-p2p-communication); "
                          "hides only with --vpp > 1 (interleaved schedule). Default off."),
        click.option("--cp-comm-overlap/--no-cp-comm-overlap", default=None,
                     help="Context-parallel ring K/V exchange overlapped with attention. Default on."),
        click.option("--cp-comm-type", type=choice(["p2p", "a2a"]), default=None,
                     help="Context-parallel exchange: p2p, a ring of K/V blocks under attention (Transformer "
                          "Engine's default); a2a, all-to-all of q, k, v and the output around the attention "
                          "core (DeepSpeed-Ulysses, cp_comm_type a2a), which needs heads and kv-heads per "
                          "tensor-parallel rank divisible by --cp. Default: p2p, a2a for models with learned "
                          "attention sinks (gpt-oss), which Transformer Engine runs only that way."),
        click.option("--grad-reduce-dtype", type=choice(["fp32", "bf16"]),
                     help="Dtype of the data-parallel gradient reduction (fp32: Megatron with bf16, "
                          "torchtitan). Default: the gradients' own dtype."),
        click.option("--grad-bucket-params", type=float, default=None,
                     help="Parameters per data-parallel gradient bucket (Megatron --ddp-bucket-size, e.g. 7.68e8): the "
                          "last bucket's reduce-scatter and the first one's all-gather run exposed. Default: one "
                          "layer's share."),
        click.option("--step-overhead-ms", type=float, default=None,
                     help="Host-side training-loop time per optimizer step (host syncs, optimizer issue, logging), "
                          "added once per step. Default: 42 with --framework megatron or nemo, else 0."),
    ]


def job_options(func: F) -> F:
    """Training recipe, parallel layout and GPU options shared by memory, estimate and calibrate."""
    return _job_options(func, preset=True)


def job_options_without_preset(func: F) -> F:
    """job_options less --framework (`rigplan export` uses that name for the configuration it writes)."""
    return _job_options(func, preset=False)


def _job_options(func: F, *, preset: bool) -> F:
    options = [
        click.option("--method", type=choice(["full", "lora", "qlora"]), default="full", show_default=True,
                     help="Full training/fine-tune, LoRA, or QLoRA (NF4 base)."),
        click.option("--lora-rank", type=int, default=16, show_default=True, help="LoRA rank r."),
        click.option("--lora-targets", default="q,v", show_default=True,
                     help="Comma list of q,k,v,o,gate,up,down,in_proj,out_proj (in_proj, out_proj: a linear-attention "
                     "mixer's), or 'all'."),
        click.option("--no-double-quant", "single_quant", is_flag=True, help="QLoRA without double quantization."),
        click.option("--seq", type=int, help="Sequence length in tokens. Default: min(4096, model context)."),
        click.option("--micro-batch", type=int, default=1, show_default=True, help="Sequences per micro-batch."),
        click.option("--global-batch", type=int,
                     help="Sequences per optimizer step (all GPUs). Default: about 4M tokens per step."),
        click.option("--precision", type=choice(["fp32", "bf16-mixed", "fp16-mixed", "bf16-true", "fp8",
                                                 "bf16", "fp16"]),
                     help="Precision recipe (bf16 = bf16-mixed). Default: bf16-mixed for full training, "
                          "bf16-true for LoRA/QLoRA."),
        click.option("--optimizer", type=choice(OPTIMIZERS), default="adamw", show_default=True,
                     help=OPTIMIZER_HELP),
        click.option("--zero", type=click.IntRange(0, 3), default=0, show_default=True,
                     help="ZeRO stage over the data-parallel group."),
        click.option("--fsdp", is_flag=True, help="FSDP full sharding (same as --zero 3)."),
        click.option("--tp", type=int, default=1, show_default=True, help="Tensor-parallel degree."),
        click.option("--pp", type=int, default=1, show_default=True, help="Pipeline stages."),
        click.option("--vpp", type=int, default=1, show_default=True, help="Virtual stages per rank (interleaved)."),
        click.option("--dp", type=int, help="Data-parallel degree. Default: gpus / (tp*pp*cp)."),
        click.option("--cp", type=int, default=1, show_default=True, help="Context-parallel degree."),
        click.option("--ep", type=int, default=1, show_default=True, help="Expert-parallel degree (MoE)."),
        click.option("--etp", type=int, default=0, show_default=True,
                     help="Expert-tensor-parallel degree (MoE parallel folding); 0 = equal to tp, or 1 when "
                          "ep*tp does not divide the tp*cp*dp GPUs of a pipeline stage."),
        click.option("--sequence-parallel/--no-sequence-parallel", default=False,
                     help="Megatron sequence parallelism (needs tp > 1)."),
        click.option("--stage-layers", help="Layers of each virtual pipeline stage, pp*vpp comma-separated counts "
                                            "in virtual-stage order (e.g. 7,8,8,7; LAYERSxSTAGES repeats a count: "
                                            "1,2x30,0). Default: even, or when the layers do not divide, embedding "
                                            "and LM head counted as one layer each."),
        click.option("--pipeline-layout",
                     help="Megatron-Core's pipeline layout (--pipeline-model-parallel-layout): stages separated by "
                          "|, E embedding, t decoder layer, m MTP module, L loss, X*n and (...)*n repeats, e.g. "
                          "'Et*3|(tt|)*29,m|L'. Sets the per-stage split, and vpp = stages / pp."),
        click.option("--first-stage-layers", type=int,
                     help="Layers on the first pipeline rank; the other ranks share the rest "
                          "(Megatron --decoder-first-pipeline-num-layers)."),
        click.option("--last-stage-layers", type=int,
                     help="Layers on the last pipeline rank (Megatron --decoder-last-pipeline-num-layers)."),
        click.option("--embedding-layer-weight", type=int,
                     help="Count the embedding as this many layers when splitting the pipeline "
                          "(torchtitan input_weight; 1 = Megatron --account-for-embedding-in-pipeline-split)."),
        click.option("--head-layer-weight", type=int,
                     help="Count the LM head + loss as this many layers when splitting the pipeline "
                          "(torchtitan output_weight; 1 = Megatron --account-for-loss-in-pipeline-split)."),
        *moe_routing_option_list(),
        *overlap_option_list(),
        click.option("--recompute-method", type=choice(["uniform", "block"]), default="uniform",
                     show_default=True,
                     help="With --recompute full and --recompute-num-layers N (Megatron): uniform saves one "
                          "input per N layers and recomputes them all; block recomputes only the first N layers "
                          "of each pipeline chunk."),
        click.option("--recompute-num-layers", type=int,
                     help="Megatron --recompute-num-layers N for --recompute full (default 1: every layer)."),
        click.option("--recompute-every", type=int,
                     help="With --recompute full: checkpoint every N-th layer only (torchtitan's layer-level "
                          "selective checkpointing, selective_ac_option N)."),
        click.option("--recompute", type=choice(["none", "selective", "op", "full"]),
                     help="Activation recomputation: selective = Megatron attention-core recompute; "
                          "op = torchtitan per-op selective checkpointing; full = every layer. "
                          "Default: full for QLoRA (as its recipes run), none otherwise."),
        click.option("--recompute-moe-act/--no-recompute-moe-act", default=False,
                     help="MoE: the routed experts' activation output is freed after use and recomputed in "
                          "backward (Megatron --recompute-modules moe_act); beside --recompute none or selective."),
        click.option("--recompute-moe/--no-recompute-moe", default=False,
                     help="MoE: each MoE block (router, dispatch, experts, combine) keeps only its input and runs "
                          "again in backward, all-to-alls included (Megatron --recompute-modules moe); beside "
                          "--recompute none or selective."),
        click.option("--recompute-mla-up-proj/--no-recompute-mla-up-proj", default=False,
                     help="MLA models: the query, key and value of the up-projections are freed after core "
                          "attention and recomputed in backward (Megatron --recompute-modules mla_up_proj); "
                          "beside --recompute none or selective."),
        click.option("--recompute-layernorm/--no-recompute-layernorm", default=False,
                     help="The outputs of the norms that are modules of their own (the input norm with MLA, the "
                          "pre-MLP norm of MoE layers) are freed and recomputed in backward (Megatron "
                          "--recompute-modules layernorm); beside --recompute none or selective."),
        click.option("--recompute-mlp/--no-recompute-mlp", default=False,
                     help="Dense (non-MoE) layers keep only their MLP's input and run the MLP again in backward "
                          "(Megatron --recompute-modules mlp); beside --recompute none or selective."),
        click.option("--op-save-grouped-mm/--no-op-save-grouped-mm", default=False,
                     help="MoE with --recompute op: the routed experts' grouped-GEMM outputs join torchtitan's "
                          "per-op save list (aten._grouped_mm), so backward does not run those GEMMs again; more "
                          "memory, less recompute."),
        click.option("--attention", type=choice(["flash", "eager"]), default="flash", show_default=True),
        click.option("--offload", type=choice(["none", "optimizer", "all"]), default="none",
                     show_default=True, help="CPU offload of optimizer states, or of parameters too."),
        click.option("--optimizer-in-backward", is_flag=True, help="Fuse the optimizer step into backward."),
        click.option("--activation-offload/--no-activation-offload", default=False,
                     help="Offload checkpointed activations to host."),
        click.option("--optimizer-foreach/--no-optimizer-foreach", default=False,
                     help="torch.optim foreach path instead of a fused optimizer (its step allocates temporaries)."),
        LOSS_OPTION,
        click.option("--dropout/--no-dropout", default=False,
                     help="Hidden and attention dropout active (1-byte masks saved; Megatron-LM's default, off in "
                          "Llama-style recipes)."),
        KERNELS_OPTION,
        *kernel_option_list(),
        click.option("--checkpoint-load", type=choice(["sharded", "full"]), default="sharded",
                     show_default=True,
                     help="sharded: each rank reads its shard; full: the whole checkpoint is materialised on "
                          "every rank before FSDP shards it (FSDP1 full-state-dict loads; sets the load peak)."),
        click.option("--nf4-quantizer", type=choice(["bitsandbytes", "bitsandbytes-legacy", "torchao-unchunked"]),
                     default="bitsandbytes", show_default=True,
                     help="QLoRA: what quantizes and runs the 4-bit base (bitsandbytes-legacy: before 0.43.2, "
                          "its 4-bit matmul also saves its input; torchao before chunking needs 68 B per element "
                          "of the largest linear at load)."),
        click.option("--kbit-fp32-upcast/--no-kbit-fp32-upcast", default=False,
                     help="QLoRA through PEFT's prepare_model_for_kbit_training: embeddings, LM head and norms "
                          "in fp32, and an fp32 residual stream."),
        click.option("--main-grads-fp32/--no-main-grads-fp32", default=False,
                     help="Megatron/NeMo fp32 main-grad buffer (gradients 4 B/param instead of 2)."),
        click.option("--ddp-grad-copy/--no-ddp-grad-copy", default=False,
                     help="PyTorch DDP buckets hold a second copy of the gradients (gradient_as_bucket_view off)."),
        click.option("--fsdp-prefetch", type=int, default=1, show_default=True,
                     help="FSDP units all-gathered ahead of the one computing."),
        click.option("--fsdp-flat-params/--no-fsdp-flat-params", default=False,
                     help="ZeRO-3 is FSDP1 with use_orig_params (Lightning Fabric, lit-gpt): a unit with a trainable "
                          "parameter gets gradients for all its elements, unsharded while accumulating under "
                          "no_sync."),
        click.option("--fp8-transpose-cache/--no-fp8-transpose-cache", default=False,
                     help="TransformerEngine fp8 keeps a transposed fp8 weight too (+1 B/param)."),
        *weight_state_option_list(),
        click.option("--fused-swiglu/--no-fused-swiglu", default=False,
                     help="Megatron-Core/TE fused SwiGLU (saves 3f, not 4f, per token)."),
        click.option("--fp8-experts/--no-fp8-experts", default=False,
                     help="Only the routed experts' grouped GEMMs in fp8 (--fp8-recipe, MXFP8 on Blackwell), the rest "
                          "in bf16: torchao's MoE training recipe in torchtitan. Keep --precision bf16-mixed."),
        click.option("--bf16-experts/--no-bf16-experts", default=False,
                     help="With --precision fp8, keep the routed experts' grouped GEMMs in bf16 and run the other "
                          "linears in fp8: torchao's float8 linear conversion in torchtitan without its grouped-mm "
                          "converter."),
        click.option("--rope-factor-unfused/--no-rope-factor-unfused", default=False,
                     help="The fused rotary kernel cannot scale cos and sin (Megatron-Core), so a YaRN model "
                          "(gpt-oss) runs its rotary embedding unfused."),
        click.option("--nvls-buffers/--no-nvls-buffers", default=False,
                     help="NCCL NVLS buffers on NVSwitch nodes (NCCL 2.18-2.19 default): 1 GiB per 8-GPU "
                          "communicator."),
        click.option("--expandable-segments/--no-expandable-segments", default=False,
                     help="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (torchtitan's and Unsloth's "
                          "default): the caching allocator keeps far less reserved beyond the live tensors."),
        click.option("--varying-lengths/--no-varying-lengths", default=False,
                     help="Batches padded to their longest sample (unpacked data): shapes change from step to "
                          "step and the caching allocator keeps more reserved; with --kernels hf the padding "
                          "mask reaches SDPA (a bf16 copy per layer)."),
        *([framework_option(), MEGATRON_ARGS_OPTION, TORCHTITAN_CONFIG_OPTION] if preset else []),
        click.option("--gpu", default="h100-sxm", show_default=True, envvar="RIGPLAN_GPU",
                     help="GPU id (rigplan gpus)."),
        click.option("--gpus", type=int, help="Total GPUs; dp is derived when not given."),
        click.option("--ecc/--no-ecc", default=None, help="Force ECC on/off (GDDR cards lose 1/16 with ECC on)."),
        click.option("--catalog", "catalog_dirs", multiple=True, type=click.Path(),
                     help="Folder with gpus/ and models/ overlays (repeatable; also RIGPLAN_CATALOG)."),
        calibration_option(),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def job_values(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Map the CLI's option names onto request fields."""
    values = with_job_file(explicit_values(kwargs))
    if values.pop("fsdp", False):
        if values.get("zero") not in (None, 3):
            raise InvalidSpec(f"--fsdp is --zero 3, but --zero {values['zero']} is given too; keep one of them")
        values["zero"] = 3
    values["qlora_double_quant"] = not values.pop("single_quant", False)
    values["catalog"] = list(values.pop("catalog_dirs", ()) or ())
    return values


def recipe_options(func: F) -> F:
    """The training recipe of commands that search layouts themselves (plan, compare)."""
    options = [
        click.option("--method", type=choice(["full", "lora", "qlora"]), default="full", show_default=True),
        click.option("--lora-rank", type=int, default=16, show_default=True),
        click.option("--lora-targets", default="q,v", show_default=True),
        click.option("--seq", type=int, help="Sequence length (default: min(4096, model context))."),
        click.option("--global-batch", type=int, help="Sequences per step (default: about 4M tokens)."),
        click.option("--precision", type=choice(["fp32", "bf16-mixed", "fp16-mixed", "bf16-true", "fp8",
                                                 "bf16", "fp16"])),
        calibration_option(),
        framework_option(),
        LOSS_OPTION,
        *moe_routing_option_list(),
        *kernel_option_list(),
        *weight_state_option_list(),
        *overlap_option_list(),
    ]
    for option in reversed(options):
        func = option(func)
    return func
