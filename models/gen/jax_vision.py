"""Flax definitions of the zoo's convolutional networks (NHWC): ResNet-50 v1.5, Inception-v3,
MobileNet-v2, EfficientNet-B0 and RegNetY-400MF with batch norm (batch statistics in the training
step, running ones in inference); ConvNeXt-T and Swin-T (LayerNorm); a DDPM diffusion UNet
(GroupNorm)."""

from functools import partial

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jax_layers import INIT, dense


class ConvBN(nn.Module):
    """Convolution without bias, batch norm, then an optional activation."""

    features: int
    kernel: tuple = (1, 1)
    strides: tuple = (1, 1)
    padding: object = "SAME"
    groups: int = 1
    act: object = nn.relu
    epsilon: float = 1e-5

    @nn.compact
    def __call__(self, x, train):
        x = nn.Conv(self.features, self.kernel, self.strides, padding=self.padding,
                    feature_group_count=self.groups, use_bias=False)(x)
        x = nn.BatchNorm(use_running_average=not train, momentum=0.9, epsilon=self.epsilon)(x)
        return self.act(x) if self.act is not None else x


class Bottleneck(nn.Module):
    """ResNet v1.5 bottleneck: 1x1, 3x3 (carrying the stride), 1x1 x4, projection when needed."""

    features: int
    strides: int

    @nn.compact
    def __call__(self, x, train):
        out = ConvBN(self.features)(x, train)
        out = ConvBN(self.features, (3, 3), (self.strides, self.strides))(out, train)
        out = ConvBN(self.features * 4, act=None)(out, train)
        if x.shape[-1] != self.features * 4 or self.strides != 1:
            x = ConvBN(self.features * 4, strides=(self.strides, self.strides), act=None)(x, train)
        return nn.relu(out + x)


class ResNet50(nn.Module):
    """ResNet-50: 7x7 stem, four stages of bottlenecks, global average pool, classifier."""

    cfg: dict

    @nn.compact
    def __call__(self, x, train=False):
        x = ConvBN(64, (7, 7), (2, 2), padding=[(3, 3), (3, 3)])(x, train)
        x = nn.max_pool(x, (3, 3), (2, 2), padding=[(1, 1), (1, 1)])
        for stage, blocks in enumerate(self.cfg["blocks"]):
            for i in range(blocks):
                x = Bottleneck(64 * 2**stage, 2 if i == 0 and stage > 0 else 1)(x, train)
        return nn.Dense(self.cfg["classes"])(jnp.mean(x, axis=(1, 2)))


# Inception-v3's convolutions use batch norm with epsilon 1e-3.
IConv = partial(ConvBN, epsilon=1e-3)


def avg_pool3(x):
    return nn.avg_pool(x, (3, 3), (1, 1), padding="SAME", count_include_pad=False)


def max_pool3s2(x):
    return nn.max_pool(x, (3, 3), (2, 2), padding="VALID")


class InceptionA(nn.Module):
    pool_features: int

    @nn.compact
    def __call__(self, x, t):
        b1 = IConv(64)(x, t)
        b5 = IConv(64, (5, 5))(IConv(48)(x, t), t)
        b3 = IConv(96, (3, 3))(IConv(96, (3, 3))(IConv(64)(x, t), t), t)
        bp = IConv(self.pool_features)(avg_pool3(x), t)
        return jnp.concatenate([b1, b5, b3, bp], axis=-1)


class InceptionB(nn.Module):
    @nn.compact
    def __call__(self, x, t):
        b3 = IConv(384, (3, 3), (2, 2), "VALID")(x, t)
        bd = IConv(96, (3, 3), (2, 2), "VALID")(IConv(96, (3, 3))(IConv(64)(x, t), t), t)
        return jnp.concatenate([b3, bd, max_pool3s2(x)], axis=-1)


class InceptionC(nn.Module):
    c7: int

    @nn.compact
    def __call__(self, x, t):
        c7 = self.c7
        b1 = IConv(192)(x, t)
        b7 = IConv(192, (7, 1))(IConv(c7, (1, 7))(IConv(c7)(x, t), t), t)
        bd = IConv(c7)(x, t)
        for features, kernel in ((c7, (7, 1)), (c7, (1, 7)), (c7, (7, 1)), (192, (1, 7))):
            bd = IConv(features, kernel)(bd, t)
        bp = IConv(192)(avg_pool3(x), t)
        return jnp.concatenate([b1, b7, bd, bp], axis=-1)


class InceptionD(nn.Module):
    @nn.compact
    def __call__(self, x, t):
        b3 = IConv(320, (3, 3), (2, 2), "VALID")(IConv(192)(x, t), t)
        b7 = IConv(192, (7, 1))(IConv(192, (1, 7))(IConv(192)(x, t), t), t)
        b7 = IConv(192, (3, 3), (2, 2), "VALID")(b7, t)
        return jnp.concatenate([b3, b7, max_pool3s2(x)], axis=-1)


class InceptionE(nn.Module):
    @nn.compact
    def __call__(self, x, t):
        b1 = IConv(320)(x, t)
        b3 = IConv(384)(x, t)
        b3 = jnp.concatenate([IConv(384, (1, 3))(b3, t), IConv(384, (3, 1))(b3, t)], axis=-1)
        bd = IConv(384, (3, 3))(IConv(448)(x, t), t)
        bd = jnp.concatenate([IConv(384, (1, 3))(bd, t), IConv(384, (3, 1))(bd, t)], axis=-1)
        bp = IConv(192)(avg_pool3(x), t)
        return jnp.concatenate([b1, b3, bd, bp], axis=-1)


class InceptionV3(nn.Module):
    """Inception-v3 (299x299): stem, 3xA, B, 4xC, D, 2xE, average pool, classifier."""

    cfg: dict

    @nn.compact
    def __call__(self, x, train=False):
        t = train
        x = IConv(32, (3, 3), (2, 2), "VALID")(x, t)
        x = IConv(32, (3, 3), padding="VALID")(x, t)
        x = max_pool3s2(IConv(64, (3, 3))(x, t))
        x = IConv(192, (3, 3), padding="VALID")(IConv(80)(x, t), t)
        x = max_pool3s2(x)
        for pool_features in (32, 64, 64):
            x = InceptionA(pool_features)(x, t)
        x = InceptionB()(x, t)
        for c7 in (128, 160, 160, 192):
            x = InceptionC(c7)(x, t)
        x = InceptionE()(InceptionE()(InceptionD()(x, t), t), t)
        return nn.Dense(self.cfg["classes"])(jnp.mean(x, axis=(1, 2)))


class InvertedResidual(nn.Module):
    """MobileNet-v2 block: 1x1 expansion, 3x3 depthwise, linear 1x1 projection, residual if the
    shape allows."""

    features: int
    strides: int
    expand: int

    @nn.compact
    def __call__(self, x, t):
        hidden = x.shape[-1] * self.expand
        h = ConvBN(hidden, act=nn.relu6)(x, t) if self.expand != 1 else x
        h = ConvBN(hidden, (3, 3), (self.strides, self.strides), padding=[(1, 1), (1, 1)],
                   groups=hidden, act=nn.relu6)(h, t)
        h = ConvBN(self.features, act=None)(h, t)
        return x + h if self.strides == 1 and x.shape[-1] == self.features else h


class MobileNetV2(nn.Module):
    """MobileNet-v2 at width 1.0: stem, 17 inverted residuals, 1x1 to 1280, pool, classifier."""

    cfg: dict

    @nn.compact
    def __call__(self, x, train=False):
        x = ConvBN(32, (3, 3), (2, 2), padding=[(1, 1), (1, 1)], act=nn.relu6)(x, train)
        settings = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                    (6, 160, 3, 2), (6, 320, 1, 1))
        for expand, features, repeats, strides in settings:
            for i in range(repeats):
                x = InvertedResidual(features, strides if i == 0 else 1, expand)(x, train)
        x = ConvBN(1280, act=nn.relu6)(x, train)
        return nn.Dense(self.cfg["classes"])(jnp.mean(x, axis=(1, 2)))


def pad(k):
    """Symmetric padding of a k x k convolution (PyTorch's; XLA's SAME pads stride 2 unevenly)."""
    return [((k - 1) // 2, (k - 1) // 2)] * 2


class SqueezeExcite(nn.Module):
    """Squeeze-excitation: global average, 1x1 to `squeeze` channels, activation, 1x1 back,
    sigmoid, channel-wise scale."""

    squeeze: int
    act: object

    @nn.compact
    def __call__(self, x):
        s = jnp.mean(x, axis=(1, 2), keepdims=True)
        s = self.act(nn.Conv(self.squeeze, (1, 1), name="fc1")(s))
        return x * jax.nn.sigmoid(nn.Conv(x.shape[-1], (1, 1), name="fc2")(s))


class MBConv(nn.Module):
    """EfficientNet's MBConv: 1x1 expansion (unless 1), depthwise k x k, squeeze-excitation to a
    quarter of the block's input channels, linear 1x1 projection, residual when shapes allow."""

    features: int
    kernel: int
    strides: int
    expand: int

    @nn.compact
    def __call__(self, x, t):
        hidden = x.shape[-1] * self.expand
        h = ConvBN(hidden, act=nn.silu)(x, t) if self.expand != 1 else x
        h = ConvBN(hidden, (self.kernel, self.kernel), (self.strides, self.strides),
                   padding=pad(self.kernel), groups=hidden, act=nn.silu)(h, t)
        h = SqueezeExcite(max(1, x.shape[-1] // 4), nn.silu)(h)
        h = ConvBN(self.features, act=None)(h, t)
        return x + h if self.strides == 1 and x.shape[-1] == self.features else h


class EfficientNetB0(nn.Module):
    """EfficientNet-B0: 3x3 stem, 16 MBConv blocks in 7 stages, 1x1 to 1280, pool, classifier."""

    cfg: dict

    @nn.compact
    def __call__(self, x, train=False):
        x = ConvBN(32, (3, 3), (2, 2), padding=pad(3), act=nn.silu)(x, train)
        # (expansion, kernel, stride, channels, blocks)
        stages = ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                  (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1))
        for expand, kernel, strides, features, blocks in stages:
            for i in range(blocks):
                x = MBConv(features, kernel, strides if i == 0 else 1, expand)(x, train)
        x = ConvBN(1280, act=nn.silu)(x, train)
        return nn.Dense(self.cfg["classes"])(jnp.mean(x, axis=(1, 2)))


class RegNetYBlock(nn.Module):
    """RegNetY bottleneck (ratio 1): 1x1, grouped 3x3 carrying the stride, squeeze-excitation to
    se_ratio x the block's input width, linear 1x1; projection shortcut when the shape changes."""

    features: int
    strides: int
    group_width: int
    se_ratio: float

    @nn.compact
    def __call__(self, x, t):
        w = self.features
        h = ConvBN(w)(x, t)
        h = ConvBN(w, (3, 3), (self.strides, self.strides), padding=pad(3),
                   groups=w // self.group_width)(h, t)
        h = SqueezeExcite(int(round(self.se_ratio * x.shape[-1])), nn.relu)(h)
        h = ConvBN(w, act=None)(h, t)
        if x.shape[-1] != w or self.strides != 1:
            x = ConvBN(w, strides=(self.strides, self.strides), act=None)(x, t)
        return nn.relu(x + h)


class RegNetY(nn.Module):
    """RegNetY: 3x3 stride-2 stem to 32, four stages (the first block of each stride 2), average
    pool, classifier."""

    cfg: dict

    @nn.compact
    def __call__(self, x, train=False):
        c = self.cfg
        x = ConvBN(32, (3, 3), (2, 2), padding=pad(3))(x, train)
        for depth, width in zip(c["depths"], c["widths"]):
            for i in range(depth):
                x = RegNetYBlock(width, 2 if i == 0 else 1, c["group_width"],
                                 c["se_ratio"])(x, train)
        return nn.Dense(c["classes"])(jnp.mean(x, axis=(1, 2)))


class ConvNeXtBlock(nn.Module):
    """ConvNeXt block: depthwise 7x7, LayerNorm, Linear 4x, GELU, Linear back, layer scale,
    residual."""

    layer_scale: float

    @nn.compact
    def __call__(self, x):
        d = x.shape[-1]
        h = nn.Conv(d, (7, 7), padding=pad(7), feature_group_count=d, name="dwconv")(x)
        h = nn.LayerNorm(epsilon=1e-6, name="norm")(h)
        h = nn.gelu(dense(4 * d, name="pwconv1")(h), approximate=False)
        h = dense(d, name="pwconv2")(h)
        gamma = self.param("gamma", nn.initializers.constant(self.layer_scale), (d,))
        return x + gamma * h


class ConvNeXt(nn.Module):
    """ConvNeXt: 4x4 stride-4 stem + LayerNorm, stages of blocks with LayerNorm and a 2x2
    stride-2 convolution between them, global average, LayerNorm, classifier."""

    cfg: dict

    @nn.compact
    def __call__(self, x):
        c = self.cfg
        x = nn.Conv(c["dims"][0], (4, 4), (4, 4), padding="VALID", name="stem")(x)
        x = nn.LayerNorm(epsilon=1e-6, name="stem_norm")(x)
        for s, (depth, dim) in enumerate(zip(c["depths"], c["dims"])):
            if s > 0:
                x = nn.LayerNorm(epsilon=1e-6, name=f"down_norm_{s}")(x)
                x = nn.Conv(dim, (2, 2), (2, 2), padding="VALID", name=f"down_{s}")(x)
            for i in range(depth):
                x = ConvNeXtBlock(c["layer_scale"], name=f"block_{s}_{i}")(x)
        x = nn.LayerNorm(epsilon=1e-6, name="head_norm")(jnp.mean(x, axis=(1, 2)))
        return dense(c["classes"], name="head")(x)


def window_partition(x, w):
    """[B, H, W, C] -> [B * H/w * W/w, w*w, C], windows in row-major order."""
    b, h, wd, c = x.shape
    x = x.reshape(b, h // w, w, wd // w, w, c).transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, w * w, c)


def window_merge(x, w, b, h, wd):
    """Inverse of window_partition."""
    c = x.shape[-1]
    x = x.reshape(b, h // w, wd // w, w, w, c).transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(b, h, wd, c)


def relative_position_index(w):
    """[w*w, w*w] index into Swin's ((2w-1)^2)-row bias table of each pair of window positions,
    built from iotas in the graph (not a constant)."""
    r = jnp.arange(w)
    ys, xs = jnp.repeat(r, w), jnp.tile(r, w)
    dy = ys[:, None] - ys[None, :] + (w - 1)
    dx = xs[:, None] - xs[None, :] + (w - 1)
    return dy * (2 * w - 1) + dx


def shift_mask(h, wd, w, s):
    """[windows, w*w, w*w] additive mask (0 or -100) of the shifted windows: positions from
    different regions of the rolled image do not attend to each other. Built from iotas."""
    def region(n):
        i = jnp.arange(n)
        return (i >= n - w).astype(jnp.int32) + (i >= n - s).astype(jnp.int32)
    label = region(h)[:, None] * 3 + region(wd)[None, :]
    label = window_partition(label[None, :, :, None], w)[..., 0]       # [windows, w*w]
    return jnp.where(label[:, :, None] == label[:, None, :], 0.0, -100.0)


class WindowAttention(nn.Module):
    """Multi-head self-attention inside w x w windows (optionally shifted by s) with a learned
    relative position bias per head."""

    heads: int
    window: int
    shift: int

    @nn.compact
    def __call__(self, x):
        b, h, wd, d = x.shape
        w, s, heads = self.window, self.shift, self.heads
        if s:
            x = jnp.roll(x, (-s, -s), axis=(1, 2))
        win = window_partition(x, w)                                       # [BW, N, d]
        n = w * w
        qkv = dense(3 * d, name="qkv")(win).reshape(-1, n, 3, heads, d // heads)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]                 # [BW, N, H, hd]
        logits = jnp.einsum("bnhd,bmhd->bhnm", q * (d // heads) ** -0.5, k)
        table = self.param("relative_bias", nn.initializers.truncated_normal(0.02),
                           ((2 * w - 1) ** 2, heads))
        bias = table[relative_position_index(w)]                           # [N, N, H]
        logits = logits + jnp.transpose(bias, (2, 0, 1))[None]
        if s:
            mask = shift_mask(h, wd, w, s)                                 # [nW, N, N]
            nw = mask.shape[0]
            logits = logits.reshape(b, nw, heads, n, n) + mask[None, :, None]
            logits = logits.reshape(b * nw, heads, n, n)
        out = jnp.einsum("bhnm,bmhd->bnhd", jax.nn.softmax(logits, axis=-1), v)
        out = dense(d, name="proj")(out.reshape(-1, n, d))
        out = window_merge(out, w, b, h, wd)
        return jnp.roll(out, (s, s), axis=(1, 2)) if s else out


class Swin(nn.Module):
    """Swin Transformer: 4x4 patch embedding + LayerNorm, stages of pre-LN blocks of (shifted)
    window attention and a GELU MLP, patch merging (2x2 neighbours concatenated, LayerNorm,
    linear to twice the width) between stages, final LayerNorm, average, classifier. A stage
    whose resolution equals the window does not shift."""

    cfg: dict

    @nn.compact
    def __call__(self, x):
        c = self.cfg
        w = c["window"]
        x = nn.Conv(c["embed"], (c["patch"], c["patch"]), (c["patch"], c["patch"]),
                    padding="VALID", name="patch")(x)
        x = nn.LayerNorm(epsilon=1e-5, name="patch_norm")(x)
        for s, (depth, heads) in enumerate(zip(c["depths"], c["heads"])):
            if s > 0:
                x0, x1 = x[:, 0::2, 0::2], x[:, 1::2, 0::2]
                x2, x3 = x[:, 0::2, 1::2], x[:, 1::2, 1::2]
                x = jnp.concatenate([x0, x1, x2, x3], axis=-1)
                x = nn.LayerNorm(epsilon=1e-5, name=f"merge_norm_{s}")(x)
                x = dense(x.shape[-1] // 2, False, f"merge_{s}")(x)
            d = x.shape[-1]
            for i in range(depth):
                shift = w // 2 if i % 2 == 1 and x.shape[1] > w else 0
                h = nn.LayerNorm(epsilon=1e-5, name=f"norm1_{s}_{i}")(x)
                x = x + WindowAttention(heads, w, shift, name=f"attn_{s}_{i}")(h)
                h = nn.LayerNorm(epsilon=1e-5, name=f"norm2_{s}_{i}")(x)
                h = nn.gelu(dense(c["mlp_ratio"] * d, name=f"fc1_{s}_{i}")(h), approximate=False)
                x = x + dense(d, name=f"fc2_{s}_{i}")(h)
        x = nn.LayerNorm(epsilon=1e-5, name="norm")(x)
        return dense(c["classes"], name="head")(jnp.mean(x, axis=(1, 2)))


def timestep_embedding(t, dim):
    """DDPM's sinusoidal embedding [B, dim] of integer timesteps (sin half, then cos half)."""
    half = dim // 2
    freqs = jnp.exp(-np.log(10000.0) * jnp.arange(half, dtype=jnp.float32) / (half - 1))
    args = t.astype(jnp.float32)[:, None] * freqs[None]
    return jnp.concatenate([jnp.sin(args), jnp.cos(args)], axis=-1)


class ResBlock(nn.Module):
    """DDPM ResBlock: GroupNorm, SiLU, 3x3; plus the projected timestep embedding; GroupNorm,
    SiLU, 3x3; 1x1 shortcut when the width changes."""

    features: int
    groups: int

    @nn.compact
    def __call__(self, x, temb):
        h = nn.silu(nn.GroupNorm(self.groups, epsilon=1e-5, name="norm1")(x))
        h = nn.Conv(self.features, (3, 3), padding=pad(3), name="conv1")(h)
        h = h + nn.Dense(self.features, name="temb")(nn.silu(temb))[:, None, None, :]
        h = nn.silu(nn.GroupNorm(self.groups, epsilon=1e-5, name="norm2")(h))
        h = nn.Conv(self.features, (3, 3), padding=pad(3), name="conv2")(h)
        if x.shape[-1] != self.features:
            x = nn.Conv(self.features, (1, 1), name="shortcut")(x)
        return x + h


class AttnBlock(nn.Module):
    """DDPM's single-head self-attention over the pixels: GroupNorm, 1x1 q, k, v, softmax
    attention scaled by 1/sqrt(C), 1x1 output projection, residual."""

    groups: int

    @nn.compact
    def __call__(self, x):
        b, hh, ww, c = x.shape
        h = nn.GroupNorm(self.groups, epsilon=1e-5, name="norm")(x).reshape(b, hh * ww, c)
        q, k, v = (dense(c, name=n)(h) for n in ("q", "k", "v"))
        weights = jax.nn.softmax(jnp.einsum("bic,bjc->bij", q, k) * c ** -0.5, axis=-1)
        out = dense(c, name="proj")(jnp.einsum("bij,bjc->bic", weights, v))
        return x + out.reshape(b, hh, ww, c)


class UNet(nn.Module):
    """DDPM's UNet: timestep MLP, 3x3 stem, per resolution `res_blocks` ResBlocks (attention
    after each at `attn_res`) and a stride-2 3x3 convolution down, a middle ResBlock-attention-
    ResBlock, per resolution `res_blocks`+1 ResBlocks on the concatenated skip and nearest 2x
    upsampling + 3x3 up, GroupNorm, SiLU, 3x3 to the predicted noise."""

    cfg: dict

    @nn.compact
    def __call__(self, x, t):
        c = self.cfg
        ch, g = c["channels"], c["groups"]
        temb = timestep_embedding(t, ch)
        temb = dense(4 * ch, name="temb_1")(nn.silu(dense(4 * ch, name="temb_0")(temb)))
        h = nn.Conv(ch, (3, 3), padding=pad(3), name="conv_in")(x)
        skips = [h]
        for level, mult in enumerate(c["mults"]):
            for i in range(c["res_blocks"]):
                h = ResBlock(ch * mult, g, name=f"down_{level}_{i}")(h, temb)
                if h.shape[1] in c["attn_res"]:
                    h = AttnBlock(g, name=f"down_attn_{level}_{i}")(h)
                skips.append(h)
            if level + 1 < len(c["mults"]):
                h = nn.Conv(h.shape[-1], (3, 3), (2, 2), padding=pad(3),
                            name=f"downsample_{level}")(h)
                skips.append(h)
        h = ResBlock(h.shape[-1], g, name="mid_0")(h, temb)
        h = AttnBlock(g, name="mid_attn")(h)
        h = ResBlock(h.shape[-1], g, name="mid_1")(h, temb)
        for level in reversed(range(len(c["mults"]))):
            for i in range(c["res_blocks"] + 1):
                h = jnp.concatenate([h, skips.pop()], axis=-1)
                h = ResBlock(ch * c["mults"][level], g, name=f"up_{level}_{i}")(h, temb)
                if h.shape[1] in c["attn_res"]:
                    h = AttnBlock(g, name=f"up_attn_{level}_{i}")(h)
            if level > 0:
                b, hh, ww, cc = h.shape
                h = jnp.broadcast_to(h[:, :, None, :, None, :], (b, hh, 2, ww, 2, cc))
                h = h.reshape(b, 2 * hh, 2 * ww, cc)
                h = nn.Conv(cc, (3, 3), padding=pad(3), name=f"upsample_{level}")(h)
        h = nn.silu(nn.GroupNorm(g, epsilon=1e-5, name="norm_out")(h))
        return nn.Conv(x.shape[-1], (3, 3), padding=pad(3), name="conv_out")(h)
