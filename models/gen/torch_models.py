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
    convnext, efficientnet, regnet, swin  (images [B, 3, H, W] f32)     -> [B, classes]
    whisper        (log-mel spectrogram [B, mels, frames] f32)           -> [B, classes]
    unet           (noised images [B, 3, H, W] f32, timesteps [B])       -> [B, 3, H, W] noise
    moe, mamba, lstm_lm  (input_ids [B, seq])                            -> [B, seq, vocab]
"""

import math

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


class AudioLogits(nn.Module):
    """A Hugging Face audio classifier whose forward takes the features and returns the logits."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, features):
        return self.model(input_features=features, return_dict=True).logits


def timestep_embedding(t, dim):
    """DDPM's sinusoidal embedding [B, dim] of integer timesteps (sin half, then cos half)."""
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / (half - 1))
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.sin(args), torch.cos(args)], dim=-1)


class ResBlock(nn.Module):
    """DDPM ResBlock, as jax_vision.ResBlock."""

    def __init__(self, inputs, outputs, temb, groups):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, inputs, eps=1e-5)
        self.conv1 = nn.Conv2d(inputs, outputs, 3, padding=1)
        self.temb = nn.Linear(temb, outputs)
        self.norm2 = nn.GroupNorm(groups, outputs, eps=1e-5)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, padding=1)
        self.shortcut = nn.Conv2d(inputs, outputs, 1) if inputs != outputs else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb(F.silu(temb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return self.shortcut(x) + h


class AttnBlock(nn.Module):
    """DDPM's single-head self-attention over the pixels, as jax_vision.AttnBlock."""

    def __init__(self, channels, groups):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels, eps=1e-5)
        self.q, self.k, self.v, self.proj = (nn.Conv2d(channels, channels, 1) for _ in range(4))

    def forward(self, x):
        b, c, hh, ww = x.shape
        h = self.norm(x)
        q, k, v = (f(h).flatten(2) for f in (self.q, self.k, self.v))       # [B, C, HW]
        weights = torch.softmax(torch.bmm(q.transpose(1, 2), k) * c ** -0.5, dim=-1)
        out = torch.bmm(v, weights.transpose(1, 2)).reshape(b, c, hh, ww)
        return x + self.proj(out)


class UNet(nn.Module):
    """DDPM's UNet, as jax_vision.UNet (NCHW; nearest upsampling is F.interpolate, ONNX Resize)."""

    def __init__(self, image, channels, mults, res_blocks, attn_res, groups, **_):
        super().__init__()
        ch, g = channels, groups
        self.channels = ch
        self.temb = nn.Sequential(nn.Linear(ch, 4 * ch), nn.SiLU(), nn.Linear(4 * ch, 4 * ch))
        self.conv_in = nn.Conv2d(3, ch, 3, padding=1)
        self.down, self.down_plan = nn.ModuleList(), []
        widths, width, res = [ch], ch, image
        for level, mult in enumerate(mults):
            for _ in range(res_blocks):
                self.down.append(ResBlock(width, ch * mult, 4 * ch, g))
                width = ch * mult
                self.down_plan.append("res")
                if res in attn_res:
                    self.down.append(AttnBlock(width, g))
                    self.down_plan.append("attn")
                widths.append(width)
            if level + 1 < len(mults):
                self.down.append(nn.Conv2d(width, width, 3, stride=2, padding=1))
                self.down_plan.append("down")
                widths.append(width)
                res //= 2
        self.mid = nn.ModuleList([ResBlock(width, width, 4 * ch, g), AttnBlock(width, g),
                                  ResBlock(width, width, 4 * ch, g)])
        self.up, self.up_plan = nn.ModuleList(), []
        for level in reversed(range(len(mults))):
            for _ in range(res_blocks + 1):
                self.up.append(ResBlock(width + widths.pop(), ch * mults[level], 4 * ch, g))
                width = ch * mults[level]
                self.up_plan.append("res")
                if res in attn_res:
                    self.up.append(AttnBlock(width, g))
                    self.up_plan.append("attn")
            if level > 0:
                self.up.append(nn.Conv2d(width, width, 3, padding=1))
                self.up_plan.append("up")
                res *= 2
        self.norm_out = nn.GroupNorm(g, width, eps=1e-5)
        self.conv_out = nn.Conv2d(width, 3, 3, padding=1)

    def forward(self, x, t):
        temb = self.temb(timestep_embedding(t, self.channels))
        h = self.conv_in(x)
        skips = [h]
        for kind, layer in zip(self.down_plan, self.down):
            h = layer(h, temb) if kind == "res" else layer(h)
            if kind != "attn":
                skips.append(h)
            else:
                skips[-1] = h
        h = self.mid[2](self.mid[1](self.mid[0](h, temb)), temb)
        for kind, layer in zip(self.up_plan, self.up):
            if kind == "res":
                h = layer(torch.cat([h, skips.pop()], dim=1), temb)
            elif kind == "attn":
                h = layer(h)
            else:
                h = layer(F.interpolate(h, scale_factor=2.0, mode="nearest"))
        return self.conv_out(F.silu(self.norm_out(h)))


def window_partition(x, w):
    """[B, H, W, C] -> [B * H/w * W/w, w*w, C], windows in row-major order."""
    b, h, wd, c = x.shape
    x = x.reshape(b, h // w, w, wd // w, w, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, w * w, c)


def window_merge(x, w, b, h, wd):
    """Inverse of window_partition."""
    x = x.reshape(b, h // w, wd // w, w, w, x.shape[-1]).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(b, h, wd, -1)


class WindowAttention(nn.Module):
    """Swin's (shifted) window attention with relative position bias, as jax_vision.
    WindowAttention. The bias index and the shift mask are computed in the graph from aranges
    (as buffers they would be graph inputs or 600 KB constants)."""

    def __init__(self, dim, heads, window, shift):
        super().__init__()
        self.heads, self.window, self.shift = heads, window, shift
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.relative_bias = nn.Parameter(torch.empty((2 * window - 1) ** 2, heads))
        nn.init.trunc_normal_(self.relative_bias, std=0.02)

    def bias_index(self):
        w = self.window
        r = torch.arange(w)
        ys, xs = r.repeat_interleave(w), r.repeat(w)
        dy = ys[:, None] - ys[None, :] + (w - 1)
        dx = xs[:, None] - xs[None, :] + (w - 1)
        return dy * (2 * w - 1) + dx

    def shift_mask(self, h, wd):
        w, s = self.window, self.shift

        def region(n):
            i = torch.arange(n)
            return (i >= n - w).long() + (i >= n - s).long()
        label = region(h)[:, None] * 3 + region(wd)[None, :]
        label = window_partition(label[None, :, :, None], w)[..., 0]       # [windows, w*w]
        same = label[:, :, None] == label[:, None, :]
        return torch.where(same, torch.tensor(0.0), torch.tensor(-100.0))

    def forward(self, x):
        b, h, wd, d = x.shape
        w, s, heads = self.window, self.shift, self.heads
        if s:
            x = torch.roll(x, (-s, -s), dims=(1, 2))
        win = window_partition(x, w)
        n = w * w
        qkv = self.qkv(win).reshape(-1, n, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]                                  # [BW, H, N, hd]
        logits = (q * (d // heads) ** -0.5) @ k.transpose(-1, -2)
        bias = self.relative_bias[self.bias_index()]                       # [N, N, H]
        logits = logits + bias.permute(2, 0, 1)[None]
        if s:
            mask = self.shift_mask(h, wd)
            nw = mask.shape[0]
            logits = (logits.reshape(b, nw, heads, n, n) + mask[None, :, None]).reshape(
                b * nw, heads, n, n)
        out = (torch.softmax(logits, dim=-1) @ v).transpose(1, 2).reshape(-1, n, d)
        out = window_merge(self.proj(out), w, b, h, wd)
        return torch.roll(out, (s, s), dims=(1, 2)) if s else out


class SwinBlock(nn.Module):
    def __init__(self, dim, heads, window, shift, mlp_ratio):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-5)
        self.attn = WindowAttention(dim, heads, window, shift)
        self.norm2 = nn.LayerNorm(dim, eps=1e-5)
        self.fc1 = nn.Linear(dim, mlp_ratio * dim)
        self.fc2 = nn.Linear(mlp_ratio * dim, dim)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class PatchMerging(nn.Module):
    """2x2 neighbours concatenated (torchvision's order), LayerNorm, linear to twice the width."""

    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(4 * dim, eps=1e-5)
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x):
        x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]],
                      dim=-1)
        return self.reduction(self.norm(x))


class Swin(nn.Module):
    """Swin Transformer, as jax_vision.Swin: torchvision's swin_t layout and parameter count, with
    static window shapes (torchvision's own export computes them with 470 Shape nodes: 1.2 MB)."""

    def __init__(self, image, classes, patch, embed, depths, heads, window, mlp_ratio, **_):
        super().__init__()
        self.patch = nn.Conv2d(3, embed, patch, stride=patch)
        self.patch_norm = nn.LayerNorm(embed, eps=1e-5)
        self.stages = nn.ModuleList()
        res, dim = image // patch, embed
        for s, (depth, h) in enumerate(zip(depths, heads)):
            layers = [PatchMerging(dim // 2)] if s > 0 else []
            layers += [SwinBlock(dim, h, window, window // 2 if i % 2 and res > window else 0,
                                 mlp_ratio) for i in range(depth)]
            self.stages.append(nn.Sequential(*layers))
            res, dim = res // 2, dim * 2
        dim //= 2
        self.norm = nn.LayerNorm(dim, eps=1e-5)
        self.head = nn.Linear(dim, classes)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                nn.init.zeros_(m.bias) if m.bias is not None else None

    def forward(self, images):
        x = self.patch_norm(self.patch(images).permute(0, 2, 3, 1))
        for stage in self.stages:
            x = stage(x)
        return self.head(self.norm(x).mean(dim=(1, 2)))


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(seq, head_dim, theta):
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angles = torch.arange(seq, dtype=torch.float32)[:, None] * inv[None, :]
    return torch.cos(angles), torch.sin(angles)


def apply_rope(x, cos, sin):
    """x [B, H, T, D], the two halves rotated (GPT-NeoX layout, as jax_layers.apply_rope)."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class GqaAttention(nn.Module):
    """Causal grouped-query attention with rotary positions and no biases."""

    def __init__(self, d, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, d // heads
        self.query = nn.Linear(d, d, bias=False)
        self.key = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.value = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.out = nn.Linear(d, d, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, d = x.shape
        q = self.query(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.key(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.value(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        groups = self.heads // self.kv_heads
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        logits = (q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        logits = logits.masked_fill(~mask, torch.finfo(logits.dtype).min)
        out = torch.softmax(logits, dim=-1) @ v
        return self.out(out.transpose(1, 2).reshape(b, t, d))


class MoEFeedForward(nn.Module):
    """Top-k mixture of SwiGLU experts with sort-based dispatch, as jax_transformers.
    MoEFeedForward: torch.topk on the router logits, argsort of the expert ids (made unique by
    the assignment's index, so that any sort gives the stable order), gather of each expert's
    first `capacity` assignments, batched expert matmuls, scatter-add of the gated outputs."""

    def __init__(self, d, d_ff, experts, top_k, capacity_factor):
        super().__init__()
        self.experts, self.top_k, self.capacity_factor = experts, top_k, capacity_factor
        self.router = nn.Linear(d, experts, bias=False)
        self.w_gate = nn.Parameter(torch.randn(experts, d, d_ff) * 0.02)
        self.w_up = nn.Parameter(torch.randn(experts, d, d_ff) * 0.02)
        self.w_down = nn.Parameter(torch.randn(experts, d_ff, d) * 0.02)

    def forward(self, x):
        b, t, d = x.shape
        e, k = self.experts, self.top_k
        tokens = x.reshape(b * t, d)
        n = b * t * k
        capacity = math.ceil(self.capacity_factor * n / e)
        top_logits, chosen = torch.topk(self.router(tokens), k, dim=-1)
        gates = torch.softmax(top_logits, dim=-1).reshape(n)
        expert_of = chosen.reshape(n)
        index = torch.arange(n)
        token_of = torch.div(index, k, rounding_mode="floor")
        order = torch.argsort(expert_of * n + index)
        counts = (expert_of[:, None] == torch.arange(e)[None, :]).sum(0)
        starts = torch.cumsum(counts, 0) - counts
        position = torch.arange(capacity)[None, :]
        valid = position < counts[:, None]                                 # [E, C]
        assignment = order[torch.clamp(starts[:, None] + position, max=n - 1)]
        token = token_of[assignment]
        weight = torch.where(valid, gates[assignment], torch.zeros_like(gates[assignment]))
        xin = tokens[token]                                                # [E, C, d]
        h = F.silu(torch.bmm(xin, self.w_gate)) * torch.bmm(xin, self.w_up)
        y = torch.bmm(h, self.w_down) * weight[..., None]
        index = token.reshape(-1, 1).expand(-1, d)
        out = torch.zeros_like(tokens).scatter_add(0, index, y.reshape(-1, d))
        return out.reshape(b, t, d)


class MoE(nn.Module):
    """Mixtral-style decoder, as jax_transformers.MoE."""

    def __init__(self, vocab, d_model, layers, heads, kv_heads, d_ff, experts, top_k,
                 capacity_factor, seq, rope_theta, **_):
        super().__init__()
        d = d_model
        self.embed = nn.Embedding(vocab, d)
        self.attn_norms = nn.ModuleList(RMSNorm(d, 1e-5) for _ in range(layers))
        self.attns = nn.ModuleList(GqaAttention(d, heads, kv_heads) for _ in range(layers))
        self.moe_norms = nn.ModuleList(RMSNorm(d, 1e-5) for _ in range(layers))
        self.moes = nn.ModuleList(MoEFeedForward(d, d_ff, experts, top_k, capacity_factor)
                                  for _ in range(layers))
        self.norm = RMSNorm(d, 1e-5)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.head_dim, self.rope_theta = d // heads, rope_theta

    def forward(self, ids):
        t = ids.shape[1]
        cos, sin = rope_tables(t, self.head_dim, self.rope_theta)
        mask = torch.arange(t)[:, None] >= torch.arange(t)[None, :]
        x = self.embed(ids)
        for an, attn, mn, moe in zip(self.attn_norms, self.attns, self.moe_norms, self.moes):
            x = x + attn(an(x), cos, sin, mask)
            x = x + moe(mn(x))
        return self.lm_head(self.norm(x))


class MambaMixer(nn.Module):
    """Mamba's selective SSM mixer, as jax_other.MambaBlock; the scan is a Python loop over the
    sequence (the ONNX graph has one small step per token and layer)."""

    def __init__(self, d_model, d_state, d_conv, expand, dt_rank, **_):
        super().__init__()
        inner = expand * d_model
        self.inner, self.n, self.rank = inner, d_state, dt_rank
        self.in_proj = nn.Linear(d_model, 2 * inner, bias=False)
        self.conv = nn.Conv1d(inner, inner, d_conv, groups=inner, padding=d_conv - 1)
        self.x_proj = nn.Linear(inner, dt_rank + 2 * d_state, bias=False)
        self.dt_proj = nn.Linear(dt_rank, inner)
        dt = torch.exp(torch.rand(inner) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
        with torch.no_grad():
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))
        a = torch.arange(1, d_state + 1, dtype=torch.float32).repeat(inner, 1)
        self.A_log = nn.Parameter(torch.log(a))
        self.D = nn.Parameter(torch.ones(inner))
        self.out_proj = nn.Linear(inner, d_model, bias=False)

    def forward(self, x):
        t = x.shape[1]
        xs, z = torch.split(self.in_proj(x), self.inner, dim=-1)
        xs = F.silu(self.conv(xs.transpose(1, 2))[..., :t].transpose(1, 2))
        dt, bm, cm = torch.split(self.x_proj(xs), [self.rank, self.n, self.n], dim=-1)
        dt = F.softplus(self.dt_proj(dt))                                  # [B, T, inner]
        decay = torch.exp(dt[..., None] * -torch.exp(self.A_log))          # [B, T, inner, n]
        drive = (dt * xs)[..., None] * bm[:, :, None, :]
        h = x.new_zeros(x.shape[0], self.inner, self.n)
        states = []
        for step in range(t):
            h = decay[:, step] * h + drive[:, step]
            states.append(h)
        y = (torch.stack(states, dim=1) * cm[:, :, None, :]).sum(-1) + xs * self.D
        return self.out_proj(y * F.silu(z))


class Mamba(nn.Module):
    """Mamba LM, as jax_other.Mamba (tied LM head)."""

    def __init__(self, vocab, d_model, layers, **c):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        nn.init.normal_(self.embed.weight, std=0.02)                       # Mamba's (tied head)
        self.norms = nn.ModuleList(RMSNorm(d_model, 1e-5) for _ in range(layers))
        self.mixers = nn.ModuleList(MambaMixer(d_model, **c) for _ in range(layers))
        self.norm_f = RMSNorm(d_model, 1e-5)

    def forward(self, ids):
        x = self.embed(ids)
        for norm, mixer in zip(self.norms, self.mixers):
            x = x + mixer(norm(x))
        return F.linear(self.norm_f(x), self.embed.weight)


class LstmLM(nn.Module):
    """LSTM language model, as jax_other.LstmLM, with nn.LSTM (one ONNX LSTM node per layer)."""

    def __init__(self, vocab, embed, hidden, layers, **_):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, layers, batch_first=True)
        self.softmax = nn.Linear(hidden, vocab)

    def forward(self, ids):
        return self.softmax(self.lstm(self.embed(ids))[0])


def build(name):
    """The module `name` with weights drawn after torch.manual_seed(SEED), in eval mode."""
    # Imported here, and only where needed: transformers alone takes seconds to import.
    if name in ("gpt2", "bert", "llama", "t5"):
        import transformers as tf
    if name in ("whisper",):
        import transformers as tf
    if name in ("vit", "resnet50", "inception_v3", "mobilenet_v2", "convnext", "efficientnet",
                "regnet"):
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
    elif name == "convnext":
        model = torchvision.models.convnext_tiny(num_classes=c["classes"])
        # Layer scales start at 1e-6, which leaves the blocks out of the output (and out of the
        # export check): trained ConvNeXt-T's are 0.05-1, so they are set to 0.1.
        for block in model.modules():
            if isinstance(block, torchvision.models.convnext.CNBlock):
                nn.init.constant_(block.layer_scale, 0.1)
    elif name == "efficientnet":
        model = torchvision.models.efficientnet_b0(num_classes=c["classes"])
    elif name == "regnet":
        model = torchvision.models.regnet_y_400mf(num_classes=c["classes"])
    elif name == "swin":
        model = Swin(**c)
    elif name == "whisper":
        config = tf.WhisperConfig(num_mel_bins=c["mels"], d_model=c["d_model"],
                                  encoder_layers=c["layers"], encoder_attention_heads=c["heads"],
                                  encoder_ffn_dim=c["d_ff"], max_source_positions=c["frames"] // 2,
                                  classifier_proj_size=c["proj"], num_labels=c["classes"])
        model = AudioLogits(hf(tf.WhisperForAudioClassification, config))
    elif name == "unet":
        model = UNet(**c)
    elif name == "moe":
        model = MoE(**c)
    elif name == "mamba":
        model = Mamba(**c)
    elif name == "lstm_lm":
        model = LstmLM(**c)
    else:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    if name in CNNS:
        calibrate_batch_norm(model, c["image"])
    return model.eval()


CNNS = ("resnet50", "inception_v3", "mobilenet_v2", "efficientnet", "regnet")


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

    if name in ("gpt2", "llama", "moe", "mamba", "lstm_lm"):
        return (ids(c["vocab"], batch, c["seq"]),)
    if name == "bert":
        return (ids(c["vocab"], batch, c["seq"]), ids(c["type_vocab"], batch, c["seq"]),
                torch.ones(batch, c["seq"], dtype=torch.int64))
    if name == "t5":
        return ids(c["vocab"], batch, c["src_seq"]), ids(c["vocab"], batch, c["tgt_seq"])
    if name in ("vit", "resnet50", "inception_v3", "mobilenet_v2", "convnext", "efficientnet",
                "regnet", "swin"):
        return (torch.randn(batch, 3, c["image"], c["image"], generator=g),)
    if name == "whisper":
        return (torch.randn(batch, c["mels"], c["frames"], generator=g),)
    if name == "unet":
        return (torch.randn(batch, 3, c["image"], c["image"], generator=g),
                ids(c["timesteps"], batch))
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
    "convnext": ["images"], "efficientnet": ["images"], "regnet": ["images"], "swin": ["images"],
    "whisper": ["input_features"], "unet": ["images", "timesteps"], "moe": ["input_ids"],
    "mamba": ["input_ids"], "lstm_lm": ["input_ids"],
}


def make(name, batch):
    """(module in eval mode, inputs tuple) of zoo model `name` at `batch`, deterministic."""
    return build(name), make_inputs(name, batch)
