"""A ResNeXt-50 (32x4d)-shaped fit set for the grouped-convolution default (lowering.cc, impl 6).

No zoo model the defaults are fitted on has grouped convolutions, so this writes one: each stage's
1x1 layer and grouped 3x3 layer (32 groups of 4, 8, 16 and 32 channels; stride 2 after the first
stage), scale, shift and ReLU between, as JAX inference steps at batch 1 and 8, into a directory
laid out as the zoo is (manifest.json, hlo/), role "fit", for bench/gemm_defaults and
bench/cpu_kinds (--zoo DIR):

    build/xla-venv/bin/python bench/fit_sets/resnext_grouped.py /tmp/fit-grouped
"""
import json
import os
import sys

import jax
import jax.numpy as jnp
from jax import lax

STAGES = [(128, 1), (256, 2), (512, 2), (1024, 2)]  # width, stride of the grouped layer
GROUPS = 32
NHWC = ('NHWC', 'HWIO', 'NHWC')


def block(x, ws, stride):
    y = lax.conv_general_dilated(x, ws[0], (1, 1), 'VALID', dimension_numbers=NHWC)
    y = jnp.maximum(y * ws[1] + ws[2], 0)
    y = lax.conv_general_dilated(y, ws[3], (stride, stride), ((1, 1), (1, 1)),
                                 dimension_numbers=NHWC, feature_group_count=GROUPS)
    return jnp.maximum(y * ws[4] + ws[5], 0)


def model(x, params):
    for (_, stride), ws in zip(STAGES, params):
        x = block(x, ws, stride)
    return x


def params_for(cin):
    key = jax.random.PRNGKey(0)
    params = []
    for width, _ in STAGES:
        k = jax.random.split(key, 3)
        key = k[0]
        params.append([jax.random.normal(k[1], (1, 1, cin, width)) * 0.05,
                       jnp.ones((width,)), jnp.zeros((width,)),
                       jax.random.normal(k[2], (3, 3, width // GROUPS, width)) * 0.05,
                       jnp.ones((width,)), jnp.zeros((width,))])
        cin = width
    return params


def main(out):
    os.makedirs(os.path.join(out, 'hlo'), exist_ok=True)
    variants = {}
    for batch in (1, 8):
        x = jnp.ones((batch, 56, 56, 64))
        text = jax.jit(model).lower(x, params_for(64)).as_text(dialect='hlo')
        name = f'hlo/resnext.infer.b{batch}.before.hlo'
        with open(os.path.join(out, name), 'w') as f:
            f.write(text)
        variants[f'infer.b{batch}'] = {'batch': batch, 'before_xla': name}
    manifest = {'generator': {'command': ' '.join(sys.argv)},
                'models': {'resnext': {'role': 'fit', 'variants': variants}}}
    with open(os.path.join(out, 'manifest.json'), 'w') as f:
        json.dump(manifest, f, indent=1)


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else '/tmp/fit-grouped')
