"""Pydantic schemas of catalog records. Human units live in field names; to_domain() converts once.

Unknown keys are errors. Every record carries `sources` and `as_of`.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from rigplan.bounds import BOUNDS, Bounded
from rigplan.domain.hardware import Gpu, Link
from rigplan.domain.model import MLA, Architecture, LinearAttention, MoE, SparseAttention, sliding_windows
from rigplan.units import GiB, MiB

PCIE_X16_ACHIEVABLE_GB_PER_S = {3: 12.0, 4: 25.0, 5: 50.0, 6: 100.0}
"""Host<->device copy rate one direction, pinned memory, x16, as measured rather than line rate
(15.75 / 31.5 / 63 / 126 GB/s): Gen3 12 GB/s (V100, BaM authors, github.com/ZaidQureshi/bam issue 54,
2025-02); Gen4 25.1 GB/s (A100 SXM4 nvbandwidth host_to_device, github.com/NVIDIA/nvbandwidth issue 42,
2025-07; BaM paper's 25 GB/s); Gen5 52.8 GB/s device-to-host, 35 host-to-device with SM copies (H100,
nvbandwidth issue 24, 2024-09), taken as 50. Gen6 has no published measurement: twice Gen5, the line
rate ratio."""

RecordId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9.\-]*$")]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Source(Record):
    title: str
    url: str | None = None
    accessed: dt.date | None = None
    locator: str | None = None
    """Table, section or field of the source where the figure stands."""


Sources = Annotated[list[Source], Field(min_length=1)]


Tflops = Annotated[float, Bounded("dense_tflops")]


class DenseTflops(Record):
    """Dense (no 2:4 sparsity) peak tensor TFLOP/s; bf16/fp16 with fp32 accumulate."""

    fp32: Tflops | None = None
    tf32: Tflops | None = None
    bf16: Tflops | None = None
    """Absent on parts without bf16 tensor cores (V100, T4): bf16 recipes are then an error."""
    fp16: Tflops | None = None
    fp8: Tflops | None = None
    fp4: Tflops | None = None

    @model_validator(mode="after")
    def _has_a_half_precision_rate(self) -> DenseTflops:
        if self.bf16 is None and self.fp16 is None:
            raise ValueError("dense_tflops needs bf16 or fp16 (the half-precision tensor rate training uses)")
        return self

    @property
    def half(self) -> float:
        """The bf16 rate, or fp16 where the part has no bf16."""
        return float(self.bf16 or self.fp16 or 0.0)


LinkTopology = Literal["switched", "full-mesh", "partial-mesh", "pair", "torus"]


class LinkRecord(Record):
    kind: Literal["nvlink", "nvlink-bridge", "nvlink-c2c", "infinity-fabric", "pcie", "roce", "ici", "hccs",
                  "mlu-link", "mtlink", "blink"]
    """China's domestic fabrics: 'hccs' (Huawei Ascend), 'mlu-link' (Cambricon), 'mtlink' (Moore Threads),
    'blink' (Biren B-Link)."""
    bandwidth_gb_per_s_bidirectional: Annotated[float, Bounded("link_gb_per_s")]
    """Per GPU, both directions added (the datasheet convention: H100 SXM 900)."""
    domain_size: Annotated[int, Bounded("link_domain_size")]
    """GPUs reachable at that bandwidth."""
    topology: LinkTopology = "switched"
    """'switched': every GPU reaches every other at the full per-GPU figure through a switch
    (NVSwitch; PCIe cards through the root complex or a PCIe switch). 'full-mesh': point-to-point
    links, each pair on its own link(s), so one pair gets only a share of the per-GPU figure
    (MI300X: 7 links of 128 GB/s; Gaudi: RoCE ports). 'partial-mesh': some pairs have no direct
    link (V100 hybrid cube-mesh, MI250X). 'pair': a 2-way bridge. 'torus': TPU ICI."""


class EccRecord(Record):
    default_on: bool
    capacity_loss_fraction: Annotated[float, Field(ge=0, lt=0.2)]
    """1/16 = 0.0625 for GDDR; 0 for HBM (dedicated ECC bits)."""
    note: str | None = None


class NodeRecord(Record):
    """Default scale-up node for this GPU (overridable on the command line)."""

    gpus_per_node: Annotated[int, Bounded("gpus_per_node")]
    nic_gbit_per_s_per_gpu: Annotated[float, Bounded("nic_gbit")] | None
    """Scale-out NIC bandwidth per GPU, one direction (400 for an HGX H100 with CX-7); null where the vendor
    publishes none (a job beyond one node then needs --nic)."""
    note: str | None = None


class PowerBasisRecord(Record):
    """The part whose datasheet tensor peak and board power anchor this part's sustained tensor rate: the same SM
    design at another power limit (estimate.efficiency.sustained_tensor_scale)."""

    part: str
    bf16_tflops: Annotated[float, Bounded("dense_tflops")]
    """The anchor part's dense bf16 datasheet peak."""
    power_w: Annotated[float, Bounded("power_w")]
    """The anchor part's board power."""
    note: str


class GemmPowerLimitRecord(Record):
    """A measured shortfall of the part's dense GEMMs against its datasheet peak at its board power, where the
    peak belongs to a clock that power does not sustain under GEMM load (estimate.efficiency.gemm_clock_fraction)."""

    fraction: Annotated[float, Bounded("gemm_power_fraction")]
    """Sustained GEMM rate over what the family's GEMM curve gives at the datasheet peak (0 < f <= 1)."""
    note: str


def as_of_text(date: dt.date | None) -> str:
    """A snapshot date as shown to users: ISO, or 'undated'."""
    return date.isoformat() if date else "undated"


class PriceRecord(Record):
    usd: Annotated[float, Bounded("gpu_price")]
    kind: Literal["msrp", "street", "estimate"]
    as_of: dt.date | None = None
    """Date of the price snapshot; absent ("undated") when the source gives none. Never the
    catalog's compile date, which would make an undated price look newer than dated ones."""
    source: str


class CloudPriceRecord(Record):
    provider: str
    pricing: Literal["on-demand", "reserved", "spot", "community", "serverless"]
    usd_per_gpu_hour: Annotated[float, Bounded("cloud_price")] | None = None
    cny_per_gpu_hour: Annotated[float, Bounded("cloud_price_cny")] | None = None
    """The price as a provider billing in CNY quotes it (Chinese clouds); converted to USD at the
    request's exchange rate (--fx), not at a rate frozen in the catalog. Exactly one of the two is set."""
    as_of: dt.date | None = None
    """Snapshot date; absent ("undated") when the source gives none (see PriceRecord.as_of)."""
    source: str
    capacity_gpus: Annotated[int, Bounded("gpus")] | None = None
    """Most GPUs one customer can rent at this price at once, where the provider states it."""

    @model_validator(mode="after")
    def _one_currency(self) -> CloudPriceRecord:
        if (self.usd_per_gpu_hour is None) == (self.cny_per_gpu_hour is None):
            raise ValueError("give the price once: usd_per_gpu_hour or cny_per_gpu_hour")
        return self

    def usd_per_hour(self, cny_per_usd: float) -> float:
        """USD per GPU-hour; a CNY quote converted at `cny_per_usd`."""
        if self.usd_per_gpu_hour is not None:
            return self.usd_per_gpu_hour
        assert self.cny_per_gpu_hour is not None
        return self.cny_per_gpu_hour / cny_per_usd


class GpuRecord(Record):
    id: RecordId
    name: str
    vendor: Literal["nvidia", "amd", "intel", "google", "huawei", "cambricon", "moorethreads", "biren", "iluvatar"]
    architecture: str
    launch: str | None = None
    memory_gib: Annotated[float, Bounded("memory_gib")]
    """Nominal capacity from the datasheet ("80 GB" is 80 GiB in practice)."""
    usable_memory_mib: Annotated[float, Bounded("usable_memory_mib")] | None = None
    """Capacity the driver reports in the default ECC state (nvidia-smi), where known."""
    memory_kind: Literal["HBM", "HBM2", "HBM2e", "HBM3", "HBM3e", "GDDR6", "GDDR6X", "GDDR7", "LPDDR5"]
    """'HBM' where the vendor does not name the generation (TPU Trillium); LPDDR5 on Cambricon's MLU370."""
    memory_bandwidth_gb_per_s: Annotated[float, Bounded("memory_bandwidth_gb_per_s")]
    dense_tflops: DenseTflops
    tdp_w: Annotated[float, Bounded("power_w")] | None
    """Board / module power; null where the vendor publishes none (Cloud TPUs): energy and owning are then
    not estimated. Required, so a record says so explicitly."""
    power_limit_w: Annotated[float, Bounded("power_w")] | None = None
    """Board power limit the part is deployed at, when below the TDP (sustained clocks drop)."""
    form_factor: Literal["sxm", "pcie", "oam", "superchip", "mezzanine", "apu", "tray"]
    link: LinkRecord
    pcie_gen: Annotated[int, Field(ge=3, le=6)] | None
    """Host link generation (x16); null where unpublished."""
    exp_tera_per_s: Annotated[float, Bounded("exp_tera_per_s")] | None = None
    """Exponentials per second of the special function units (SASS MUFU.EX2), in tera, where published or
    derivable from the SM count and clock: softmax's exponentials pace attention kernels beside the tensor
    cores (estimate.efficiency.softmax_exp_ratio). Null where unknown: the family's attention curve is then
    used as measured."""
    gemm_power_limit: GemmPowerLimitRecord | None = None
    """Where set, dense GEMMs run at this fraction of the family curve's rate at the datasheet peak (attention and
    memory-bound work do not: their curves and bandwidths are measured on the part or hold at its power)."""
    power_basis: PowerBasisRecord | None = None
    """Where set, the sustained tensor rate follows the anchor part's by the square root of their board powers above
    idle, not this part's datasheet peak (Blackwell Ultra and MI325X are quoted at their siblings' peaks at more
    power)."""
    host_cpu: Literal["x86", "grace"] = "x86"
    """CPU family that drives the GPU: 'grace' on Grace superchips (GB200, GB300, GH200). It picks the host's cost
    per op of an MoE layer (estimate.moe_host.HOST_OP_S: in training about the same on both, 36-37 us, where an
    isolated torch op takes 2.75x longer on Grace)."""
    gpudirect_rdma: bool | None = True
    """NICs read and write GPU memory directly. False on GeForce cards (NVIDIA supports GPUDirect
    RDMA on data-centre and professional GPUs only): NCCL then stages inter-node traffic through
    host memory, so the node-local and network phases of a collective run one after the other.
    Null where the vendor publishes nothing either way: the estimate then takes the staged path
    (no capability assumed without a source) and says so."""
    ecc: EccRecord
    devices_per_package: Annotated[int, Bounded("devices_per_package")] = 1
    """Devices the framework sees per package (MI250X: 2 GCDs). The record describes one device:
    memory, rates, power and price are per device."""
    node: NodeRecord
    price: PriceRecord | None = None
    cloud_prices: list[CloudPriceRecord] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    sources: Sources
    as_of: dt.date

    def to_domain(self) -> Gpu:
        memory_bytes = int(self.usable_memory_mib * MiB) if self.usable_memory_mib else int(self.memory_gib * GiB)
        peaks = {k: v * 1e12 for k, v in self.dense_tflops.model_dump().items() if v}
        if "bf16" in peaks:
            peaks.setdefault("fp16", peaks["bf16"])
        return Gpu(
            id=self.id,
            name=self.name,
            vendor=self.vendor,
            architecture=self.architecture,
            memory_bytes=memory_bytes,
            memory_kind=self.memory_kind,
            memory_bandwidth_bytes_per_s=self.memory_bandwidth_gb_per_s * 1e9,
            peak_flop_per_s=peaks,
            tdp_w=self.tdp_w or 0.0,
            power_limit_w=self.power_limit_w,
            form_factor=self.form_factor,
            link=Link(
                kind=self.link.kind,
                bandwidth_bytes_per_s=self.link.bandwidth_gb_per_s_bidirectional / 2 * 1e9,
                domain_size=self.link.domain_size,
                topology=self.link.topology,
            ),
            host_bus_bytes_per_s=PCIE_X16_ACHIEVABLE_GB_PER_S[self.pcie_gen] * 1e9 if self.pcie_gen else 0.0,
            ecc_capacity_loss_fraction=self.ecc.capacity_loss_fraction,
            ecc_default_on=self.ecc.default_on,
            gpudirect_rdma=self.gpudirect_rdma,
            host_cpu=self.host_cpu,
            exp_per_s=(self.exp_tera_per_s or 0.0) * 1e12,
            power_basis=(self.power_basis.bf16_tflops * 1e12, self.power_basis.power_w) if self.power_basis else None,
            gemm_power_fraction=self.gemm_power_limit.fraction if self.gemm_power_limit else 1.0,
            gpus_per_node=self.node.gpus_per_node,
            nic_bits_per_s=(self.node.nic_gbit_per_s_per_gpu or 0.0) * 1e9,
            price_usd=self.price.usd if self.price else None,
            notes=tuple(self.notes),
        )


class MoERecord(Record):
    num_experts: Annotated[int, Bounded("experts")]
    top_k: Annotated[int, Bounded("top_k")]
    expert_ffn: Annotated[int, Bounded("expert_ffn")]
    num_shared_experts: Annotated[int, Bounded("shared_experts")] = 0
    shared_expert_ffn: Annotated[int, Field(ge=0, le=BOUNDS["ffn"].high)] = 0
    first_dense_layers: Annotated[int, Field(ge=0, le=BOUNDS["layers"].high)] = 0
    moe_layer_step: Annotated[int, Field(ge=1, le=BOUNDS["layers"].high)] = 1
    """After the leading dense layers, every step-th layer is MoE, the others dense (Llama 4: 2)."""
    expert_bias: bool = False
    router_bias: bool = False
    expert_act_clamp: Annotated[float, Field(ge=0.0, le=1e4)] = 0.0
    """Clamp on the experts' GLU inputs (gpt-oss config.json swiglu_limit); 0 = none."""
    shared_expert_gate: bool = False
    router: Literal["softmax", "sigmoid"] = "softmax"
    mtp_layers: Annotated[int, Bounded("mtp_layers")] = 0
    dense_layers: tuple[Annotated[int, Field(ge=0, le=BOUNDS["layers"].high)], ...] = ()
    """0-based non-MoE layers where no leading count and step describe them (domain.model.MoE.dense_layers)."""
    latent_size: Annotated[int, Field(ge=0, le=BOUNDS["hidden"].high)] = 0
    """A latent MoE's expert width (domain.model.MoE.latent_size); 0 = the hidden size."""
    routing_groups: Annotated[int, Field(ge=1, le=BOUNDS["experts"].high)] = 1
    """Expert groups of a group-limited router (config.json n_group; domain.model.MoE.routing_groups)."""
    routing_group_topk: Annotated[int, Field(ge=1, le=BOUNDS["experts"].high)] = 1
    """Groups a token may route to (config.json topk_group)."""


class MLARecord(Record):
    q_lora_rank: Annotated[int, Field(ge=0, le=BOUNDS["hidden"].high)]
    kv_lora_rank: Annotated[int, Bounded("hidden")]
    qk_nope_head_dim: Annotated[int, Bounded("head_dim")]
    qk_rope_head_dim: Annotated[int, Bounded("head_dim")]
    v_head_dim: Annotated[int, Bounded("head_dim")]


class SparseAttentionRecord(Record):
    topk: Annotated[int, Bounded("context")]
    indexer_heads: Annotated[int, Bounded("heads")]
    indexer_head_dim: Annotated[int, Bounded("head_dim")]
    indexer_layers: tuple[Annotated[int, Field(ge=0, le=BOUNDS["layers"].high)], ...] = ()
    """0-based layers that run their own indexer; empty: every layer (domain.model.SparseAttention)."""


class LinearAttentionRecord(Record):
    num_key_heads: Annotated[int, Bounded("heads")]
    num_value_heads: Annotated[int, Bounded("heads")]
    key_head_dim: Annotated[int, Bounded("head_dim")]
    value_head_dim: Annotated[int, Bounded("head_dim")]
    conv_kernel: Annotated[int, Field(ge=1, le=64)] = 4
    full_attention_interval: Annotated[int, Field(ge=2, le=BOUNDS["layers"].high)] = 4
    full_attention_layers: tuple[Annotated[int, Field(ge=0, le=BOUNDS["layers"].high)], ...] = ()
    """0-based indices of the full-attention layers, where they do not follow the interval rule (Kimi Linear)."""
    kind: Literal["gated_deltanet", "kimi_delta", "mamba2"] = "gated_deltanet"
    chunk_size: Annotated[int, Field(ge=0, le=BOUNDS["context"].high)] = 0
    """Tokens per chunk of the chunked kernel; 0: the kind's default (Mamba-2: 128)."""
    input_projections: Literal[0, 2, 4] = 0
    """transformers' nn.Linear modules of a Gated DeltaNet's input projection (Qwen3.5: 4; 0: Qwen3-Next's 2)."""


class ModelRecord(Record):
    id: RecordId
    name: str
    family: str
    """Hugging Face model_type or the paper family (gpt-3)."""
    num_layers: Annotated[int, Bounded("layers")]
    hidden: Annotated[int, Bounded("hidden")]
    num_heads: Annotated[int, Bounded("heads")]
    num_kv_heads: Annotated[int, Field(ge=0, le=BOUNDS["kv_heads"].high)] = 0
    head_dim: Annotated[int, Field(ge=0, le=BOUNDS["head_dim"].high)] = 0
    ffn: Annotated[int, Field(ge=0, le=BOUNDS["ffn"].high)]
    """The dense MLP's intermediate size; 0 in an MoE model whose non-MoE layers have no feed-forward block."""
    vocab: Annotated[int, Bounded("vocab")]
    mlp: Literal["gated", "plain"] = "gated"
    positions: Literal["rope", "learned", "alibi", "none"] = "rope"
    max_positions: Annotated[int, Field(ge=0, le=BOUNDS["context"].high)] = 0
    context_length: Annotated[int, Bounded("context")]
    """Longest sequence the model was trained or extended to."""
    tied_embeddings: bool = False
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    norm_bias: bool = False
    qkv_bias: bool = False
    attn_out_bias: bool = False
    mlp_bias: bool = False
    norms_per_layer: Annotated[int, Field(ge=1, le=4)] = 2
    qk_norm: bool = False
    fused_projections: bool = False
    embedding_norm: bool = False
    attention_sinks: bool = False
    rope_attention_factor: Annotated[float, Field(ge=1.0, le=10.0)] = 1.0
    """YaRN's factor on the rotary cos and sin (domain.model.Architecture.rope_attention_factor); 1 without YaRN."""
    sliding_window: Annotated[int, Field(ge=0, le=BOUNDS["context"].high)] = 0
    """Tokens each query attends back to in the local layers; 0 = full attention everywhere."""
    sliding_window_full_every: Annotated[int, Field(ge=0, le=BOUNDS["layers"].high)] = 0
    """Every n-th layer has full attention (Gemma 2 and gpt-oss: 2, Gemma 3: 6); 0 = every layer is local."""
    attention_output_gate: bool = False
    moe: MoERecord | None = None
    mla: MLARecord | None = None
    sparse_attention: SparseAttentionRecord | None = None
    """DeepSeek Sparse Attention over the MLA layers (domain.model.SparseAttention)."""
    linear_attention: LinearAttentionRecord | None = None
    """Linear-attention or Mamba-2 layers between the full-attention ones (domain.model.LinearAttention)."""
    ffn_free_layers: tuple[Annotated[int, Field(ge=0, le=BOUNDS["layers"].high)], ...] = ()
    """A dense model's 0-based layers that are a mixer without a feed-forward block (Nemotron-H;
    domain.model.Architecture.ffn_free_layers)."""
    extra_ffn_blocks: tuple[Annotated[int, Field(ge=0, le=BOUNDS["layers"].high)], ...] = ()
    """A dense model's layers with more than one feed-forward block after the mixer, once per extra block
    (domain.model.Architecture.extra_ffn_blocks)."""
    official_params: Annotated[float, Bounded("params")]
    """Published total parameter count."""
    official_active_params: Annotated[float, Bounded("params")] | None = None
    """Published parameters active per token (MoE)."""
    active_excludes_input_embedding: bool = False
    """The publisher's active count leaves out the input embedding table (a lookup, not a matmul)."""
    notes: list[str] = Field(default_factory=list)
    sources: Sources
    as_of: dt.date

    def to_domain(self) -> Architecture:
        return Architecture(
            id=self.id,
            name=self.name,
            family=self.family,
            num_layers=self.num_layers,
            hidden=self.hidden,
            num_heads=self.num_heads,
            num_kv_heads=self.num_kv_heads,
            head_dim=self.head_dim,
            ffn=self.ffn,
            vocab=self.vocab,
            mlp=self.mlp,
            positions=self.positions,
            max_positions=self.max_positions,
            tied_embeddings=self.tied_embeddings,
            norm=self.norm,
            norm_bias=self.norm_bias,
            qkv_bias=self.qkv_bias,
            attn_out_bias=self.attn_out_bias,
            mlp_bias=self.mlp_bias,
            norms_per_layer=self.norms_per_layer,
            qk_norm=self.qk_norm,
            fused_projections=self.fused_projections,
            embedding_norm=self.embedding_norm,
            attention_sinks=self.attention_sinks,
            rope_attention_factor=self.rope_attention_factor,
            attention_windows=sliding_windows(self.num_layers, self.sliding_window, self.sliding_window_full_every),
            moe=MoE(**self.moe.model_dump()) if self.moe else None,
            mla=MLA(**self.mla.model_dump()) if self.mla else None,
            sparse_attention=SparseAttention(**self.sparse_attention.model_dump()) if self.sparse_attention else None,
            attention_output_gate=self.attention_output_gate,
            linear_attention=LinearAttention(**self.linear_attention.model_dump()) if self.linear_attention else None,
            ffn_free_layers=self.ffn_free_layers,
            extra_ffn_blocks=self.extra_ffn_blocks,
            context_length=self.context_length,
            official_params=self.official_params,
            official_active_params=self.official_active_params or 0.0,
            active_excludes_input_embedding=self.active_excludes_input_embedding,
            notes=tuple(self.notes),
        )
