"""The zoo's model configurations: one entry per model, shared by the JAX/Flax definitions (the HLO
files), the PyTorch definitions (the ONNX exports and the eager/compile/ORT/TVM peers) and the
manifest. Sizes are the published architectures' where a step runs in seconds on 2 cores; where a
size is reduced, `reduced` says what and why.

Every model has a `role`: "fit" for the twelve models the CPU backend's defaults (kernel and pass
defaults, cost-model settings) were fitted on, "report" for the held-out models added after, which
only report figures: nothing may be tuned or fitted on them (docs/zoo.md)."""

SEED = 0

# Inference batches timed by bench/peers and written as HLO; the training step uses `train_batch`.
INFER_BATCHES = (1, 8)

MODELS = {
    "gpt2": dict(
        description="GPT-2 small: 12 pre-LN decoder layers, d=768, 12 heads, tied LM head",
        vocab=50257, d_model=768, layers=12, heads=12, d_ff=3072, max_pos=1024, seq=128,
        train_batch=2, reduced="sequence length 128 (model supports 1024)"),
    "bert": dict(
        description="BERT-base with the masked-LM head: 12 post-LN encoder layers, d=768, 12 heads",
        vocab=30522, d_model=768, layers=12, heads=12, d_ff=3072, max_pos=512, type_vocab=2,
        seq=128, train_batch=2, reduced="sequence length 128 (model supports 512)"),
    "llama": dict(
        description="Llama-style decoder: RMSNorm, RoPE, SwiGLU, grouped-query attention (8 query "
                    "heads, 2 key/value heads), untied LM head",
        vocab=32000, d_model=512, layers=8, heads=8, kv_heads=2, d_ff=1408, seq=128,
        rope_theta=10000.0, train_batch=2,
        reduced="d=512, 8 layers (a 50M-parameter member of the family; Llama-2-7B is d=4096, 32 "
                "layers)"),
    "t5": dict(
        description="T5-small encoder-decoder: 6+6 layers, d=512, 8 heads, relative position "
                    "buckets, ReLU FFN, tied embeddings",
        vocab=32128, d_model=512, layers=6, heads=8, d_kv=64, d_ff=2048, buckets=32,
        max_distance=128, src_seq=64, tgt_seq=64, train_batch=2, reduced="sequences of 64 tokens"),
    "vit": dict(
        description="ViT-B/16: 224x224 images, 196 patches + class token, 12 layers, d=768",
        image=224, patch=16, d_model=768, layers=12, heads=12, d_ff=3072, classes=1000,
        train_batch=2, reduced=None),
    "resnet50": dict(
        description="ResNet-50 v1.5: bottleneck blocks [3,4,6,3], batch norm, 224x224",
        image=224, classes=1000, blocks=(3, 4, 6, 3), train_batch=2, reduced=None),
    "inception_v3": dict(
        description="Inception-v3: 299x299, Inception A/B/C/D/E blocks, batch norm (no aux head)",
        image=299, classes=1000, train_batch=2, reduced="no auxiliary classifier"),
    "mobilenet_v2": dict(
        description="MobileNet-v2 (width 1.0): inverted residuals with depthwise convolutions, "
                    "224x224",
        image=224, classes=1000, train_batch=2, reduced=None),
    "gnmt": dict(
        description="GNMT-like LSTM translator: 4-layer encoder (first bidirectional), 4-layer "
                    "decoder with additive attention, residual connections from layer 3",
        src_vocab=8000, tgt_vocab=8000, hidden=512, enc_layers=4, dec_layers=4, src_seq=32,
        tgt_seq=32, train_batch=4,
        reduced="hidden 512 and 4+4 layers (GNMT: 1024 and 8+8), vocabularies of 8,000"),
    "wavenet": dict(
        description="WaveNet-like stack: 3 x 10 dilated causal convolutions (dilation 1..512), "
                    "gated tanh-sigmoid units, residual and skip 1x1 convolutions, 256-way "
                    "mu-law output",
        samples=4096, classes=256, residual=64, skip=128, dilation_cycles=3, cycle_layers=10,
        train_batch=2, reduced="4,096 samples per example"),
    "dlrm": dict(
        description="DLRM: 13 dense features through a bottom MLP, 26 embedding tables, pairwise "
                    "dot-product interaction, top MLP",
        dense=13, tables=26, rows=10000, dim=64, bottom=(512, 256, 64), top=(512, 256, 1),
        train_batch=128, reduced="10,000 rows per table (Criteo tables reach 10^7)"),
    "graphsage": dict(
        description="GraphSAGE: 2 mean-aggregator layers over a fixed random graph (Cora-sized: "
                    "2,708 nodes, 10,556 edges, 1,433 features), 7 classes",
        nodes=2708, edges=10556, features=1433, hidden=128, classes=7, train_batch=1,
        reduced=None),
}

# The held-out models ("report"): architectures the defaults never saw.
REPORT_MODELS = {
    "convnext": dict(
        description="ConvNeXt-T: 4x4 patchify stem, stages of [3, 3, 9, 3] blocks at widths "
                    "96-768 (depthwise 7x7, LayerNorm, 4x inverted MLP with GELU, layer scale), "
                    "LayerNorm + 2x2 stride-2 downsampling between stages, 224x224",
        image=224, classes=1000, depths=(3, 3, 9, 3), dims=(96, 192, 384, 768),
        layer_scale=1e-6, train_batch=2, reduced=None),
    "efficientnet": dict(
        description="EfficientNet-B0: MBConv blocks (1x1 expansion, depthwise 3x3/5x5, "
                    "squeeze-excitation, linear 1x1 projection), SiLU, batch norm, 224x224",
        image=224, classes=1000, train_batch=2, reduced=None),
    "regnet": dict(
        description="RegNetY-400MF: stages of [1, 3, 6, 6] bottleneck blocks at widths "
                    "[48, 104, 208, 440], grouped 3x3 convolutions (group width 8), "
                    "squeeze-excitation (ratio 0.25), batch norm, 224x224",
        image=224, classes=1000, depths=(1, 3, 6, 6), widths=(48, 104, 208, 440), group_width=8,
        se_ratio=0.25, train_batch=2, reduced=None),
    "swin": dict(
        description="Swin-T: 4x4 patch embedding, stages of [2, 2, 6, 2] blocks (heads 3-24, "
                    "d=96-768) of 7x7 window attention, shifted by 3 in every second block, with "
                    "relative position bias, patch merging between stages, 224x224",
        image=224, classes=1000, patch=4, embed=96, depths=(2, 2, 6, 2), heads=(3, 6, 12, 24),
        window=7, mlp_ratio=4, train_batch=2, reduced=None),
    "whisper": dict(
        description="Whisper-tiny audio encoder: two conv1d (k=3, GELU; the second stride 2) on "
                    "an 80-bin log-mel spectrogram, sinusoidal positions, 4 pre-LN encoder "
                    "layers (d=384, 6 heads), then an audio-classification head (projection to "
                    "256, mean over time, 35 classes)",
        mels=80, frames=1000, d_model=384, layers=4, heads=6, d_ff=1536, proj=256, classes=35,
        train_batch=2,
        reduced="10 s of audio (1,000 frames, 500 positions; Whisper pads to 30 s: 3,000 "
                "frames)"),
    "unet": dict(
        description="Diffusion UNet (DDPM, CIFAR-10 layout): sinusoidal timestep embedding and "
                    "MLP, 4 resolutions (32-4) with channel multipliers [1, 2, 2, 2], 2 ResBlocks "
                    "(GroupNorm 32 + SiLU) per resolution down and 3 up with skip "
                    "concatenation, single-head self-attention at 16x16 and in the middle, "
                    "stride-2 convolutions down and nearest-neighbour upsampling; predicts the "
                    "noise (MSE loss)",
        image=32, channels=64, mults=(1, 2, 2, 2), res_blocks=2, attn_res=(16,), groups=32,
        timesteps=1000, train_batch=2, reduced="base width 64 (DDPM's CIFAR-10 model: 128)"),
    "moe": dict(
        description="Mixtral-style mixture-of-experts decoder: RMSNorm, RoPE, grouped-query "
                    "attention (8 query, 2 key/value heads), and per layer 8 SwiGLU experts with "
                    "a top-2 router (softmax over the top 2 logits); tokens are dispatched by "
                    "sorting their expert ids (argsort, gather into per-expert slices of "
                    "capacity 1.25 x tokens x 2 / 8, batched expert FFNs, weighted scatter-add "
                    "back)",
        vocab=32000, d_model=512, layers=4, heads=8, kv_heads=2, d_ff=1024, experts=8, top_k=2,
        capacity_factor=1.25, seq=128, rope_theta=10000.0, train_batch=2,
        reduced="d=512, 4 layers, expert width 1024 (Mixtral-8x7B: d=4096, 32 layers, 14336); "
                "no load-balancing loss in the training step"),
    "mamba": dict(
        description="Mamba-style selective state-space LM: pre-RMSNorm residual blocks of "
                    "in-projection to 2 x 1536 (x, gate z), causal depthwise conv1d (k=4) + SiLU, "
                    "input-dependent delta (rank 48, softplus), B, C (state 16), a sequential "
                    "scan over the sequence, D skip, SiLU(z) gating, out-projection; tied LM head",
        vocab=50280, d_model=768, layers=4, d_state=16, d_conv=4, expand=2, dt_rank=48, seq=128,
        train_batch=2,
        reduced="4 layers (Mamba-130M: 24), 128 tokens"),
    "lstm_lm": dict(
        description="2-layer LSTM language model (Zaremba et al.'s medium PTB model): embedding "
                    "650, two LSTM layers of 650, untied softmax over 10,000 words, 35 steps",
        vocab=10000, embed=650, hidden=650, layers=2, seq=35, train_batch=20, reduced=None),
}

for _name, _cfg in MODELS.items():
    _cfg["role"] = "fit"
for _name, _cfg in REPORT_MODELS.items():
    _cfg["role"] = "report"
MODELS.update(REPORT_MODELS)
