"""Published config.json values of MoE checkpoints, shared by the reader tests and the catalog record tests (each
comment names the checkpoint and where its values come from)."""

from __future__ import annotations

GLM47_FLASH = {  # zai-org/GLM-4.7-Flash config.json, as a public repository's test fixture copies it (bf16 checkpoint;
    # token ids left out); its shape is Glm4MoeLiteConfig's defaults and a Megatron script's for the model (slime
    # glm4.7-30B-A3B.sh). Z.ai's card names it 30B-A3B; Megatron Bridge's docs "about 30B total and 3B active".
    "model_type": "glm4_moe_lite", "architectures": ["Glm4MoeLiteForCausalLM"], "attention_bias": False,
    "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 10240, "max_position_embeddings": 202752,
    "moe_intermediate_size": 1536, "topk_method": "noaux_tc", "norm_topk_prob": True, "num_attention_heads": 20,
    "n_group": 1, "topk_group": 1, "n_routed_experts": 64, "n_shared_experts": 1, "routed_scaling_factor": 1.8,
    "num_experts_per_tok": 4, "first_k_dense_replace": 1, "num_hidden_layers": 47, "num_key_value_heads": 20,
    "num_nextn_predict_layers": 1, "partial_rotary_factor": 1.0, "rms_norm_eps": 1e-05, "rope_scaling": None,
    "rope_theta": 1000000, "tie_word_embeddings": False, "q_lora_rank": 768, "kv_lora_rank": 512,
    "qk_nope_head_dim": 192, "qk_rope_head_dim": 64, "v_head_dim": 256, "vocab_size": 154880,
}
GRANITE_SHARED = {  # ibm-research/moe-7b-1b-active-shared-experts, the one public granitemoeshared checkpoint (no
    # granite-3.x MoE has a shared expert: those are granitemoe). Its config.json is not stored here; these keys are
    # its shape as two public write-ups read it from that file (one counts its tensors: D=1536, L=40, QO=1536,
    # KVO=512, F=512, k=6, E=62, V=50257, tied head, shared_intermediate_size 1024). IBM calls it a test model and
    # gives no count beyond the name's "7b" and "1b active".
    "model_type": "granitemoeshared", "architectures": ["GraniteMoeSharedForCausalLM"], "hidden_size": 1536,
    "num_hidden_layers": 40, "num_attention_heads": 12, "num_key_value_heads": 4, "intermediate_size": 512,
    "num_local_experts": 62, "num_experts_per_tok": 6, "shared_intermediate_size": 1024, "vocab_size": 50257,
    "tie_word_embeddings": True, "embedding_multiplier": 12.0, "residual_multiplier": 0.22,
    "attention_multiplier": 0.0078125, "logits_scaling": 6.0,
}
FLEXOLMO = {  # allenai/FlexOlmo-7x7B-1T config.json: OLMo 2 7B's shape (Flex-public-7B-1T) with 7 experts, all 7
    # active and norm_topk_prob false, as a public analysis of the paper quotes that file; the card: "a
    # Mixture-of-Experts with 33B total parameters"
    "model_type": "flex_olmo", "architectures": ["FlexOlmoForCausalLM"], "hidden_size": 4096,
    "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
    "vocab_size": 100352, "max_position_embeddings": 4096, "num_experts": 7, "num_experts_per_tok": 7,
    "norm_topk_prob": False, "tie_word_embeddings": False, "rms_norm_eps": 1e-6, "rope_theta": 500000,
    "attention_bias": False,
}
TRINITY_NANO = {  # arcee-ai/Trinity-Nano-Preview config.json, as AWS's NxD Inference contribution copies it (its
    # auto_map left out; no layer_types key); the Trinity technical report (arXiv 2602.17004): 6B total, 1B active,
    # and Arcee's launch post: "only 800M non-embedding parameters active per token"
    "model_type": "afmoe", "architectures": ["AfmoeForCausalLM"], "global_attn_every_n_layers": 4, "head_dim": 128,
    "hidden_act": "silu", "hidden_size": 1024, "intermediate_size": 3072, "max_position_embeddings": 131072,
    "moe_intermediate_size": 256, "mup_enabled": True, "n_group": 1, "num_attention_heads": 8, "num_dense_layers": 2,
    "num_expert_groups": 1, "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 56,
    "num_key_value_heads": 2, "num_limited_groups": 1, "num_shared_experts": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": None, "rope_theta": 10000, "route_norm": True, "route_scale": 2.826, "score_func": "sigmoid",
    "sliding_window": 2048, "tie_word_embeddings": False, "topk_group": 1, "vocab_size": 200192,
}
TRINITY_MINI_LAYERS = ["sliding_attention"] * 3 + ["full_attention"]
TRINITY_MINI = {  # arcee-ai/Trinity-Mini: Nano's keys at Mini's shape, layer_types written out, as a serving
    # engine's test and the same NxD Inference contribution give its config.json; the report: 26B total, 3B active
    **TRINITY_NANO, "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 1024,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 4,
    "layer_types": TRINITY_MINI_LAYERS * 8,
}
TRINITY_LARGE = {  # arcee-ai/Trinity-Large-Preview: the NxD Inference contribution's overrides of Nano; its card:
    # "~398B" total, "~13B" active, 256 experts (1 shared), 4 active, 6 dense layers
    **TRINITY_NANO, "hidden_size": 3072, "intermediate_size": 12288, "moe_intermediate_size": 3072,
    "num_attention_heads": 48, "num_dense_layers": 6, "num_experts": 256, "num_experts_per_tok": 4,
    "num_hidden_layers": 60, "num_key_value_heads": 8, "sliding_window": 4096,
}
SMALL_LAYER_TYPES = ["mamba"] * 5 + ["attention"] + (["mamba"] * 9 + ["attention"]) * 3 + ["mamba"] * 4
"""36 Mamba-2 and 4 attention layers, the tally of granite-4.0-h-small's layer_types; the order here is an assumption
(the counts do not depend on it)."""
H_SMALL = {  # ibm-granite/granite-4.0-h-small config.json; its card: 32B parameters, 9B active
    "model_type": "granitemoehybrid", "hidden_size": 4096, "num_hidden_layers": 40, "num_attention_heads": 32,
    "num_key_value_heads": 8, "num_local_experts": 72, "num_experts_per_tok": 10, "shared_intermediate_size": 1536,
    "intermediate_size": 768, "mamba_d_state": 128, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_n_heads": 128,
    "mamba_n_groups": 1, "mamba_d_head": 64, "tie_word_embeddings": True, "vocab_size": 100352,
    "position_embedding_type": "nope", "layer_types": SMALL_LAYER_TYPES,
}
