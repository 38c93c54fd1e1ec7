"""Bytes autograd saves for backward while each decoder layer of a Hugging Face causal LM runs.

    per layer = sum of the storages saved by the ops that run between the layer's forward pre-hook and its
                forward hook (torch.autograd.graph.saved_tensors_hooks), each storage once (views share
                storage), parameters excluded; a storage saved by more than one layer (the rotary cos/sin
                tables, computed once per model) is left to the model, not to any layer.

The exact measurement the activation estimators are checked against (tests/validation/
test_hf_saved_tensors.py on a CPU, benchmarks/gpu_session.py `saved` on a GPU). Left out: tensors the
model saves outside its decoder layers (embedding, final norm, LM head and loss).
"""

from __future__ import annotations

from typing import Any


def saved_bytes_per_layer(model: Any, input_ids: Any, attention_mask: Any = None) -> list[int]:
    """Saved bytes of each of `model.model.layers` during one forward of `input_ids` (labels = inputs), with
    `attention_mask` (1 = token, 0 = padding) when given."""
    import torch

    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    current: list[int | None] = [None]
    per_layer: dict[int, dict[int, int]] = {}

    def pack(tensor: Any) -> Any:
        if current[0] is not None:
            storage = tensor.untyped_storage()
            if storage.data_ptr() not in params:
                per_layer.setdefault(current[0], {})[storage.data_ptr()] = storage.nbytes()
        return tensor

    handles = []
    for index, layer in enumerate(model.model.layers):
        handles.append(layer.register_forward_pre_hook(lambda _m, _a, i=index: current.__setitem__(0, i)))
        handles.append(layer.register_forward_hook(lambda _m, _a, _o: current.__setitem__(0, None)))
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            extra = {} if attention_mask is None else {"attention_mask": attention_mask}
            loss = model(input_ids=input_ids, labels=input_ids, **extra).loss
        del loss
    finally:
        for handle in handles:
            handle.remove()
    counts: dict[int, int] = {}
    for storages in per_layer.values():
        for ptr in storages:
            counts[ptr] = counts.get(ptr, 0) + 1
    return [sum(n for ptr, n in storages.items() if counts[ptr] == 1) for _, storages in sorted(per_layer.items())]


def saved_bytes_in_layers(model: Any, layers: Any, input_ids: Any) -> int:
    """Bytes of the distinct storages `layers` (a model's decoder layers) save during one forward of `input_ids`
    (labels = inputs) and training mode: each storage once, a storage shared by layers (the residual stream)
    included once, parameters left out. Every saved tensor is held until the end, so a freed storage's address is
    not reused and miscounted; a tensor saved on a branch the loss does not reach counts too, alike in both runs of a
    comparison. The embedding output is made to require a gradient (as peft's gradient checkpointing does), so the
    first layer saves as the others do. For differences between two runs of one model (full training and LoRA)."""
    import torch

    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    inside = [False]
    saved: dict[int, int] = {}
    held: list[Any] = []

    def pack(tensor: Any) -> Any:
        storage = tensor.untyped_storage()
        if inside[0] and storage.data_ptr() not in params:
            saved[storage.data_ptr()] = storage.nbytes()
            held.append(tensor)
        return tensor

    handles = []
    for layer in layers:
        handles.append(layer.register_forward_pre_hook(lambda _m, _a: inside.__setitem__(0, True)))
        handles.append(layer.register_forward_hook(lambda _m, _a, _o: inside.__setitem__(0, False)))
    model.train()
    model.enable_input_require_grads()
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = model(input_ids=input_ids, labels=input_ids).loss
        del loss
    finally:
        for handle in handles:
            handle.remove()
    return sum(saved.values())
