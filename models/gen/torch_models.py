"""PyTorch definitions of the zoo's models at configs.py's sizes, with seeded random weights.

`make(name, batch)` returns (module in eval mode, inputs) whose forward returns one logits tensor.
Weights come from torch.manual_seed(SEED) before the module is built (nothing is downloaded);
inputs come from a generator seeded SEED + 1, so a model's weights do not depend on the batch.

Inputs and outputs per model (B = batch; token ids are int64):
    gpt2, llama    (input_ids [B, seq])                                  -> [B, seq, vocab]
    bert           (input_ids, token_type_ids, attention_mask [B, seq])  -> [B, seq, vocab]
    t5             (input_ids [B, src_seq], decoder_input_ids [B, tgt_seq]) -> [B, tgt_seq, vocab]
    vit, resnet50, mobilenet_v2, inception_v3  (images [B, 3, H, W] f32) -> [B, classes]
    gnmt           (src [B, src_seq], tgt [B, tgt_seq])                  -> [B, tgt_seq, tgt_vocab]
    wavenet        (one-hot mu-law samples [B, 256, samples] f32)       -> [B, 256, samples]
    dlrm           (dense [B, 13] f32, sparse [B, 26] row ids)           -> [B] logits
    graphsage      (features [b*nodes, features] f32, src [b*edges], dst [b*edges])
                                                                         -> [b*nodes, classes]
"""

import torch
import torch.nn.functional as F
from torch import nn

from configs import MODELS, SEED


class LogitsOnly(nn.Module):
    """A Hugging Face model whose forward takes positional tensors and returns only the logits.
    With ones_mask, an all-ones attention mask is passed: without one, transformers checks the
    position ids for packed sequences with torch.diff, which the ONNX exporter lacks."""

    def __init__(self, model, input_names, ones_mask=False):
        super().__init__()
        self.model = model
        self.input_names = input_names
        self.ones_mask = ones_mask

    def forward(self, *inputs):
        kwargs = dict(zip(self.input_names, inputs))
        if self.ones_mask:
            kwargs["attention_mask"] = torch.ones_like(inputs[0])
        return self.model(**kwargs, use_cache=False, return_dict=True).logits


class Lstm(nn.Module):
    """One unidirectional LSTM layer over [B, T, in] written out step by step (exports to plain
    MatMul/Sigmoid/Tanh nodes rather than ONNX's LSTM op, which TVM's frontend lacks)."""

    def __init__(self, inputs, hidden, reverse=False):
        super().__init__()
        self.hidden = hidden
        self.reverse = reverse
        self.x_proj = nn.Linear(inputs, 4 * hidden)              # gates i, f, g, o
        self.h_proj = nn.Linear(hidden, 4 * hidden, bias=False)

    def forward(self, x):
        gates_x = self.x_proj(x)                                 # all steps in one matmul
        w_hh = self.h_proj.weight.t()                            # transposed once, not per step
        batch, steps = x.shape[0], x.shape[1]
        h = x.new_zeros(batch, self.hidden)
        c = x.new_zeros(batch, self.hidden)
        outputs = [None] * steps
        order = range(steps - 1, -1, -1) if self.reverse else range(steps)
        for t in order:
            # split with sizes (not chunk) exports as one Split rather than shape arithmetic
            i, f, g, o = torch.split(gates_x[:, t] + h @ w_hh, self.hidden, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outputs[t] = h
        return torch.stack(outputs, dim=1)


class AdditiveAttention(nn.Module):
    """Bahdanau attention: score(q, k) = v . tanh(W_q q + W_k k), softmax over source steps."""

    def __init__(self, hidden):
        super().__init__()
        self.query = nn.Linear(hidden, hidden, bias=False)
        self.key = nn.Linear(hidden, hidden, bias=False)
        self.v = nn.Linear(hidden, 1, bias=False)

    def forward(self, queries, keys):
        # queries [B, Tq, H], keys [B, Tk, H] -> contexts [B, Tq, H]
        mixed = torch.tanh(self.query(queries).unsqueeze(2) + self.key(keys).unsqueeze(1))
        weights = torch.softmax(self.v(mixed).squeeze(-1), dim=-1)   # [B, Tq, Tk]
        return torch.bmm(weights, keys)


class Gnmt(nn.Module):
    """GNMT-like translator, as jax_other.GNMT. Encoder: layer 1 bidirectional (H/2 per
    direction, concatenated), layers 3+ residual. Decoder (teacher-forced over the target
    tokens): layer 1 reads the target embeddings, its outputs query the attention over the
    encoder outputs, layers 2+ read [previous layer's output, context] (residual from layer 3),
    and a linear layer projects [last output, context] to the target vocabulary."""

    def __init__(self, src_vocab, tgt_vocab, hidden, enc_layers, dec_layers, **_):
        super().__init__()
        h = hidden
        self.src_embed = nn.Embedding(src_vocab, h)
        self.tgt_embed = nn.Embedding(tgt_vocab, h)
        self.enc_fwd = Lstm(h, h // 2)
        self.enc_bwd = Lstm(h, h // 2, reverse=True)
        self.encoder = nn.ModuleList(Lstm(h, h) for _ in range(enc_layers - 1))
        self.dec_first = Lstm(h, h)
        self.attention = AdditiveAttention(h)
        self.decoder = nn.ModuleList([Lstm(2 * h, h) for _ in range(dec_layers - 1)])
        self.project = nn.Linear(2 * h, tgt_vocab)

    def forward(self, src, tgt):
        x = self.src_embed(src)
        x = torch.cat([self.enc_fwd(x), self.enc_bwd(x)], dim=-1)
        for layer_index, layer in enumerate(self.encoder, start=2):
            y = layer(x)
            x = y + x if layer_index >= 3 else y
        memory = x
        y = self.dec_first(self.tgt_embed(tgt))
        context = self.attention(y, memory)
        for layer_index, layer in enumerate(self.decoder, start=2):
            out = layer(torch.cat([y, context], dim=-1))
            y = out + y if layer_index >= 3 else out
        return self.project(torch.cat([y, context], dim=-1))


class WaveNet(nn.Module):
    """WaveNet-like stack, as jax_other.WaveNet. A causal convolution of kernel 2 maps the one-hot
    mu-law input [B, 256, T] to R channels; each layer applies a causal convolution of kernel 2
    (left-padded by its dilation) to 2R channels, gates them as tanh(a) * sigmoid(b), and adds a
    1x1 residual convolution to its input and a 1x1 skip convolution to the skip sum; the head is
    relu, 1x1, relu, 1x1 to 256 classes per sample."""

    def __init__(self, classes, residual, skip, dilation_cycles, cycle_layers, **_):
        super().__init__()
        self.causal = nn.Conv1d(classes, residual, 2)
        self.channels = residual
        self.dilations = [2 ** i for _ in range(dilation_cycles) for i in range(cycle_layers)]
        self.dilated = nn.ModuleList(
            nn.Conv1d(residual, 2 * residual, 2, dilation=d) for d in self.dilations)
        self.residual = nn.ModuleList(nn.Conv1d(residual, residual, 1) for _ in self.dilations)
        self.skip = nn.ModuleList(nn.Conv1d(residual, skip, 1) for _ in self.dilations)
        self.head1 = nn.Conv1d(skip, skip, 1)
        self.head2 = nn.Conv1d(skip, classes, 1)

    def forward(self, onehot):
        x = self.causal(F.pad(onehot, (1, 0)))                   # [B, R, T]
        skips = 0
        for d, dilated, residual, skip in zip(self.dilations, self.dilated, self.residual,
                                              self.skip):
            # split with sizes, not chunk, whose exported shape arithmetic leaves TVM without
            # static shapes
            a, b = torch.split(dilated(F.pad(x, (d, 0))), self.channels, dim=1)
            z = torch.tanh(a) * torch.sigmoid(b)
            skips = skips + skip(z)
            x = x + residual(z)
        return self.head2(F.relu(self.head1(F.relu(skips))))


def mlp(sizes, final_relu):
    """Linear layers through `sizes`, ReLU after each (after the last one only if final_relu)."""
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2 or final_relu:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class Dlrm(nn.Module):
    """DLRM, as jax_other.DLRM: bottom MLP (ReLU throughout) on the dense features, one row
    looked up per table, dot products of every pair of the 27 vectors (i < j, no diagonal)
    concatenated with the bottom output, top MLP (ReLU between layers) to one logit per example
    (no sigmoid: the click probability is its sigmoid)."""

    def __init__(self, dense, tables, rows, dim, bottom, top, **_):
        super().__init__()
        self.bottom = mlp((dense,) + tuple(bottom), final_relu=True)
        self.tables = nn.ModuleList(nn.Embedding(rows, dim) for _ in range(tables))
        vectors = tables + 1
        i, j = torch.triu_indices(vectors, vectors, offset=1)
        self.register_buffer("pairs", i * vectors + j, persistent=False)
        self.top = mlp((dim + len(i),) + tuple(top), final_relu=False)

    def forward(self, dense, sparse):
        x = self.bottom(dense)
        vectors = torch.stack([x] + [t(sparse[:, k]) for k, t in enumerate(self.tables)], dim=1)
        dots = torch.bmm(vectors, vectors.transpose(1, 2)).flatten(1)[:, self.pairs]
        return self.top(torch.cat([x, dots], dim=1))[:, 0]


class SageLayer(nn.Module):
    """GraphSAGE mean-aggregator layer: W_self h + W_neigh mean of h over in-edges (src -> dst)."""

    def __init__(self, inputs, outputs):
        super().__init__()
        self.self_proj = nn.Linear(inputs, outputs)
        self.neigh_proj = nn.Linear(inputs, outputs, bias=False)

    def forward(self, h, src, dst, inv_degree):
        index = dst.unsqueeze(1).expand(-1, h.shape[1])         # scatter_add exports to ONNX
        summed = torch.zeros_like(h).scatter_add(0, index, h[src])
        return self.self_proj(h) + self.neigh_proj(summed * inv_degree)


class GraphSage(nn.Module):
    """Two GraphSAGE mean layers, ReLU after the first; nodes without in-edges aggregate zero."""

    def __init__(self, features, hidden, classes, **_):
        super().__init__()
        self.layer1 = SageLayer(features, hidden)
        self.layer2 = SageLayer(hidden, classes)

    def forward(self, x, src, dst):
        ones = x.new_ones(dst.shape[0], 1)
        degree = x.new_zeros(x.shape[0], 1).scatter_add(0, dst.unsqueeze(1), ones)
        inv_degree = 1.0 / degree.clamp(min=1.0)
        return self.layer2(F.relu(self.layer1(x, src, dst, inv_degree)), src, dst, inv_degree)


def build(name):
    """The module `name` with weights drawn after torch.manual_seed(SEED), in eval mode."""
    # Imported here, and only where needed: transformers alone takes seconds to import.
    if name in ("gpt2", "bert", "llama", "t5"):
        import transformers as tf
    if name in ("vit", "resnet50", "inception_v3", "mobilenet_v2"):
        import torchvision

    c = MODELS[name]
    torch.manual_seed(SEED)
    if name == "gpt2":
        config = tf.GPT2Config(vocab_size=c["vocab"], n_positions=c["max_pos"], n_embd=c["d_model"],
                               n_layer=c["layers"], n_head=c["heads"], n_inner=c["d_ff"])
        model = LogitsOnly(hf(tf.GPT2LMHeadModel, config), ["input_ids"], ones_mask=True)
    elif name == "bert":
        config = tf.BertConfig(vocab_size=c["vocab"], hidden_size=c["d_model"],
                               num_hidden_layers=c["layers"], num_attention_heads=c["heads"],
                               intermediate_size=c["d_ff"], max_position_embeddings=c["max_pos"],
                               type_vocab_size=c["type_vocab"])
        model = LogitsOnly(hf(tf.BertForMaskedLM, config),
                           ["input_ids", "token_type_ids", "attention_mask"])
    elif name == "llama":
        config = tf.LlamaConfig(vocab_size=c["vocab"], hidden_size=c["d_model"],
                                intermediate_size=c["d_ff"], num_hidden_layers=c["layers"],
                                num_attention_heads=c["heads"], num_key_value_heads=c["kv_heads"],
                                max_position_embeddings=max(2048, c["seq"]),
                                rope_parameters={"rope_type": "default",
                                                 "rope_theta": c["rope_theta"]},
                                tie_word_embeddings=False)
        model = LogitsOnly(hf(tf.LlamaForCausalLM, config), ["input_ids"], ones_mask=True)
    elif name == "t5":
        config = tf.T5Config(vocab_size=c["vocab"], d_model=c["d_model"], d_kv=c["d_kv"],
                             d_ff=c["d_ff"], num_layers=c["layers"], num_decoder_layers=c["layers"],
                             num_heads=c["heads"], relative_attention_num_buckets=c["buckets"],
                             relative_attention_max_distance=c["max_distance"],
                             feed_forward_proj="relu", dropout_rate=0.0, tie_word_embeddings=True)
        model = LogitsOnly(hf(tf.T5ForConditionalGeneration, config),
                           ["input_ids", "decoder_input_ids"])
    elif name == "vit":
        model = torchvision.models.VisionTransformer(
            image_size=c["image"], patch_size=c["patch"], num_layers=c["layers"],
            num_heads=c["heads"], hidden_dim=c["d_model"], mlp_dim=c["d_ff"],
            num_classes=c["classes"])
        # torchvision zeroes the classifier, which would make every logit 0: draw it instead.
        nn.init.normal_(model.heads.head.weight, std=0.02)
    elif name == "resnet50":
        model = torchvision.models.resnet50(num_classes=c["classes"])
    elif name == "inception_v3":
        model = torchvision.models.inception_v3(num_classes=c["classes"], aux_logits=False,
                                                init_weights=True)
    elif name == "mobilenet_v2":
        model = torchvision.models.mobilenet_v2(num_classes=c["classes"])
    elif name == "gnmt":
        model = Gnmt(**c)
    elif name == "wavenet":
        model = WaveNet(**c)
    elif name == "dlrm":
        model = Dlrm(**c)
    elif name == "graphsage":
        model = GraphSage(**c)
    else:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    if name in CNNS:
        calibrate_batch_norm(model, c["image"])
    return model.eval()


CNNS = ("resnet50", "inception_v3", "mobilenet_v2")


def calibrate_batch_norm(model, image):
    """Sets every batch norm's running statistics to those of one training-mode pass over two
    seeded random images: with the initial statistics (mean 0, variance 1) a randomly drawn
    network's activations vanish or explode with depth (MobileNet-v2's logits came out near
    1e-9, Inception-v3's near 1e12), which makes numerical comparisons meaningless."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None                                        # cumulative: exactly this batch
    images = torch.randn(2, 3, image, image, generator=torch.Generator().manual_seed(SEED + 2))
    with torch.no_grad():
        model.train()(images)
    for m in norms:
        m.momentum = 0.1


def hf(model_class, config):
    """A Hugging Face model built from `config` with eager attention (exports cleanly to ONNX)."""
    config._attn_implementation = "eager"
    return model_class(config)


def graph(nodes, edges, generator):
    """The fixed random graph: (src, dst) int64 edge lists over `nodes` nodes."""
    src = torch.randint(0, nodes, (edges,), generator=generator)
    dst = torch.randint(0, nodes, (edges,), generator=generator)
    return src, dst


def make_inputs(name, batch):
    """The seeded inputs of `name` at `batch` (see the module docstring)."""
    c = MODELS[name]
    g = torch.Generator().manual_seed(SEED + 1)

    def ids(high, *shape):
        return torch.randint(0, high, shape, generator=g)

    if name in ("gpt2", "llama"):
        return (ids(c["vocab"], batch, c["seq"]),)
    if name == "bert":
        return (ids(c["vocab"], batch, c["seq"]), ids(c["type_vocab"], batch, c["seq"]),
                torch.ones(batch, c["seq"], dtype=torch.int64))
    if name == "t5":
        return ids(c["vocab"], batch, c["src_seq"]), ids(c["vocab"], batch, c["tgt_seq"])
    if name in ("vit", "resnet50", "inception_v3", "mobilenet_v2"):
        return (torch.randn(batch, 3, c["image"], c["image"], generator=g),)
    if name == "gnmt":
        return ids(c["src_vocab"], batch, c["src_seq"]), ids(c["tgt_vocab"], batch, c["tgt_seq"])
    if name == "wavenet":
        codes = ids(c["classes"], batch, c["samples"])
        return (F.one_hot(codes, c["classes"]).transpose(1, 2).float(),)
    if name == "dlrm":
        return torch.randn(batch, c["dense"], generator=g), ids(c["rows"], batch, c["tables"])
    if name == "graphsage":
        src, dst = graph(c["nodes"], c["edges"], g)
        x = torch.rand(batch * c["nodes"], c["features"], generator=g)
        offsets = torch.arange(batch).repeat_interleave(c["edges"]) * c["nodes"]
        return x, src.repeat(batch) + offsets, dst.repeat(batch) + offsets
    raise KeyError(f"unknown model {name!r}; known: {', '.join(MODELS)}")


# ONNX input names per model, in `make_inputs` order.
INPUT_NAMES = {
    "gpt2": ["input_ids"], "llama": ["input_ids"],
    "bert": ["input_ids", "token_type_ids", "attention_mask"],
    "t5": ["input_ids", "decoder_input_ids"],
    "vit": ["images"], "resnet50": ["images"], "inception_v3": ["images"],
    "mobilenet_v2": ["images"], "gnmt": ["src", "tgt"], "wavenet": ["onehot"],
    "dlrm": ["dense", "sparse"], "graphsage": ["features", "src", "dst"],
}


def make(name, batch):
    """(module in eval mode, inputs tuple) of zoo model `name` at `batch`, deterministic."""
    return build(name), make_inputs(name, batch)
