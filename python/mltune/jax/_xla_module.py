"""A tuned HLO module compiled by XLA and run in the place of the function it came from.

The compile is the one the daemon's XLA worker measured it with (backends/xla/xla_child.py,
`_compile`: HLO text -> XLA's parser -> StableHLO -> compile_and_load with jax's compile options
and the tuned debug options), so the runtime it measured is the one this gets. That file is not
part of this package; keep the two in step."""

import jax
import numpy as np
from jax._src import compiler
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib import xla_client as xc
from jax._src.lib.mlir import ir


def device_for(target):
    """The device a result for `target` runs on: the CPU for xla-cpu, the first GPU for
    xla-gpu, JAX's default device otherwise."""
    platform = {"xla-cpu": "cpu", "xla-gpu": "gpu"}.get(target)
    try:
        return jax.devices(platform)[0] if platform else jax.devices()[0]
    except RuntimeError as e:
        raise RuntimeError(f"no {platform} device for a result on {target}: {e}") from None


def compile_module(hlo_text, compiler_options, device):
    """(executable, parameter count) of `hlo_text` compiled as jax.jit compiles, with XLA debug
    options `compiler_options` ({name: value})."""
    try:
        module = xc.hlo.hlo_module_from_text(hlo_text)
    except Exception as e:  # XLA's parser names the line and column
        raise ValueError(f"XLA's parser rejects the tuned module: {e}") from None
    serialized = module.as_serialized_hlo_module_proto()
    stablehlo = xc._xla.mlir.hlo_to_stablehlo(serialized)
    backend = device.client
    options = compiler.get_compile_options(
        num_replicas=1, num_partitions=1, backend=backend,
        env_options_overrides=dict(compiler_options) if compiler_options else None)
    with jax_mlir.make_ir_context():
        executable = backend.compile_and_load(ir.Module.parse(stablehlo),
                                              executable_devices=xc.DeviceList((device,)),
                                              compile_options=options)
    shape = xc.XlaComputation(serialized).program_shape()
    return executable, len(shape.parameter_shapes())


class ModuleFunction:
    """Runs a compiled module on the function's arguments: the same pytrees in and out as the
    function, for arguments of the example arguments' shapes and dtypes."""

    def __init__(self, hlo_text, compiler_options, lowering, device):
        self._executable, parameters = compile_module(hlo_text, compiler_options, device)
        if parameters != len(lowering.kept):
            raise ValueError(f"the tuned module takes {parameters} parameters where the "
                             f"function's lowering takes {len(lowering.kept)}: it is not a "
                             "result for this function")
        self._device = device
        self._lowering = lowering

    def _argument(self, index, leaf):
        shape, dtype = self._lowering.in_types[index]
        array = leaf if isinstance(leaf, jax.Array) else jax.numpy.asarray(leaf)
        if tuple(array.shape) != shape or array.dtype != dtype:
            raise TypeError(f"argument {index} is {array.dtype}{list(array.shape)} where the "
                            f"function was tuned for {np.dtype(dtype)}{list(shape)}")
        return jax.device_put(array, self._device)

    def __call__(self, *args):
        leaves, tree = jax.tree_util.tree_flatten(args)
        if tree != self._lowering.in_tree:
            raise TypeError(f"arguments {tree} where the function was tuned for "
                            f"{self._lowering.in_tree}")
        arrays = [self._argument(i, leaves[i]) for i in self._lowering.kept]
        results = self._executable.execute_sharded(arrays)
        outputs = [shards[0] for shards in results.disassemble_into_single_device_arrays()]
        if len(outputs) != self._lowering.out_tree.num_leaves:
            raise RuntimeError(f"the tuned module returns {len(outputs)} values where the "
                               f"function returns {self._lowering.out_tree.num_leaves}")
        return jax.tree_util.tree_unflatten(self._lowering.out_tree, outputs)
