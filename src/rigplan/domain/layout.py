"""How one training job is split across GPUs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rigplan.domain.stages import DEFAULT_SPLIT, PipelineSplit, split_problem
from rigplan.errors import InvalidSpec

ZeroStage = Literal[0, 1, 2, 3]


@dataclass(frozen=True, kw_only=True, slots=True)
class Layout:
    """Degrees of each parallel axis. The GPU count is tp * pp * dp * cp."""

    tp: int = 1
    """Tensor-parallel degree (Megatron column/row split inside each layer)."""
    pp: int = 1
    """Pipeline-parallel stages."""
    vpp: int = 1
    """Virtual stages (model chunks) per pipeline rank for the interleaved 1F1B schedule."""
    dp: int = 1
    """Data-parallel replicas (or ZeRO/FSDP shards)."""
    cp: int = 1
    """Context-parallel degree (the sequence split across GPUs, ring attention)."""
    ep: int = 1
    """Expert-parallel degree for MoE layers: experts are split over ep ranks."""
    etp: int = 0
    """Expert-tensor-parallel degree (each expert's ffn split over etp ranks); 0 means equal to tp, as
    Megatron-Core defaults expert_tensor_parallel_size. Megatron-Core's MoE parallel folding lays the
    expert layers out as etp x ep x expert-dp over the same tp*cp*dp GPUs of a pipeline stage that the
    attention layers use as tp x cp x dp."""
    zero: ZeroStage = 0
    """ZeRO stage over the data-parallel group (3 = FSDP full sharding)."""
    sequence_parallel: bool = False
    """Megatron sequence parallelism: norms and dropout split over tp as well."""
    split: PipelineSplit = DEFAULT_SPLIT
    """How the layers are split over the pipeline stages (domain.stages)."""

    def __post_init__(self) -> None:
        degrees = {"tp": self.tp, "pp": self.pp, "vpp": self.vpp, "dp": self.dp, "cp": self.cp, "ep": self.ep}
        bad = [f"{k}={v}" for k, v in degrees.items() if not isinstance(v, int) or v < 1]
        if bad:
            raise InvalidSpec(f"parallel degrees must be integers >= 1: {', '.join(bad)}")
        if self.zero not in (0, 1, 2, 3):
            raise InvalidSpec(f"--zero must be 0, 1, 2 or 3, got {self.zero}")
        if self.etp < 0 or not isinstance(self.etp, int):
            raise InvalidSpec(f"--etp must be an integer >= 1 (0: equal to tp), got {self.etp}")
        stage = self.tp * self.cp * self.dp
        if stage % (self.ep * self.expert_tp):
            fitting = [e for e in range(1, stage + 1) if stage % (e * self.expert_tp) == 0]
            more = (f"; or --gpus {self.ep * self.expert_tp * self.pp} or a multiple of it"
                    if stage < self.ep * self.expert_tp else "")
            raise InvalidSpec(f"ep*etp = {self.ep}*{self.expert_tp} must divide the GPUs of a pipeline stage, "
                              f"tp*cp*dp = {self.tp}*{self.cp}*{self.dp} = {stage} "
                              f"(Megatron-Core MoE parallel folding; ep that do at etp {self.expert_tp}: "
                              f"{', '.join(map(str, fitting[-6:])) or 'none'}{more})")
        if self.vpp > 1 and self.pp == 1:
            raise InvalidSpec(f"vpp={self.vpp} needs pipeline parallelism (pp > 1)")
        if self.sequence_parallel and self.tp == 1:
            raise InvalidSpec("--sequence-parallel needs tp > 1")

    @property
    def num_gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    @property
    def expert_tp(self) -> int:
        """The expert-tensor-parallel degree in force (etp, or tp when etp is 0)."""
        return self.etp or self.tp

    @property
    def expert_dp(self) -> int:
        """Replicas of each expert shard in a pipeline stage: tp*cp*dp / (ep*etp)."""
        return self.tp * self.cp * self.dp // (self.ep * self.expert_tp)

    @property
    def sequence_shards(self) -> int:
        """How many ways activations along the sequence are split."""
        return self.cp * (self.tp if self.sequence_parallel else 1)


def heads_per_cp_problem(num_heads: int, num_kv_heads: int, tp: int, cp: int) -> str | None:
    """Why all-to-all context parallelism cannot split these heads over tp x cp ranks (None if it can): each cp
    rank takes heads/cp of the heads and of the kv heads that its tensor-parallel rank holds (one, shared with
    other ranks, where tp exceeds the kv heads)."""
    heads, kv = num_heads // tp, max(num_kv_heads // tp, 1)
    if cp > 1 and (heads % cp or kv % cp):
        return (f"--cp-comm-type a2a splits the heads over context-parallel ranks: heads per tensor-parallel rank "
                f"({heads}) and kv-heads ({kv}) must be divisible by cp={cp}; use --cp-comm-type p2p or a cp "
                "that divides both")
    return None


def linear_heads_problem(num_key_heads: int, num_value_heads: int, tp: int, cp: int) -> str | None:
    """Why tp x cp ranks cannot split a hybrid model's linear-attention heads (None if they can): Megatron-Core's
    GatedDeltaNet splits its key and value heads by tp (num_value_heads // tp_size) and, under context
    parallelism, turns the sequence split into a head split by cp (all-to-all, tensor_a2a_cp2hp)."""
    ranks = tp * cp
    if num_key_heads % ranks or num_value_heads % ranks:
        return (f"tp x cp = {tp} x {cp} must divide the linear-attention key heads ({num_key_heads}) and value heads "
                f"({num_value_heads}): each rank holds whole heads")
    return None


def check_layout_for_model(layout: Layout, *, num_layers: int, num_heads: int, num_kv_heads: int,
                           num_experts: int, seq_len: int) -> None:
    """Raise InvalidSpec, showing every factor, when the layout cannot split this model."""
    problems: list[str] = []
    if num_heads % layout.tp or (num_kv_heads % layout.tp and layout.tp % num_kv_heads):
        problems.append(f"tp={layout.tp} must divide heads={num_heads}, and divide kv_heads={num_kv_heads} or be a "
                        "multiple of it (each kv head then held by tp/kv_heads ranks)")
    split = split_problem(layout.split, num_layers, layout.pp, layout.vpp)
    if split:
        problems.append(split)
    if layout.ep > 1 and num_experts == 0:
        problems.append(f"ep={layout.ep} needs a mixture-of-experts model")
    elif num_experts and num_experts % layout.ep:
        stage = layout.tp * layout.cp * layout.dp
        divisors = [d for d in range(2, num_experts + 1)
                    if num_experts % d == 0 and stage % (d * layout.expert_tp) == 0]
        fits = [d for d in divisors if d < layout.ep][-2:] + [d for d in divisors if d > layout.ep][:2]
        problems.append(f"ep={layout.ep} must divide experts={num_experts}"
                        + (f" (ep that do: {', '.join(map(str, fits))})" if fits else ""))
    if seq_len % layout.cp:
        problems.append(f"cp={layout.cp} must divide the sequence length {seq_len}")
    if problems:
        raise InvalidSpec("; ".join(problems))
