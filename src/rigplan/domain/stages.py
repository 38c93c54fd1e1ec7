"""How a model's decoder layers are split over pipeline stages, as Megatron-Core and torchtitan do it.

A pipeline of pp ranks with vpp model chunks per rank has S = pp·vpp virtual stages. Virtual stage
k runs on rank k mod pp as its chunk k // pp (Megatron-Core's interleaved order; torchtitan's
"loop" style, torchtitan/distributed/pipeline_parallel.py `pipeline_module_split`). The embedding
sits on virtual stage 0 (rank 0), the final norm, LM head and loss on virtual stage S - 1 (rank
pp - 1). Layers are contiguous: stage k holds the layers after those of stages 0..k-1.

Rules, in order of precedence:

1. Explicit (`--stage-layers 7,8,...,7`): one count per virtual stage, summing to the layers.
2. First/last (`--first-stage-layers`, `--last-stage-layers`; Megatron-Core
   `--decoder-first-pipeline-num-layers` / `--decoder-last-pipeline-num-layers`): rank 0 and/or
   rank pp - 1 hold the given layers, the other ranks share the rest evenly. Megatron requires the
   rest to divide; rigplan gives the remainder one layer each to the earliest middle ranks.
3. Layer-equivalents (`--embedding-layer-weight E`, `--head-layer-weight H`): the embedding counts
   as E layers and the LM head + loss as H in the split; torchtitan's
   `generate_llm_fqn_per_model_part(num_stages, num_layers, input_weight, output_weight)`: each
   stage gets (L + E + H) // S layer-equivalents, the first (L + E + H) % S stages one more, and
   stage 0 gives E of them to the embedding, stage S - 1 gives H to the head. With E = H = 1 and
   (L + 2) divisible by S this is Megatron-Core's `--account-for-embedding-in-pipeline-split
   --account-for-loss-in-pipeline-split`.
4. Default: an even split when S divides the layers (Megatron's and torchtitan's requirement, and
   their behaviour); otherwise rule 3 with E = H = 1, torchtitan's defaults
   (`pipeline_parallel_first_stage_less_layers = pipeline_parallel_last_stage_less_layers = 1`).
   This is the Llama 3 405B split (126 layers, PP16: 7 | 8 x 14 | 7; Llama 3 paper, arXiv
   2407.21783, Sec. 3.3.2, "we reduce one Transformer layer each from the first and the last
   stages") and BLOOM-176B's (70 layers, PP12: 5 | 6 x 10 | 5; Megatron-DeepSpeed counts the
   embedding and head as pipeline layers).

A rank's chunks share its layers as evenly as possible (earlier chunks take the remainder) when rule
2 gives a rank a count that vpp does not divide.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rigplan.errors import InvalidSpec

if TYPE_CHECKING:
    import numpy as np

MAX_LAYER_WEIGHT = 64


@dataclass(frozen=True, kw_only=True, slots=True)
class PipelineSplit:
    """How the user asked the layers to be split (empty = rigplan's default rule)."""

    stage_layers: tuple[int, ...] = ()
    """Layers of each virtual stage, in virtual-stage order (pp·vpp entries)."""
    first_stage_layers: int | None = None
    """Layers on pipeline rank 0 (Megatron --decoder-first-pipeline-num-layers)."""
    last_stage_layers: int | None = None
    """Layers on pipeline rank pp - 1 (Megatron --decoder-last-pipeline-num-layers)."""
    embedding_weight: int | None = None
    """The embedding counted as this many layers in the split (torchtitan input_weight)."""
    head_weight: int | None = None
    """The LM head and loss counted as this many layers (torchtitan output_weight)."""
    given_by: str = "--stage-layers"
    """The option that gave stage_layers (--stage-layers, or --pipeline-layout read by domain.pipeline_layout)."""

    def __post_init__(self) -> None:
        if any(n < 0 for n in self.stage_layers):
            raise InvalidSpec(f"--stage-layers entries must be >= 0, got {','.join(map(str, self.stage_layers))}")
        for name, value in (("--first-stage-layers", self.first_stage_layers),
                            ("--last-stage-layers", self.last_stage_layers)):
            if value is not None and value < 0:
                raise InvalidSpec(f"{name} must be >= 0, got {value}")
        for name, value in (("--embedding-layer-weight", self.embedding_weight),
                            ("--head-layer-weight", self.head_weight)):
            if value is not None and not 0 <= value <= MAX_LAYER_WEIGHT:
                raise InvalidSpec(f"{name} must be between 0 and {MAX_LAYER_WEIGHT}, got {value}")
        first_last = self.first_stage_layers is not None or self.last_stage_layers is not None
        weights = self.embedding_weight is not None or self.head_weight is not None
        if sum((bool(self.stage_layers), first_last, weights)) > 1:
            raise InvalidSpec("choose one way to split the pipeline: --stage-layers, or --first-stage-layers/"
                              "--last-stage-layers, or --embedding-layer-weight/--head-layer-weight")


DEFAULT_SPLIT = PipelineSplit()


def _even(total: int, parts: int) -> list[int]:
    """total split into parts counts differing by at most one, the larger ones first."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def _weighted(num_layers: int, stages: int, embedding: int, head: int) -> list[int]:
    if stages == 1:
        return [num_layers]
    counts = _even(num_layers + embedding + head, stages)
    counts[0] -= embedding
    counts[-1] -= head
    return counts


def _ranks_to_chunks(per_rank: list[int], vpp: int) -> list[int]:
    """Per-rank counts to virtual-stage order (stage k = chunk k // pp of rank k % pp)."""
    pp = len(per_rank)
    chunks = [_even(n, vpp) for n in per_rank]
    return [chunks[k % pp][k // pp] for k in range(pp * vpp)]


def _rule(split: PipelineSplit, num_layers: int, pp: int, vpp: int) -> tuple[list[int], str]:
    stages = pp * vpp
    if split.stage_layers:
        return list(split.stage_layers), f"as given by {split.given_by}"
    if split.first_stage_layers is not None or split.last_stage_layers is not None:
        if pp == 1:
            raise InvalidSpec("--first-stage-layers/--last-stage-layers need pipeline parallelism (pp > 1)")
        first, last = split.first_stage_layers, split.last_stage_layers
        fixed = (first or 0) + (last or 0)
        middle = pp - (first is not None) - (last is not None)
        rest = num_layers - fixed
        if rest < 0 or (middle == 0 and rest != 0):
            raise InvalidSpec(f"--first-stage-layers {first} and --last-stage-layers {last} leave {rest} of the "
                              f"{num_layers} layers for {middle} other ranks")
        shares = _even(rest, middle) if middle else []
        per_rank = ([first] if first is not None else []) + shares + ([last] if last is not None else [])
        note = "Megatron first/last-stage split"
        if middle and rest % middle:
            note += f" ({rest} remaining layers do not divide over {middle} ranks: earlier ranks take one more)"
        return _ranks_to_chunks(per_rank, vpp), note
    if split.embedding_weight is not None or split.head_weight is not None:
        e, h = split.embedding_weight or 0, split.head_weight or 0
        return _weighted(num_layers, stages, e, h), (
            f"embedding counted as {e} and LM head + loss as {h} layer(s) in the split (torchtitan rule)")
    if num_layers % stages == 0:
        return [num_layers // stages] * stages, "even split"
    return _weighted(num_layers, stages, 1, 1), (
        f"{num_layers} layers do not divide into pp*vpp = {stages} stages: embedding and LM head + loss are "
        "counted as one layer each and the rest spread evenly, earlier stages taking one more (torchtitan's "
        "default; Megatron --account-for-embedding/loss-in-pipeline-split); set --stage-layers or "
        "--first-stage-layers/--last-stage-layers to choose")


@functools.lru_cache(maxsize=4096)
def _checked(split: PipelineSplit, num_layers: int, pp: int, vpp: int) -> tuple[tuple[int, ...], str]:
    stages = pp * vpp
    counts, note = _rule(split, num_layers, pp, vpp)
    if len(counts) != stages:
        raise InvalidSpec(f"{split.given_by} has {len(counts)} entries; pp*vpp = {pp}*{vpp} = {stages} virtual "
                          "stages need one each")
    if sum(counts) != num_layers:
        raise InvalidSpec(f"{split.given_by} {','.join(map(str, counts))} sums to {sum(counts)}, the model has "
                          f"{num_layers} layers")
    if min(counts) < 0:
        raise InvalidSpec(f"pp*vpp = {stages} virtual stages are more than the {num_layers} layers (plus embedding "
                          "and head) can fill")
    return tuple(counts), note


def virtual_stage_layers(split: PipelineSplit, num_layers: int, pp: int, vpp: int) -> tuple[int, ...]:
    """Layers of each virtual stage (rules in the module docstring); InvalidSpec when impossible."""
    return _checked(split, num_layers, int(pp), int(vpp))[0]


def split_problem(split: PipelineSplit, num_layers: int, pp: int, vpp: int) -> str | None:
    """Why this split cannot be built, or None."""
    try:
        virtual_stage_layers(split, num_layers, pp, vpp)
    except InvalidSpec as err:
        return str(err)
    return None


def describe_split(split: PipelineSplit, num_layers: int, pp: int, vpp: int) -> str:
    """One line for the report: the layers of each rank and the rule that set them."""
    counts, note = _checked(split, num_layers, int(pp), int(vpp))
    per_rank = [sum(counts[k] for k in range(r, len(counts), pp)) for r in range(pp)]
    shown = _runs(per_rank)
    chunks = f"; virtual stages {_runs(list(counts))}" if vpp > 1 else ""
    return f"pipeline split {shown} layers per rank{chunks} ({note})"


def _runs(values: list[int]) -> str:
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[i]:
            j += 1
        parts.append(f"{values[i]}" if j == i else f"{values[i]} x{j - i + 1}")
        i = j + 1
    return " | ".join(parts)


DensePattern = int | tuple[int, int] | frozenset[int]
"""Which layers are dense: a count of leading dense layers, (leading, step) where after the
leading ones every step-th layer is MoE (domain.model.MoE.moe_layer_step), or the set of dense layers
(domain.model.MoE.dense_layers)."""


def dense_layer_mask(num_layers: int, pattern: DensePattern) -> list[bool]:
    """True for each dense layer (index order) under the pattern."""
    if isinstance(pattern, frozenset):
        return [i in pattern for i in range(num_layers)]
    lead, step = (pattern, 1) if isinstance(pattern, int) else pattern
    return [i < lead or (i - lead + 1) % step != 0 for i in range(num_layers)]


@functools.lru_cache(maxsize=4096)
def _stage_counts(split: PipelineSplit, num_layers: int, first_dense: DensePattern, pp: int,
                  vpp: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(layers, dense layers) of each virtual stage, in virtual-stage order (stage k: chunk k // pp of
    rank k % pp)."""
    counts = virtual_stage_layers(split, num_layers, pp, vpp)
    mask = dense_layer_mask(num_layers, first_dense)
    dense, start = [], 0
    for n in counts:
        dense.append(sum(mask[start:start + n]))
        start += n
    return counts, tuple(dense)


def _plain(*values: Any) -> bool:
    """Whether every value is a Python number: one layout, computed without numpy (which the plan search's
    arrays bring; `rigplan memory` never imports it)."""
    return all(type(v) in (int, float, bool) for v in values)


@functools.lru_cache(maxsize=4096)
def _chunk_table(split: PipelineSplit, num_layers: int, first_dense: DensePattern, pp: int,
                 vpp: int) -> tuple[np.ndarray, np.ndarray]:
    """(layers, dense layers) of each (rank, chunk), shape (pp, vpp)."""
    import numpy as np

    counts, dense_counts = _stage_counts(split, num_layers, first_dense, pp, vpp)
    layers = np.zeros((pp, vpp))
    dense = np.zeros((pp, vpp))
    for k, (n, d) in enumerate(zip(counts, dense_counts, strict=True)):
        layers[k % pp, k // pp] = n
        dense[k % pp, k // pp] = d
    return layers, dense


class _FlatTables:
    """(layers, dense layers) of one chunk (None: all chunks of the rank) for (pp <= max_pp, vpp < width,
    rank) as flat tables indexed by (pp·width + vpp)·max_pp + rank, filled pair by pair as batches
    ask for them; every later lookup is one np.take."""

    def __init__(self, max_pp: int, width: int) -> None:
        import numpy as np

        self.max_pp, self.width = max_pp, width
        self.layers = np.zeros((max_pp + 1) * width * max_pp)
        self.dense = np.zeros_like(self.layers)
        self.filled = np.zeros((max_pp + 1) * width, dtype=bool)

    def fill(self, split: PipelineSplit, num_layers: int, first_dense: DensePattern, chunk: int | None,
             keys: Any) -> None:
        for k in keys:
            p, v = divmod(int(k), self.width)
            if chunk is not None and chunk >= v:
                self.filled[k] = True
                continue
            chunk_layers, chunk_dense = _chunk_table(split, num_layers, first_dense, p, v)
            self.filled[k] = True
            row = slice(int(k) * self.max_pp, int(k) * self.max_pp + p)
            if chunk is None:
                self.layers[row] = chunk_layers.sum(axis=1)
                self.dense[row] = chunk_dense.sum(axis=1)
            else:
                self.layers[row] = chunk_layers[:, chunk]
                self.dense[row] = chunk_dense[:, chunk]


@functools.lru_cache(maxsize=256)
def _flat_tables(split: PipelineSplit, num_layers: int, first_dense: DensePattern, chunk: int | None, max_pp: int,
                 width: int) -> _FlatTables:
    return _FlatTables(max_pp, width)


def _gather(split: PipelineSplit, num_layers: int, first_dense: DensePattern, pp: Any, vpp: Any, rank: Any,
            chunk: int | None) -> tuple[Any, Any]:
    """(layers, dense layers) of chunk `chunk` (None: all chunks of the rank) for each (pp, vpp, rank).

    (pp, vpp) are small integers: one flat table per model, chunk and pipeline range (rounded up to
    powers of two, so that batches of different sizes share it) holds every pair asked for so far,
    indexed by rank; a pair is computed the first time a batch holds it (InvalidSpec then, as
    virtual_stage_layers raises it, when the split cannot be built). One layout (Python numbers)
    is read from the virtual stages' counts directly, without numpy.
    """
    if _plain(pp, vpp, rank):
        p, v = int(pp), int(vpp)
        r = min(max(int(rank), 0), p - 1)
        counts, dense_counts = _stage_counts(split, num_layers, first_dense, p, v)
        stages = range(r, p * v, p) if chunk is None else [chunk * p + r] if chunk < v else []
        return float(sum(counts[k] for k in stages)), float(sum(dense_counts[k] for k in stages))
    import numpy as np

    pp_a, vpp_a, rank_a = np.broadcast_arrays(np.asarray(pp, dtype=np.int64), np.asarray(vpp, dtype=np.int64),
                                              np.asarray(rank, dtype=np.int64))
    if pp_a.size == 0:
        return np.zeros(pp_a.shape), np.zeros(pp_a.shape)
    max_pp = 1 << max(int(pp_a.max()) - 1, 0).bit_length()
    width = 1 << max(int(vpp_a.max()), 1).bit_length()
    tables = _flat_tables(split, num_layers, first_dense, chunk, max_pp, width)
    key = pp_a * width + vpp_a
    missing: Any
    if pp_a.size > 64:
        missing = np.flatnonzero((np.bincount(key.ravel(), minlength=tables.filled.size) > 0) & ~tables.filled)
    else:
        missing = [k for k in set(key.ravel().tolist()) if not tables.filled[k]]
    if len(missing):
        tables.fill(split, num_layers, first_dense, chunk, missing)
    flat = key * max_pp + np.minimum(np.maximum(rank_a, 0), pp_a - 1)
    layers = np.take(tables.layers, flat)
    dense = np.take(tables.dense, flat)
    if layers.ndim == 0:
        return float(layers), float(dense)
    return layers, dense


def chunk_layer_counts(split: PipelineSplit, num_layers: int, first_dense: DensePattern, pp: Any, vpp: Any,
                       rank: Any, chunk: int) -> tuple[Any, Any]:
    """(layers, dense layers) of model chunk `chunk` on pipeline rank `rank` (0 where chunk >= vpp).

    pp, vpp and rank may be numpy arrays; the split is computed once per distinct (pp, vpp).
    `first_dense`: which layers are dense (MoE models, DensePattern); the rest are MoE layers.
    """
    return _gather(split, num_layers, first_dense, pp, vpp, rank, chunk)


def rank_layer_counts(split: PipelineSplit, num_layers: int, first_dense: DensePattern, pp: Any, vpp: Any,
                      rank: Any) -> tuple[Any, Any]:
    """(layers, dense layers) on pipeline rank `rank`, all its chunks together (arrays allowed)."""
    return _gather(split, num_layers, first_dense, pp, vpp, rank, None)


@functools.lru_cache(maxsize=4096)
def _busiest_middle(split: PipelineSplit, num_layers: int, first_dense: DensePattern, pp: int, vpp: int,
                    moe_first: bool = False) -> int:
    if pp <= 2:
        return 0
    counts, dense = _stage_counts(split, num_layers, first_dense, pp, vpp)
    per_rank = [sum(counts[r::pp]) for r in range(pp)]
    moe = [per_rank[r] - sum(dense[r::pp]) for r in range(pp)]
    middle = range(1, pp - 1)
    if moe_first:
        return max(middle, key=lambda r: (moe[r], per_rank[r], -r))
    return max(middle, key=lambda r: (per_rank[r], moe[r], -r))


def _middle_rank(split: PipelineSplit, num_layers: int, first_dense: DensePattern, pp: Any, vpp: Any,
                 moe_first: bool) -> Any:
    if _plain(pp, vpp):
        return _busiest_middle(split, num_layers, first_dense, int(pp), int(vpp), moe_first)
    import numpy as np

    pp_a, vpp_a = np.broadcast_arrays(np.asarray(pp, dtype=np.int64), np.asarray(vpp, dtype=np.int64))
    out = np.zeros(pp_a.shape, dtype=np.int64)
    # One integer key per (pp, vpp): a 1-D unique is far cheaper than np.unique(axis=0) on rows.
    keys: Any = np.unique(pp_a.ravel() * 65_536 + vpp_a.ravel()) if pp_a.size else []
    for key in keys:
        p, v = divmod(int(key), 65_536)
        out[(pp_a == p) & (vpp_a == v)] = _busiest_middle(split, num_layers, first_dense, int(p), int(v), moe_first)
    return int(out) if out.ndim == 0 else out


def busiest_middle_rank(split: PipelineSplit, num_layers: int, first_dense: DensePattern, pp: Any, vpp: Any) -> Any:
    """The rank other than the first and last with the most layers (most MoE layers on a tie);
    0 when there is none (pp <= 2). Arrays allowed."""
    return _middle_rank(split, num_layers, first_dense, pp, vpp, moe_first=False)


def moe_heaviest_middle_rank(split: PipelineSplit, num_layers: int, first_dense: DensePattern, pp: Any,
                             vpp: Any) -> Any:
    """The rank other than the first and last with the most MoE layers (most layers, then the earliest, on a tie):
    a model whose first layers are dense (DeepSeek-V3's 3) can leave ranks 0 and 1 with dense layers only, and
    the first rank of expert layers holds the most bytes. 0 when there is none (pp <= 2). Arrays allowed."""
    return _middle_rank(split, num_layers, first_dense, pp, vpp, moe_first=True)
