"""Flax definitions of the zoo's convolutional networks (NHWC): ResNet-50 v1.5, Inception-v3 and
MobileNet-v2, with batch norm (batch statistics in the training step, running ones in inference)."""

from functools import partial

import flax.linen as nn
import jax.numpy as jnp


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
