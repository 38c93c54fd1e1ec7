"""A port of PyTorch's CUDA caching-allocator block rules, and a recorder of training-step allocation traces.

Used by benchmarks/allocator_replay.py, whose results are the fractions of estimate/allocator.py.

The port (`Allocator`, `replay`) follows c10/cuda/CUDACachingAllocator.cpp on one stream: sizes rounded
to 512 B; requests <= 1 MiB from the small pool (2 MiB segments), larger from the large pool (20 MiB
segments below 10 MiB, else the request rounded up to 2 MiB); best fit (the smallest cached free block
>= the request); a block is split when the remainder is >= 512 B (small pool) or > 1 MiB (large pool);
freed blocks merge with free neighbours of the same segment; segments go back to the driver only when a
cudaMalloc fails. With expandable segments one segment per pool grows in 2 MiB (small) or 20 MiB (large)
pages. The constants are c10/core/AllocatorConfig.h's (kMinBlockSize, kSmallSize, kSmallBuffer,
kMinLargeAlloc, kRoundLarge; tests/measure compares them with the installed torch's header). Reported per
trace: the peak allocated and reserved bytes, and the peak of what an out-of-memory retry could not give
back (segments, or expandable pages, holding a live block).

`record` runs transformers' LlamaForCausalLM under FakeTensorMode (real shapes, no memory) with a
TorchDispatchMode that logs each new storage and, through a weakref, its release, in program order; torch
and transformers are imported only there.

Left out: several streams (each keeps its own cache), max_split_size_mb, roundup_power2_divisions,
garbage_collection_threshold, the release-and-retry itself (the needed peak is what it could not free).
"""

from __future__ import annotations

import bisect
import math
import random
import weakref
from typing import Any

K_MIN_BLOCK = 512
K_SMALL_SIZE = 1 << 20
K_SMALL_BUFFER = 2 << 20
K_LARGE_BUFFER = 20 << 20
K_MIN_LARGE_ALLOC = 10 << 20
K_ROUND_LARGE = 2 << 20
GiB = 2**30


def round_size(size: int) -> int:
    return K_MIN_BLOCK if size < K_MIN_BLOCK else K_MIN_BLOCK * -(-size // K_MIN_BLOCK)


def segment_size(size: int) -> int:
    if size <= K_SMALL_SIZE:
        return K_SMALL_BUFFER
    if size < K_MIN_LARGE_ALLOC:
        return K_LARGE_BUFFER
    return K_ROUND_LARGE * -(-size // K_ROUND_LARGE)


class Block:
    __slots__ = ("addr", "free", "next", "prev", "seg", "size", "small")

    def __init__(self, addr: int, size: int, seg: int, small: bool) -> None:
        self.addr, self.size, self.seg, self.small = addr, size, seg, small
        self.prev: Block | None = None
        self.next: Block | None = None
        self.free = True


class Pool:
    """Free blocks ordered by (size, address), as the allocator's BlockPool set."""

    def __init__(self) -> None:
        self.keys: list[tuple[int, int]] = []
        self.blocks: dict[tuple[int, int], Block] = {}

    def add(self, b: Block) -> None:
        bisect.insort(self.keys, (b.size, b.addr))
        self.blocks[(b.size, b.addr)] = b

    def remove(self, b: Block) -> None:
        i = bisect.bisect_left(self.keys, (b.size, b.addr))
        del self.keys[i]
        del self.blocks[(b.size, b.addr)]

    def best_fit(self, size: int) -> Block | None:
        i = bisect.bisect_left(self.keys, (size, -1))
        return None if i == len(self.keys) else self.blocks[self.keys[i]]


class Allocator:
    """The caching allocator's block rules on one stream (module docstring)."""

    def __init__(self, expandable: bool = False) -> None:
        self.expandable = expandable
        self.pools = {True: Pool(), False: Pool()}
        self.next_addr = 0
        self.reserved = self.allocated = 0
        self.peak_reserved = self.peak_allocated = self.peak_needed = 0
        self.live: dict[int, Block] = {}
        self.seg_size: dict[int, int] = {}
        self.seg_live: dict[int, int] = {}
        self.busy = 0
        self.tail: dict[bool, Block | None] = {}
        self.base: dict[bool, int] = {}
        self.frontier: dict[bool, int] = {}
        self.page_live: dict[tuple[bool, int], int] = {}
        self.marks: list[int] = []

    def malloc(self, sid: int, nbytes: int) -> None:
        size = round_size(nbytes)
        small = size <= K_SMALL_SIZE
        pool = self.pools[small]
        b = pool.best_fit(size)
        if b is not None:
            pool.remove(b)
        elif self.expandable:
            b = self._expand(size, small)
        else:
            b = Block(self.next_addr, segment_size(size), self.next_addr, small)
            self.next_addr += b.size + (1 << 40)
            self.reserved += b.size
            self.seg_size[b.seg], self.seg_live[b.seg] = b.size, 0
        remaining = b.size - size
        if remaining >= K_MIN_BLOCK if small else remaining > K_SMALL_SIZE:
            rest = Block(b.addr + size, remaining, b.seg, small)
            rest.prev, rest.next = b, b.next
            if b.next is not None:
                b.next.prev = rest
            b.next, b.size = rest, size
            pool.add(rest)
            if self.expandable and self.tail.get(small) is b:
                self.tail[small] = rest
        b.free = False
        self.live[sid] = b
        self.allocated += b.size
        self._hold(b, +1)
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        self.peak_reserved = max(self.peak_reserved, self.reserved)

    def _expand(self, size: int, small: bool) -> Block:
        page = K_SMALL_BUFFER if small else K_LARGE_BUFFER
        if small not in self.base:
            self.base[small] = self.frontier[small] = self.next_addr
            self.next_addr += 1 << 50
            self.tail[small] = None
        last = self.tail[small]
        if last is not None and last.free:
            self.pools[small].remove(last)
            b = last
        else:
            start = self.base[small] if last is None else last.addr + last.size
            b = Block(start, 0, self.base[small], small)
            b.prev = last
            if last is not None:
                last.next = b
            self.tail[small] = b
        end = b.addr + size
        if end > self.frontier[small]:
            grow = -(-(end - self.frontier[small]) // page) * page
            self.frontier[small] += grow
            self.reserved += grow
        b.size = self.frontier[small] - b.addr
        return b

    def _hold(self, b: Block, sign: int) -> None:
        """Track what could not be released on an out-of-memory retry: segments (or expandable pages)
        that hold a live block."""
        if not self.expandable:
            self.seg_live[b.seg] += sign
            if self.seg_live[b.seg] == (1 if sign > 0 else 0):
                self.busy += sign * self.seg_size[b.seg]
        else:
            page = K_SMALL_BUFFER if b.small else K_LARGE_BUFFER
            for p in range(b.addr // page, (b.addr + b.size - 1) // page + 1):
                n = self.page_live.get((b.small, p), 0) + sign
                if n == 0:
                    del self.page_live[(b.small, p)]
                    self.busy -= page
                else:
                    if n == 1 and sign > 0:
                        self.busy += page
                    self.page_live[(b.small, p)] = n
        self.peak_needed = max(self.peak_needed, self.busy)

    def free(self, sid: int) -> None:
        b = self.live.pop(sid)
        self.allocated -= b.size
        self._hold(b, -1)
        b.free = True
        pool = self.pools[b.small]
        for nb in (b.prev, b.next):
            if nb is None or not nb.free:
                continue
            pool.remove(nb)
            first, second = (nb, b) if nb is b.prev else (b, nb)
            first.size += second.size
            first.next = second.next
            if second.next is not None:
                second.next.prev = first
            if self.expandable and self.tail.get(b.small) is second:
                self.tail[b.small] = first
            b = first
        pool.add(b)


def replay(events: list[tuple[str, int, int]], expandable: bool) -> Allocator:
    a = Allocator(expandable)
    for kind, sid, nbytes in events:
        if kind == "m":
            a.marks.append(a.allocated)
        elif kind == "a":
            a.malloc(sid, nbytes)
        elif sid in a.live:
            a.free(sid)
    return a


# ---- trace recording (needs torch and transformers) ----

DIMS = {"8b": (4096, 14336, 32, 8), "1b": (2048, 8192, 32, 8)}
VOCAB = 128256


def record(method: str, layers: int, lengths: tuple[int, ...], micro_batch: int, checkpointing: bool,
           dims: str, foreach: bool) -> list[tuple[str, int, int]]:
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_map_only
    from torch.utils.weak import WeakIdKeyDictionary
    from transformers import LlamaConfig, LlamaForCausalLM

    class Recorder(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.enabled = True
            self.events: list[tuple[str, int, int]] = []
            self.ids: Any = WeakIdKeyDictionary()
            self.refs: dict[int, Any] = {}
            self.count = 0

        def track(self, t: Any) -> None:
            st = t.untyped_storage()
            if st in self.ids or st.nbytes() == 0:
                return
            sid, self.count = self.count, self.count + 1
            self.ids[st] = sid
            self.refs[sid] = weakref.ref(st, lambda _r, s=sid: self.events.append(("f", s, 0)))
            self.events.append(("a", sid, st.nbytes()))

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            if self.enabled:
                tree_map_only(torch.Tensor, self.track, out)
            return out

    class Dequantized(torch.autograd.Function):
        """An NF4 matmul as bitsandbytes >= 0.43.2 and torchao run it: the bf16 weight is rebuilt for
        the forward and again for the backward, and only the packed weight is saved."""

        @staticmethod
        def forward(ctx: Any, x: Any, packed: Any, shape: Any) -> Any:
            ctx.shape = shape
            ctx.save_for_backward(packed)
            return F.linear(x, torch.empty(shape, dtype=x.dtype))

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return grad @ torch.empty(ctx.shape, dtype=grad.dtype), None, None

    class Adapted(nn.Module):
        def __init__(self, linear: nn.Linear, quantized: bool, adapter: bool) -> None:
            super().__init__()
            out_f, in_f = linear.weight.shape
            self.shape = (out_f, in_f)
            self.quantized = quantized
            if quantized:
                self.packed = nn.Parameter(torch.empty(out_f * in_f // 2, dtype=torch.uint8), requires_grad=False)
                self.absmax = nn.Parameter(torch.empty(out_f * in_f // 64), requires_grad=False)
            else:
                self.base = linear
            self.adapter = adapter
            if adapter:
                self.lora_a = nn.Parameter(torch.empty(8, in_f))
                self.lora_b = nn.Parameter(torch.empty(out_f, 8))

        def forward(self, x: Any) -> Any:
            y = Dequantized.apply(x, self.packed, self.shape) if self.quantized else self.base(x)
            if self.adapter:
                y = y + F.linear(F.linear(x, self.lora_a), self.lora_b) * 2.0
            return y

    hidden, ffn, heads, kv_heads = DIMS[dims]
    rec = Recorder()
    with FakeTensorMode(allow_non_fake_inputs=True), rec:
        torch.set_default_dtype(torch.bfloat16)
        rec.enabled = False
        model = LlamaForCausalLM(LlamaConfig(
            hidden_size=hidden, intermediate_size=ffn, num_attention_heads=heads, num_key_value_heads=kv_heads,
            num_hidden_layers=layers, vocab_size=VOCAB, attn_implementation="sdpa"))
        if method != "full":
            for p in model.parameters():
                p.requires_grad_(False)
            for layer in model.model.layers:
                for parent in (layer.self_attn, layer.mlp):
                    for name, child in list(parent.named_children()):
                        if isinstance(child, nn.Linear) and (method == "qlora" or name in ("q_proj", "v_proj")):
                            setattr(parent, name, Adapted(child, method == "qlora", name in ("q_proj", "v_proj")))
        if checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.config.use_cache = False
        model.train()
        rec.enabled = True
        for t in list(model.parameters()) + list(model.buffers()):
            rec.track(t)
        trainable = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(trainable, lr=1e-4, foreach=foreach, fused=not foreach)
        for tokens in lengths:
            rec.events.append(("m", 0, 0))
            ids = torch.randint(0, VOCAB, (micro_batch, tokens))
            out = model(input_ids=ids, labels=ids)
            out.loss.backward()
            del out
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        torch.set_default_dtype(torch.float32)
    return rec.events


def padded_lengths(count: int, rng: random.Random, batch: int = 2, longest: int = 2048) -> tuple[int, ...]:
    """Per-batch padded lengths: the longest of `batch` samples drawn from a log-normal around 35% of
    `longest` (instruction data of varied length, padded to each batch's longest sample)."""
    def sample() -> int:
        return max(16, min(2 * longest, int(rng.lognormvariate(math.log(0.35 * longest), 0.6))))
    return tuple(max(sample() for _ in range(batch)) for _ in range(count))


def scenario(label: str, events: list[tuple[str, int, int]]) -> dict[str, Any]:
    caching, expandable = replay(events, False), replay(events, True)
    held = min(caching.marks[1:] or caching.marks)
    churn = caching.peak_allocated - held
    row = {"label": label, "allocated_gib": caching.peak_allocated / GiB, "held_between_steps_gib": held / GiB,
           "churn_gib": churn / GiB,
           "caching_reserved_gib": caching.peak_reserved / GiB, "caching_needed_gib": caching.peak_needed / GiB,
           "expandable_reserved_gib": expandable.peak_reserved / GiB,
           "expandable_needed_gib": expandable.peak_needed / GiB}
    for key, value in (("caching_reserved", caching.peak_reserved), ("caching_needed", caching.peak_needed),
                       ("expandable_reserved", expandable.peak_reserved),
                       ("expandable_needed", expandable.peak_needed)):
        row[key + "_over_churn"] = (value - caching.peak_allocated) / churn
    return row
