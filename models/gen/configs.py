"""The zoo's model configurations: one entry per model, shared by the JAX/Flax definitions (the HLO
files), the PyTorch definitions (the ONNX exports and the eager/compile/ORT/TVM peers) and the
manifest. Sizes are the published architectures' where a step runs in seconds on 2 cores; where a
size is reduced, `reduced` says what and why."""

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
