// HLO modules covering the ops the backends generate code for, one kind each (elementwise,
// integer, bf16/f16, broadcasts and index ops, gather, reductions, rows, windows, dots,
// convolutions, control flow, sort, scatter, custom-calls): the CPU backend's op suite runs them
// against the evaluator, the GPU backend's codegen test compiles them to PTX.
#pragma once

namespace mltune::backends {

struct Case {
  const char* name;
  const char* hlo;
};

inline constexpr Case kOpCases[] = {
    {"float_elementwise", R"(
HloModule m
ENTRY e {
  a = f32[7,33] parameter(0)
  b = f32[7,33] parameter(1)
  add = f32[7,33] add(a, b)
  mul = f32[7,33] multiply(add, a)
  sub = f32[7,33] subtract(mul, b)
  one = f32[] constant(1)
  ones = f32[7,33] broadcast(one), dimensions={}
  absb = f32[7,33] abs(b)
  den = f32[7,33] add(absb, ones)
  div = f32[7,33] divide(sub, den)
  mx = f32[7,33] maximum(div, a)
  mn = f32[7,33] minimum(mx, b)
  ex = f32[7,33] exponential(mn)
  th = f32[7,33] tanh(ex)
  lg = f32[7,33] logistic(div)
  ln = f32[7,33] log(den)
  sq = f32[7,33] sqrt(den)
  rs = f32[7,33] rsqrt(den)
  ng = f32[7,33] negate(th)
  sg = f32[7,33] sign(a)
  fl = f32[7,33] floor(mul)
  cl = f32[7,33] ceil(mul)
  pw = f32[7,33] power(den, a)
  cmp = pred[7,33] compare(a, b), direction=GT
  sel = f32[7,33] select(cmp, lg, ln)
  lo = f32[] constant(-0.25)
  hi = f32[] constant(0.5)
  los = f32[7,33] broadcast(lo), dimensions={}
  his = f32[7,33] broadcast(hi), dimensions={}
  clp = f32[7,33] clamp(los, mul, his)
  cv = s32[7,33] convert(pw)
  back = f32[7,33] convert(cv)
  s1 = f32[7,33] add(sq, rs)
  s2 = f32[7,33] add(s1, ng)
  s3 = f32[7,33] add(s2, sg)
  s4 = f32[7,33] add(s3, fl)
  s5 = f32[7,33] add(s4, cl)
  s6 = f32[7,33] add(s5, sel)
  s7 = f32[7,33] add(s6, clp)
  ROOT s8 = f32[7,33] add(s7, back)
})"},
    {"integer_elementwise", R"(
HloModule m
ENTRY e {
  a = s32[5,9] parameter(0)
  b = s32[5,9] parameter(1)
  u = u32[5,9] parameter(2)
  add = s32[5,9] add(a, b)
  mul = s32[5,9] multiply(add, b)
  div = s32[5,9] divide(mul, b)
  rem = s32[5,9] remainder(mul, b)
  shl = s32[5,9] shift-left(add, b)
  sra = s32[5,9] shift-right-arithmetic(mul, b)
  an = s32[5,9] and(shl, sra)
  o = s32[5,9] or(an, div)
  x = s32[5,9] xor(o, rem)
  n = s32[5,9] not(x)
  srl = u32[5,9] shift-right-logical(u, u)
  pc = u32[5,9] popcnt(srl)
  cz = u32[5,9] count-leading-zeros(u)
  usum = u32[5,9] add(pc, cz)
  uc = s32[5,9] convert(usum)
  mx = s32[5,9] maximum(n, uc)
  eq = pred[5,9] compare(a, b), direction=EQ
  p = pred[5,9] not(eq)
  ROOT t = (s32[5,9], pred[5,9], u32[5,9]) tuple(mx, p, usum)
})"},
    {"layout_ops", R"(
HloModule m
ENTRY e {
  a = f32[4,6] parameter(0)
  b = f32[3,4] parameter(1)
  t = f32[6,4] transpose(a), dimensions={1,0}
  r = f32[2,3,4] reshape(t)
  bb = f32[2,3,4] broadcast(b), dimensions={1,2}
  s = f32[2,3,4] add(r, bb)
  rv = f32[2,3,4] reverse(s), dimensions={0,2}
  sl = f32[2,2,2] slice(rv), slice={[0:2], [1:3], [0:4:2]}
  sl2 = f32[2,1,2] slice(rv), slice={[0:2], [0:1], [1:3]}
  cat = f32[2,5,2] concatenate(sl, sl, sl2), dimensions={1}
  z = f32[] constant(0.5)
  pd = f32[3,10,3] pad(cat, z), padding=1_0x2_-1_1x0_1
  io = f32[3,10,3] iota(), iota_dimension=1
  ROOT out = f32[3,10,3] multiply(pd, io)
})"},
    {"dynamic_slices", R"(
HloModule m
ENTRY e {
  a = f32[8,6] parameter(0)
  u = f32[3,2] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ds = f32[3,2] dynamic-slice(a, i, j), dynamic_slice_sizes={3,2}
  sum = f32[3,2] add(ds, u)
  ROOT dus = f32[8,6] dynamic-update-slice(a, sum, j, i)
})"},
    // A dynamic-update-slice leaving its kernel (written in place: the operand copied, then the
    // window) that another output of the kernel also reads (element by element).
    {"dynamic_update_slice_output_and_read", R"(
HloModule m
ENTRY e {
  a = f32[5,4,6] parameter(0)
  x = f32[1,4,6] parameter(1)
  t = f32[1,4,6] tanh(x)
  i = s32[] constant(2)
  z = s32[] constant(0)
  dus = f32[5,4,6] dynamic-update-slice(a, t, i, z, z)
  neg = f32[5,4,6] negate(dus)
  ROOT r = (f32[5,4,6], f32[5,4,6]) tuple(dus, neg)
})"},
    // Padded windows run over the range of positions inside the operand (no bounds test): with
    // window dilation and stride, and a cumulative sum as wide as its input.
    {"reduce_window_padded_ranges", R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
addi {
  ai = s32[] parameter(0)
  bi = s32[] parameter(1)
  ROOT si = s32[] add(ai, bi)
}
ENTRY e {
  x = f32[3,17] parameter(0)
  z = f32[] constant(0)
  d = f32[3,6] reduce-window(x, z), window={size=1x4 stride=1x3 pad=0_0x2_3 rhs_dilate=1x2}, to_apply=add
  i = s32[17] iota(), iota_dimension=0
  zi = s32[] constant(0)
  c = s32[17] reduce-window(i, zi), window={size=17 pad=16_0}, to_apply=addi
  ROOT t = (f32[3,6], s32[17]) tuple(d, c)
})"},
    {"reductions", R"(
HloModule m
add {
  ad0 = f32[] parameter(0)
  ad1 = f32[] parameter(1)
  ROOT adr = f32[] add(ad0, ad1)
}
max {
  mx0 = f32[] parameter(0)
  mx1 = f32[] parameter(1)
  ROOT mxr = f32[] maximum(mx0, mx1)
}
ENTRY e {
  a = f32[37,130] parameter(0)
  z = f32[] constant(0)
  ninf = f32[] constant(-inf)
  sq = f32[37,130] multiply(a, a)
  rows = f32[37] reduce(sq, z), dimensions={1}, to_apply=add
  cols = f32[130] reduce(a, ninf), dimensions={0}, to_apply=max
  all = f32[] reduce(a, z), dimensions={0,1}, to_apply=add
  ROOT t = (f32[37], f32[130], f32[]) tuple(rows, cols, all)
})"},
    // A unit leading dimension: the first loop is over a reduced dimension, which `parallel`
    // must not split (every thread would add into the same outputs). And reductions to one
    // element, where `parallel` has no loop to split and is not offered.
    {"reduce_unit_leading_dims", R"(
HloModule m
add {
  ad0 = f32[] parameter(0)
  ad1 = f32[] parameter(1)
  ROOT adr = f32[] add(ad0, ad1)
}
ENTRY e {
  a = f32[1,2048,24] parameter(0)
  b = f32[1,4096] parameter(1)
  z = f32[] constant(0)
  cols = f32[1,24] reduce(a, z), dimensions={1}, to_apply=add
  one = f32[1] reduce(b, z), dimensions={1}, to_apply=add
  ROOT t = (f32[1,24], f32[1]) tuple(cols, one)
})"},
    {"softmax", R"(
HloModule m
add {
  ad0 = f32[] parameter(0)
  ad1 = f32[] parameter(1)
  ROOT adr = f32[] add(ad0, ad1)
}
max {
  mx0 = f32[] parameter(0)
  mx1 = f32[] parameter(1)
  ROOT mxr = f32[] maximum(mx0, mx1)
}
ENTRY e {
  a = f32[19,70] parameter(0)
  ninf = f32[] constant(-inf)
  z = f32[] constant(0)
  m = f32[19] reduce(a, ninf), dimensions={1}, to_apply=max
  mb = f32[19,70] broadcast(m), dimensions={0}
  d = f32[19,70] subtract(a, mb)
  ex = f32[19,70] exponential(d)
  s = f32[19] reduce(ex, z), dimensions={1}, to_apply=add
  sb = f32[19,70] broadcast(s), dimensions={0}
  ROOT o = f32[19,70] divide(ex, sb)
})"},
    // Row fusion: two passes (mean, variance), per-row values (rsqrt), a broadcast weight along
    // the row, a row length no lane count divides, and a per-row value leaving the kernel.
    {"layer_norm_rows", R"(
HloModule m
add {
  ad0 = f32[] parameter(0)
  ad1 = f32[] parameter(1)
  ROOT adr = f32[] add(ad0, ad1)
}
ENTRY e {
  x = f32[6,67] parameter(0)
  w = f32[67] parameter(1)
  z = f32[] constant(0)
  inv = f32[] constant(0.0149253728)
  invb = f32[6] broadcast(inv), dimensions={}
  s = f32[6] reduce(x, z), dimensions={1}, to_apply=add
  mean = f32[6] multiply(s, invb)
  mb = f32[6,67] broadcast(mean), dimensions={0}
  xc = f32[6,67] subtract(x, mb)
  sq = f32[6,67] multiply(xc, xc)
  ss = f32[6] reduce(sq, z), dimensions={1}, to_apply=add
  var = f32[6] multiply(ss, invb)
  eps = f32[] constant(1e-05)
  epsb = f32[6] broadcast(eps), dimensions={}
  ve = f32[6] add(var, epsb)
  rs = f32[6] rsqrt(ve)
  rb = f32[6,67] broadcast(rs), dimensions={0}
  wb = f32[6,67] broadcast(w), dimensions={1}
  n = f32[6,67] multiply(xc, rb)
  y = f32[6,67] multiply(n, wb)
  ROOT t = (f32[6,67], f32[6]) tuple(y, mean)
})"},
    // A reduce whose consumer re-indexes its rows (transpose) must not be row-fused.
    {"row_reduce_transposed_consumer", R"(
HloModule m
max {
  mx0 = f32[] parameter(0)
  mx1 = f32[] parameter(1)
  ROOT mxr = f32[] maximum(mx0, mx1)
}
ENTRY e {
  a = f32[8,8] parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[8] reduce(a, ninf), dimensions={1}, to_apply=max
  mb = f32[8,8] broadcast(m), dimensions={0}
  d = f32[8,8] subtract(a, mb)
  ROOT t = f32[8,8] transpose(d), dimensions={1,0}
})"},
    {"pooling", R"(
HloModule m
max {
  mx0 = f32[] parameter(0)
  mx1 = f32[] parameter(1)
  ROOT mxr = f32[] maximum(mx0, mx1)
}
add {
  ad0 = f32[] parameter(0)
  ad1 = f32[] parameter(1)
  ROOT adr = f32[] add(ad0, ad1)
}
ENTRY e {
  a = f32[2,9,9,3] parameter(0)
  ninf = f32[] constant(-inf)
  z = f32[] constant(0)
  mp = f32[2,5,5,3] reduce-window(a, ninf), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0}, to_apply=max
  ap = f32[2,4,4,3] reduce-window(a, z), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=add
  ROOT t = (f32[2,5,5,3], f32[2,4,4,3]) tuple(mp, ap)
})"},
    {"dot_bias_relu", R"(
HloModule m
ENTRY e {
  x = f32[45,70] parameter(0)
  w = f32[70,37] parameter(1)
  b = f32[37] parameter(2)
  d = f32[45,37] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[45,37] broadcast(b), dimensions={1}
  s = f32[45,37] add(d, bb)
  z = f32[] constant(0)
  zb = f32[45,37] broadcast(z), dimensions={}
  ROOT r = f32[45,37] maximum(s, zb)
})"},
    {"dot_transposed_batched", R"(
HloModule m
ENTRY e {
  x = f32[3,20,17] parameter(0)
  w = f32[3,33,17] parameter(1)
  ROOT d = f32[3,20,33] dot(x, w), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}
})"},
    {"dot_plain", R"(
HloModule m
ENTRY e {
  x = f32[130,300] parameter(0)
  w = f32[300,70] parameter(1)
  ROOT d = f32[130,70] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})"},
    // A product whose kernel output is a reshape of it (an LM head's [1, tokens, vocab]): the
    // GEMM writes the output buffer directly.
    {"dot_reshaped_output", R"(
HloModule m
ENTRY e {
  x = f32[2,24,40] parameter(0)
  w = f32[40,70] parameter(1)
  xr = f32[48,40] reshape(x)
  d = f32[48,70] dot(xr, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = f32[2,24,70] reshape(d)
})"},
    // Matrix-vector shapes take mt_gemm's unpacked paths: per-batch dot products (K not a
    // multiple of the 16-lane partial sums), a matrix times a vector, and a vector times a
    // matrix wider than one 256-column chunk.
    {"dot_batched_dot_products", R"(
HloModule m
ENTRY e {
  x = f32[7,45] parameter(0)
  ROOT d = f32[7] dot(x, x), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_contracting_dims={1}
})"},
    {"dot_matrix_vector", R"(
HloModule m
ENTRY e {
  x = f32[33,70] parameter(0)
  v = f32[70] parameter(1)
  ROOT d = f32[33] dot(x, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})"},
    {"dot_vector_matrix", R"(
HloModule m
ENTRY e {
  v = f32[1,19] parameter(0)
  w = f32[19,300] parameter(1)
  ROOT d = f32[1,300] dot(v, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})"},
    {"conv_nchw", R"(
HloModule m
ENTRY e {
  x = f32[2,5,11,11] parameter(0)
  w = f32[7,5,3,3] parameter(1)
  ROOT c = f32[2,7,6,6] convolution(x, w), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
})"},
    {"conv_nhwc_bias", R"(
HloModule m
ENTRY e {
  x = f32[1,8,8,6] parameter(0)
  w = f32[3,3,6,10] parameter(1)
  b = f32[10] parameter(2)
  c = f32[1,8,8,10] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  bb = f32[1,8,8,10] broadcast(b), dimensions={3}
  ROOT s = f32[1,8,8,10] add(c, bb)
})"},
    {"conv_depthwise_dilated", R"(
HloModule m
ENTRY e {
  x = f32[1,6,9,9] parameter(0)
  w = f32[6,1,3,3] parameter(1)
  ROOT c = f32[1,6,9,9] convolution(x, w), window={size=3x3 pad=2_2x2_2 rhs_dilate=2x2}, dim_labels=bf01_oi01->bf01, feature_group_count=6
})"},
    // Depthwise as EfficientNet's blocks have it: channels minor (20, not a multiple of the
    // vector), strided, asymmetric padding, a fused operand expression (a SiLU) and a fused
    // epilogue (a per-channel scale and shift).
    {"conv_depthwise_nhwc_fused", R"(
HloModule m
ENTRY e {
  x = f32[2,13,11,20] parameter(0)
  w = f32[3,3,1,20] parameter(1)
  g = f32[20] parameter(2)
  ng = f32[2,13,11,20] negate(x)
  ex = f32[2,13,11,20] exponential(ng)
  one = f32[] constant(1)
  ob = f32[2,13,11,20] broadcast(one), dimensions={}
  de = f32[2,13,11,20] add(ex, ob)
  sg = f32[2,13,11,20] divide(x, de)
  c = f32[2,7,6,20] convolution(sg, w), window={size=3x3 stride=2x2 pad=1_1x1_2}, dim_labels=b01f_01io->b01f, feature_group_count=20
  gb = f32[2,7,6,20] broadcast(g), dimensions={3}
  ROOT s = f32[2,7,6,20] multiply(c, gb)
})"},
    // Depthwise on a 7x7 map with 80 channels (a multiple of 16): rows shorter than 8 outputs
    // take blocks of channel vectors, and the output rows are written in place.
    {"conv_depthwise_small_map", R"(
HloModule m
ENTRY e {
  x = f32[2,7,7,80] parameter(0)
  w = f32[5,5,1,80] parameter(1)
  ROOT c = f32[2,7,7,80] convolution(x, w), window={size=5x5 pad=2_2x2_2}, dim_labels=b01f_01io->b01f, feature_group_count=80
})"},
    // A causal 1-D depthwise convolution over a sequence, as a selective state-space model has
    // it before its scan: 17 positions, 4 taps, padded on the left only.
    {"conv_depthwise_1d_causal", R"(
HloModule m
ENTRY e {
  x = f32[2,17,33] parameter(0)
  w = f32[4,1,33] parameter(1)
  ROOT c = f32[2,17,33] convolution(x, w), window={size=4 pad=3_0}, dim_labels=b0f_0io->b0f, feature_group_count=33
})"},
    // Grouped, strided, asymmetric padding, dimension orders oneDNN has no format tag for; the
    // convolution is an output and feeds a fused ReLU.
    {"conv_grouped_strided_relu", R"(
HloModule m
ENTRY e {
  x = f32[8,2,9,10] parameter(0)
  w = f32[3,3,4,6] parameter(1)
  c = f32[2,4,11,6] convolution(x, w), window={size=3x3 stride=2x1 pad=1_0x2_1}, dim_labels=fb01_01io->b01f, feature_group_count=2
  z = f32[] constant(0)
  zb = f32[2,4,11,6] broadcast(z), dimensions={}
  r = f32[2,4,11,6] maximum(c, zb)
  ROOT t = (f32[2,4,11,6], f32[2,4,11,6]) tuple(c, r)
})"},
    // exp over its whole range, two vectors' worth: underflow to 0 and through the denormals,
    // overflow to inf, the infinities themselves.
    {"exponential_range", R"(
HloModule m
ENTRY e {
  x = f32[32] parameter(0)
  zero = f32[] constant(0)
  zb = f32[32] broadcast(zero), dimensions={}
  z = f32[32] multiply(x, zb)
  c = f32[32] constant({-200, -103.9, -95, -87.5, -10, -0.3, 0, 1, 20, 88.5, 88.8, 100, inf, -inf, -1e-3, 1e-3, -200, -103.9, -95, -87.5, -10, -0.3, 0, 1, 20, 88.5, 88.8, 100, inf, -inf, -1e-3, 1e-3})
  s = f32[32] add(z, c)
  ROOT e = f32[32] exponential(s)
})"},
    // erf over its whole range (the exact GELU's), a vector's worth and a tail: its tails are
    // +-1 exactly, never beyond.
    {"erf_range", R"(
HloModule m
ENTRY e {
  x = f32[24] parameter(0)
  zero = f32[] constant(0)
  zb = f32[24] broadcast(zero), dimensions={}
  z = f32[24] multiply(x, zb)
  c = f32[24] constant({-200, -4.5, -4, -3.9, -2, -1, -0.5, -1e-3, 0, 1e-6, 0.25, 0.5, 1, 2.5, 3.9, 4, 4.5, inf, -inf, 1e-30, -0.75, 1.5, 3, -3})
  s = f32[24] add(z, c)
  ROOT e = f32[24] erf(s)
})"},
    // Grouped as RegNet's blocks have it: 4 groups of 8 channels, channels minor, strided, a fused
    // operand expression (a scale, shift and ReLU) and a fused epilogue; 7 outputs a row, so every
    // block is a tail.
    {"conv_grouped_nhwc_fused", R"(
HloModule m
ENTRY e {
  x = f32[2,9,13,32] parameter(0)
  w = f32[3,3,8,32] parameter(1)
  g = f32[32] parameter(2)
  gb = f32[2,9,13,32] broadcast(g), dimensions={3}
  xs = f32[2,9,13,32] multiply(x, gb)
  z = f32[] constant(0)
  zb = f32[2,9,13,32] broadcast(z), dimensions={}
  xr = f32[2,9,13,32] maximum(xs, zb)
  c = f32[2,5,7,32] convolution(xr, w), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=4
  cb = f32[2,5,7,32] broadcast(g), dimensions={3}
  ROOT s = f32[2,5,7,32] add(c, cb)
})"},
    // Grouped with 16 output channels a group (a 16-lane vector), 12 inputs each, a dilated 1-D
    // window over 19 positions (one block of 8 and a tail of 3), weights OIW: packed.
    {"conv_grouped_1d_wide_groups", R"(
HloModule m
ENTRY e {
  x = f32[1,24,19] parameter(0)
  w = f32[32,12,3] parameter(1)
  ROOT c = f32[1,32,19] convolution(x, w), window={size=3 pad=2_2 rhs_dilate=2}, dim_labels=bf0_oi0->bf0, feature_group_count=2
})"},
    // A depthwise convolution with a channel multiplier of 8: one input channel, 8 outputs a group.
    {"conv_grouped_channel_multiplier", R"(
HloModule m
ENTRY e {
  x = f32[1,6,6,3] parameter(0)
  w = f32[3,3,1,24] parameter(1)
  ROOT c = f32[1,6,6,24] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=3
})"},
    // ResNeXt-50's first stage: groups of 4 channels (a 4-lane vector), 11 outputs a row.
    {"conv_grouped_four_wide", R"(
HloModule m
ENTRY e {
  x = f32[2,6,11,16] parameter(0)
  w = f32[3,3,4,16] parameter(1)
  ROOT c = f32[2,6,11,16] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=4
})"},
    // Batch groups: each group of input images convolved with its block of output features.
    {"conv_batch_grouped", R"(
HloModule m
ENTRY e {
  x = f32[4,7,7,3] parameter(0)
  w = f32[3,3,3,6] parameter(1)
  ROOT c = f32[2,5,5,6] convolution(x, w), window={size=3x3}, dim_labels=b01f_01io->b01f, batch_group_count=2
})"},
    // A depthwise convolution's weight gradient as JAX writes it: the channels are the batch
    // groups, the output gradient the kernel.
    {"conv_depthwise_weight_gradient", R"(
HloModule m
ENTRY e {
  x = f32[4,2,6,6] parameter(0)
  dy = f32[2,4,4,4] parameter(1)
  ROOT c = f32[1,4,5,5] convolution(x, dy), window={size=4x4 pad=1_1x1_1}, dim_labels=bf01_io01->bf01, batch_group_count=4
})"},
    // 1-D, dilated, with a fused operand expression and constant weights (both materialized).
    {"conv_1d_fused_operand_constant_weights", R"(
HloModule m
ENTRY e {
  x = f32[3,12,2] parameter(0)
  xs = f32[3,12,2] multiply(x, x)
  w = f32[3,2,2] constant({{{1, -2}, {0.5, 3}}, {{-1, 0}, {2, 1}}, {{0.25, -0.5}, {1, -3}}})
  ROOT c = f32[3,11,2] convolution(xs, w), window={size=3 pad=2_1 rhs_dilate=2}, dim_labels=b0f_0io->b0f
})"},
    // Kernels large enough for `parallel` to be offered (kParallelMinBytes), one of each kind
    // but the GEMMs (the cases above offer them `parallel` at any size): a transposing loop, row
    // and column reductions, a softmax row kernel and a max pool.
    {"threaded_loop_and_pool", R"(
HloModule m
max {
  mx0 = f32[] parameter(0)
  mx1 = f32[] parameter(1)
  ROOT mxr = f32[] maximum(mx0, mx1)
}
ENTRY e {
  a = f32[400,97] parameter(0)
  b = f32[97,400] parameter(1)
  t = f32[97,400] transpose(a), dimensions={1,0}
  s = f32[97,400] add(t, b)
  x = f32[2,8,66,66] parameter(2)
  ninf = f32[] constant(-inf)
  pool = f32[2,8,33,33] reduce-window(x, ninf), window={size=1x1x2x2 stride=1x1x2x2}, to_apply=max
  ROOT r = (f32[97,400], f32[2,8,33,33]) tuple(s, pool)
})"},
    {"threaded_reductions", R"(
HloModule m
add {
  ad0 = f32[] parameter(0)
  ad1 = f32[] parameter(1)
  ROOT adr = f32[] add(ad0, ad1)
}
max {
  mx0 = f32[] parameter(0)
  mx1 = f32[] parameter(1)
  ROOT mxr = f32[] maximum(mx0, mx1)
}
ENTRY e {
  a = f32[301,130] parameter(0)
  z = f32[] constant(0)
  ninf = f32[] constant(-inf)
  sq = f32[301,130] multiply(a, a)
  rows = f32[301] reduce(sq, z), dimensions={1}, to_apply=add
  cols = f32[130] reduce(a, ninf), dimensions={0}, to_apply=max
  c = f32[301,130] parameter(1)
  m = f32[301] reduce(c, ninf), dimensions={1}, to_apply=max
  mb = f32[301,130] broadcast(m), dimensions={0}
  d = f32[301,130] subtract(c, mb)
  ex = f32[301,130] exponential(d)
  es = f32[301] reduce(ex, z), dimensions={1}, to_apply=add
  eb = f32[301,130] broadcast(es), dimensions={0}
  sm = f32[301,130] divide(ex, eb)
  ROOT t = (f32[301], f32[130], f32[301,130]) tuple(rows, cols, sm)
})"},
    // An embedding lookup (indices out of range are clamped, as XLA's gather does) fused with
    // its consumer, and a gather of 2-D windows with a leading index vector dimension.
    {"gathers", R"(
HloModule m
ENTRY e {
  table = f32[50,8] parameter(0)
  ids = s32[3,4] parameter(1)
  emb = f32[3,4,8] gather(table, ids), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,8}
  sq = f32[3,4,8] multiply(emb, emb)
  x = f32[6,7,5] parameter(2)
  st = s32[2,3] parameter(3)
  g2 = f32[3,2,4] gather(x, st), offset_dims={1,2}, collapsed_slice_dims={2}, start_index_map={0,2}, index_vector_dim=0, slice_sizes={2,4,1}
  ROOT t = (f32[3,4,8], f32[3,2,4]) tuple(sq, g2)
})"},
    // An embedding gradient (repeated ids add up, in order) and 2-D windows combined by max,
    // where windows that do not fit the operand are skipped whole, as XLA does.
    {"scatters", R"(
HloModule m
add {
  a0 = f32[] parameter(0)
  a1 = f32[] parameter(1)
  ROOT s = f32[] add(a0, a1)
}
mx {
  m0 = f32[] parameter(0)
  m1 = f32[] parameter(1)
  ROOT m = f32[] maximum(m0, m1)
}
ENTRY e {
  t = f32[10,4] parameter(0)
  ids = s32[6] parameter(1)
  u = f32[6,4] parameter(2)
  sa = f32[10,4] scatter(t, ids, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  x = f32[6,7] parameter(3)
  st = s32[2,3] parameter(4)
  w = f32[3,3,2] parameter(5)
  sm = f32[6,7] scatter(x, st, w), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=0, to_apply=mx
  neg = f32[6,7] negate(sm)
  ROOT r = (f32[10,4], f32[6,7]) tuple(sa, neg)
})"},
    // Framework markers the backend knows (as the evaluator's registry): a Neuron transfer
    // (identity) and Neuron's GELU (erf form).
    {"framework_custom_calls", R"(
HloModule m
ENTRY e {
  a = f32[4,6] parameter(0)
  t = f32[4,6] custom-call(a), custom_call_target="AwsNeuronTransferWithStaticRing"
  s = f32[4,6] multiply(t, t)
  g = f32[4,6] custom-call(s), custom_call_target="AwsNeuronGelu"
  ROOT r = f32[4,6] subtract(g, a)
})"},
    // Same-width reinterpretation, as BERT's erf expansion masks a float's low mantissa bits.
    {"bitcast_converts", R"(
HloModule m
ENTRY e {
  a = f32[5,7] parameter(0)
  bits = u32[5,7] bitcast-convert(a)
  m = u32[] constant(4294963200)
  mb = u32[5,7] broadcast(m), dimensions={}
  masked = u32[5,7] and(bits, mb)
  f = f32[5,7] bitcast-convert(masked)
  s = s32[5,7] bitcast-convert(f)
  ROOT t = (f32[5,7], s32[5,7]) tuple(f, s)
})"},
    // A while with tuple state: a counter, a value the body updates through a GEMM, a weight it
    // passes through unchanged (no copy back), and a constant leaf in the initial state.
    {"while_tuple_state", R"(
HloModule m
cond {
  c_p = (s32[], f32[8,16], f32[16,16], f32[3]) parameter(0)
  c_i = s32[] get-tuple-element(c_p), index=0
  c_x = f32[8,16] get-tuple-element(c_p), index=1
  c_w = f32[16,16] get-tuple-element(c_p), index=2
  c_c = f32[3] get-tuple-element(c_p), index=3
  c_n = s32[] constant(5)
  ROOT c_lt = pred[] compare(c_i, c_n), direction=LT
}
body {
  b_p = (s32[], f32[8,16], f32[16,16], f32[3]) parameter(0)
  b_i = s32[] get-tuple-element(b_p), index=0
  b_x = f32[8,16] get-tuple-element(b_p), index=1
  b_w = f32[16,16] get-tuple-element(b_p), index=2
  b_c = f32[3] get-tuple-element(b_p), index=3
  b_one = s32[] constant(1)
  b_i1 = s32[] add(b_i, b_one)
  b_d = f32[8,16] dot(b_x, b_w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b_t = f32[8,16] tanh(b_d)
  b_c2 = f32[3] add(b_c, b_c)
  ROOT b_r = (s32[], f32[8,16], f32[16,16], f32[3]) tuple(b_i1, b_t, b_w, b_c2)
}
ENTRY e {
  x = f32[8,16] parameter(0)
  w = f32[16,16] parameter(1)
  z = s32[] constant(0)
  c = f32[3] constant({1, 2, 3})
  init = (s32[], f32[8,16], f32[16,16], f32[3]) tuple(z, x, w, c)
  wh = (s32[], f32[8,16], f32[16,16], f32[3]) while(init), condition=cond, body=body
  g0 = s32[] get-tuple-element(wh), index=0
  g1 = f32[8,16] get-tuple-element(wh), index=1
  g2 = f32[16,16] get-tuple-element(wh), index=2
  g3 = f32[3] get-tuple-element(wh), index=3
  s = f32[8,16] negate(g1)
  ROOT r = (s32[], f32[8,16], f32[3]) tuple(g0, s, g3)
})"},
    // Leaves the body passes through are read where they lie, not copied into the state: one
    // returned (copied out once, after the loop), one a constant read after it, one unused.
    {"while_passed_through_leaves", R"(
HloModule m
cond {
  c_p = (s32[], f32[4,8], f32[8,8], f32[8], f32[8,8]) parameter(0)
  c_i = s32[] get-tuple-element(c_p), index=0
  c_x = f32[4,8] get-tuple-element(c_p), index=1
  c_w = f32[8,8] get-tuple-element(c_p), index=2
  c_k = f32[8] get-tuple-element(c_p), index=3
  c_u = f32[8,8] get-tuple-element(c_p), index=4
  c_n = s32[] constant(3)
  ROOT c_lt = pred[] compare(c_i, c_n), direction=LT
}
body {
  b_p = (s32[], f32[4,8], f32[8,8], f32[8], f32[8,8]) parameter(0)
  b_i = s32[] get-tuple-element(b_p), index=0
  b_x = f32[4,8] get-tuple-element(b_p), index=1
  b_w = f32[8,8] get-tuple-element(b_p), index=2
  b_k = f32[8] get-tuple-element(b_p), index=3
  b_u = f32[8,8] get-tuple-element(b_p), index=4
  b_one = s32[] constant(1)
  b_i1 = s32[] add(b_i, b_one)
  b_d = f32[4,8] dot(b_x, b_w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b_kb = f32[4,8] broadcast(b_k), dimensions={1}
  b_s = f32[4,8] add(b_d, b_kb)
  b_t = f32[4,8] tanh(b_s)
  ROOT b_r = (s32[], f32[4,8], f32[8,8], f32[8], f32[8,8]) tuple(b_i1, b_t, b_w, b_k, b_u)
}
ENTRY e {
  x = f32[4,8] parameter(0)
  w = f32[8,8] parameter(1)
  u = f32[8,8] parameter(2)
  z = s32[] constant(0)
  k = f32[8] constant({1, -2, 3, -4, 5, -6, 7, -8})
  init = (s32[], f32[4,8], f32[8,8], f32[8], f32[8,8]) tuple(z, x, w, k, u)
  wh = (s32[], f32[4,8], f32[8,8], f32[8], f32[8,8]) while(init), condition=cond, body=body
  g0 = s32[] get-tuple-element(wh), index=0
  g1 = f32[4,8] get-tuple-element(wh), index=1
  g2 = f32[8,8] get-tuple-element(wh), index=2
  g3 = f32[8] get-tuple-element(wh), index=3
  g4 = f32[8,8] get-tuple-element(wh), index=4
  n3 = f32[8] negate(g3)
  ROOT r = (f32[4,8], f32[8,8], f32[8]) tuple(g1, g2, n3)
})"},
    // A scan stacking one row per step: `ys` is updated in place in the loop's state; `zs` is
    // also read by the step (its running sum), so its update cannot be.
    {"while_scan_rows", R"(
HloModule m
cond {
  c_p = (s32[], f32[4], f32[6,4], f32[6,4]) parameter(0)
  c_i = s32[] get-tuple-element(c_p), index=0
  c_h = f32[4] get-tuple-element(c_p), index=1
  c_ys = f32[6,4] get-tuple-element(c_p), index=2
  c_zs = f32[6,4] get-tuple-element(c_p), index=3
  c_n = s32[] constant(6)
  ROOT c_lt = pred[] compare(c_i, c_n), direction=LT
}
body {
  b_p = (s32[], f32[4], f32[6,4], f32[6,4]) parameter(0)
  b_i = s32[] get-tuple-element(b_p), index=0
  b_h = f32[4] get-tuple-element(b_p), index=1
  b_ys = f32[6,4] get-tuple-element(b_p), index=2
  b_zs = f32[6,4] get-tuple-element(b_p), index=3
  b_h1 = f32[4] sine(b_h)
  b_row = f32[1,4] reshape(b_h1)
  b_zero = s32[] constant(0)
  b_ys1 = f32[6,4] dynamic-update-slice(b_ys, b_row, b_i, b_zero)
  b_add = f32[] constant(0)
  b_sum = f32[4] reduce(b_zs, b_add), dimensions={0}, to_apply=add
  b_zrow = f32[1,4] reshape(b_sum)
  b_zs1 = f32[6,4] dynamic-update-slice(b_zs, b_zrow, b_i, b_zero)
  b_one = s32[] constant(1)
  b_i1 = s32[] add(b_i, b_one)
  ROOT b_r = (s32[], f32[4], f32[6,4], f32[6,4]) tuple(b_i1, b_h1, b_ys1, b_zs1)
}
add {
  a_x = f32[] parameter(0)
  a_y = f32[] parameter(1)
  ROOT a_s = f32[] add(a_x, a_y)
}
ENTRY e {
  h = f32[4] parameter(0)
  ys = f32[6,4] parameter(1)
  zs = f32[6,4] parameter(2)
  z = s32[] constant(0)
  init = (s32[], f32[4], f32[6,4], f32[6,4]) tuple(z, h, ys, zs)
  wh = (s32[], f32[4], f32[6,4], f32[6,4]) while(init), condition=cond, body=body
  g0 = s32[] get-tuple-element(wh), index=0
  g1 = f32[4] get-tuple-element(wh), index=1
  g2 = f32[6,4] get-tuple-element(wh), index=2
  g3 = f32[6,4] get-tuple-element(wh), index=3
  ROOT r = (s32[], f32[4], f32[6,4], f32[6,4]) tuple(g0, g1, g2, g3)
})"},
    // A pred conditional over tuple operands, and an s32 one of three branches whose index can
    // fall out of range (then the last branch runs).
    {"conditionals", R"(
HloModule m
on_true {
  t_p = (f32[4,5], f32[5]) parameter(0)
  t_a = f32[4,5] get-tuple-element(t_p), index=0
  t_b = f32[5] get-tuple-element(t_p), index=1
  t_bb = f32[4,5] broadcast(t_b), dimensions={1}
  ROOT t_s = f32[4,5] add(t_a, t_bb)
}
on_false {
  f_p = (f32[4,5], f32[5]) parameter(0)
  f_a = f32[4,5] get-tuple-element(f_p), index=0
  f_b = f32[5] get-tuple-element(f_p), index=1
  ROOT f_e = f32[4,5] exponential(f_a)
}
b0 {
  z0_p = f32[4,5] parameter(0)
  ROOT z0_n = f32[4,5] negate(z0_p)
}
b1 {
  z1_p = f32[4,5] parameter(0)
  ROOT z1_a = f32[4,5] abs(z1_p)
}
b2 {
  z2_p = f32[4,5] parameter(0)
  ROOT z2_s = f32[4,5] sine(z2_p)
}
ENTRY e {
  a = f32[4,5] parameter(0)
  b = f32[5] parameter(1)
  k = f32[] parameter(2)
  zero = f32[] constant(0)
  pr = pred[] compare(k, zero), direction=GT
  t = (f32[4,5], f32[5]) tuple(a, b)
  c1 = f32[4,5] conditional(pr, t, t), true_computation=on_true, false_computation=on_false
  four = f32[] constant(4)
  k4 = f32[] multiply(k, four)
  idx = s32[] convert(k4)
  c2 = f32[4,5] conditional(idx, c1, c1, c1), branch_computations={b0, b1, b2}
  ROOT r = (f32[4,5], f32[4,5]) tuple(c1, c2)
})"},
    // Sorts: one operand along its minor dimension in total order, and keys with an iota of
    // values along the major one, descending (as jnp.argsort and lax.sort_key_val write them).
    {"sorts", R"(
HloModule m
less {
  l_a = f32[] parameter(0)
  l_b = f32[] parameter(1)
  ROOT l_lt = pred[] compare(l_a, l_b), direction=LT, type=TOTALORDER
}
greater_key {
  g_a = f32[] parameter(0)
  g_b = f32[] parameter(1)
  g_c = s32[] parameter(2)
  g_d = s32[] parameter(3)
  ROOT g_gt = pred[] compare(g_a, g_b), direction=GT, type=TOTALORDER
}
ENTRY e {
  x = f32[6,9] parameter(0)
  s1 = f32[6,9] sort(x), dimensions={1}, to_apply=less
  i = s32[6,9] iota(), iota_dimension=0
  r = f32[6,9] round-nearest-even(x)
  s2 = (f32[6,9], s32[6,9]) sort(r, i), dimensions={0}, is_stable=true, to_apply=greater_key
  k = f32[6,9] get-tuple-element(s2), index=0
  v = s32[6,9] get-tuple-element(s2), index=1
  ROOT t = (f32[6,9], f32[6,9], s32[6,9]) tuple(s1, k, v)
})"},
    // JAX's threefry custom-call (jax.random on GPU in 2022), its result pair used twice.
    {"threefry", R"(
HloModule m
ENTRY e {
  k0 = u32[10] parameter(0)
  k1 = u32[10] parameter(1)
  x0 = u32[10] parameter(2)
  x1 = u32[10] parameter(3)
  c = (u32[10], u32[10]) custom-call(k0, k1, x0, x1), custom_call_target="cuda_threefry2x32"
  y0 = u32[10] get-tuple-element(c), index=0
  y1 = u32[10] get-tuple-element(c), index=1
  x = u32[10] xor(y0, y1)
  ROOT t = (u32[10], u32[10]) tuple(x, y1)
})"},
    // bf16 and f16, stored as 16 bits and computed in float with each result rounded to its
    // type: arithmetic, converts, constants, a reduction, a bitcast to bits and back, a sort.
    {"sixteen_bit_floats", R"(
HloModule m
sum {
  sa = bf16[] parameter(0)
  sb = bf16[] parameter(1)
  ROOT ss = bf16[] add(sa, sb)
}
less {
  la = f16[] parameter(0)
  lb = f16[] parameter(1)
  ROOT lt = pred[] compare(la, lb), direction=LT, type=TOTALORDER
}
ENTRY e {
  a = bf16[6,40] parameter(0)
  b = f16[6,40] parameter(1)
  c = bf16[40] constant({0.5, 1.5, -2, 3, 0.25, 7, -1, 2, 0.5, 1.5, -2, 3, 0.25, 7, -1, 2, 0.5, 1.5, -2, 3, 0.25, 7, -1, 2, 0.5, 1.5, -2, 3, 0.25, 7, -1, 2, 0.5, 1.5, -2, 3, 0.25, 7, -1, 2})
  cb = bf16[6,40] broadcast(c), dimensions={1}
  m = bf16[6,40] multiply(a, cb)
  e = bf16[6,40] exponential(m)
  bf = bf16[6,40] convert(b)
  s = bf16[6,40] add(e, bf)
  z = bf16[] constant(0)
  r = bf16[6] reduce(s, z), dimensions={1}, to_apply=sum
  h = f16[6,40] convert(s)
  t = f16[6,40] tanh(h)
  u = u16[6,40] bitcast-convert(t)
  one = u16[] constant(1)
  ob = u16[6,40] broadcast(one), dimensions={}
  u1 = u16[6,40] and(u, ob)
  f = f16[6,40] bitcast-convert(u)
  so = f16[6,40] sort(b), dimensions={1}, to_apply=less
  ROOT o = (bf16[6], f16[6,40], u16[6,40], f16[6,40], f32[6,40]) tuple(r, f, u1, so, h2)
  h2 = f32[6,40] convert(h)
})"},
    // Operands whose contracting dimension is minor on the rhs (a tied embedding) or major on
    // the lhs (a weight gradient), read transposed by the GEMM's packing; also as one row or
    // one column, which take the matrix-vector paths.
    // Dots the GEMMs do not take: each output element a fold in the result's type (integers
    // wrap), with a fused operand and epilogue.
    {"dot_f64_s32_bf16", R"(
HloModule m
ENTRY e {
  a = f64[3,7,5] parameter(0)
  b = f64[3,5,4] parameter(1)
  na = f64[3,7,5] negate(a)
  d = f64[3,7,4] dot(na, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  e = f64[3,7,4] exponential(d)
  i = s32[6,9] parameter(2)
  j = s32[9,2] parameter(3)
  k = s32[6,2] dot(i, j), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  x = bf16[4,16] parameter(4)
  y = bf16[16,3] parameter(5)
  z = bf16[4,3] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f64[3,7,4], s32[6,2], bf16[4,3]) tuple(e, k, z)
})"},
    {"dot_transposed_operands", R"(
HloModule m
ENTRY e {
  x = f32[2,37,48] parameter(0)
  emb = f32[2,53,48] parameter(1)
  xt = f32[2,48,37] parameter(2)
  v = f32[1,48] parameter(3)
  c = f32[48,1] parameter(4)
  w = f32[53,48] parameter(5)
  wt = f32[48,53] parameter(6)
  d1 = f32[2,37,53] dot(x, emb), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}
  d2 = f32[2,37,53] dot(xt, emb), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={2}
  d3 = f32[1,53] dot(v, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  d4 = f32[53,1] dot(wt, c), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  d5 = f32[1,53] dot(c, wt), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT t = (f32[2,37,53], f32[2,37,53], f32[1,53], f32[53,1], f32[1,53]) tuple(d1, d2, d3, d4, d5)
})"},
    // Pooling with the window on the minor dimension (NCHW), folded inside the row loop over the
    // interior columns, the border columns tested: a padded 3x3/s2 max pool of a fused relu, a
    // 3x3/s1 average pool, a dilated window with uneven padding, a window wider than some rows'
    // interior (7 wide on 9 columns), an integer sum, and a window wider than kInnerWindowMax.
    {"pooling_minor_windows", R"(
HloModule m
max {
  mx0 = f32[] parameter(0)
  mx1 = f32[] parameter(1)
  ROOT mxr = f32[] maximum(mx0, mx1)
}
add {
  ad0 = f32[] parameter(0)
  ad1 = f32[] parameter(1)
  ROOT adr = f32[] add(ad0, ad1)
}
addi {
  ai0 = s32[] parameter(0)
  ai1 = s32[] parameter(1)
  ROOT air = s32[] add(ai0, ai1)
}
ENTRY e {
  a = f32[1,3,11,37] parameter(0)
  ninf = f32[] constant(-inf)
  z = f32[] constant(0)
  zb = f32[1,3,11,37] broadcast(z), dimensions={}
  relu = f32[1,3,11,37] maximum(a, zb)
  mp = f32[1,3,6,19] reduce-window(relu, ninf), window={size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1}, to_apply=max
  ap = f32[1,3,11,37] reduce-window(a, z), window={size=1x1x3x3 stride=1x1x1x1 pad=0_0x0_0x1_1x1_1}, to_apply=add
  dl = f32[1,3,11,18] reduce-window(a, ninf), window={size=1x1x2x3 stride=1x1x1x2 pad=0_0x0_0x1_0x2_1 rhs_dilate=1x1x1x2}, to_apply=max
  b = f32[2,9] parameter(1)
  wide = f32[2,6] reduce-window(b, z), window={size=1x7 stride=1x1 pad=0_0x1_2}, to_apply=add
  c = s32[4,20] parameter(2)
  zi = s32[] constant(0)
  si = s32[4,9] reduce-window(c, zi), window={size=2x4 stride=1x2 pad=0_1x0_0}, to_apply=addi
  big = f32[2,1] reduce-window(b, z), window={size=1x9 stride=1x3 pad=0_0x0_0}, to_apply=add
  ROOT t = (f32[1,3,6,19], f32[1,3,11,37], f32[1,3,11,18], f32[2,6], s32[4,9], f32[2,1]) tuple(mp, ap, dl, wide, si, big)
})"},
    // Trailing reduced dimensions folded as one flat run (FlatReducedRun): a global average pool
    // over NCHW's 7x7 of a hard-swish (scalar broadcasts fuse), a maximum over three dimensions
    // (594 elements: the long-row lanes), a sum whose fused operand broadcasts along a reduced
    // dimension, which keeps its loops, and runs whose minor dimensions have length 1 (the flat
    // index goes on the innermost longer one).
    {"reduce_flat_trailing_run", R"(
HloModule m
sum {
  sa = f32[] parameter(0)
  sb = f32[] parameter(1)
  ROOT sc = f32[] add(sa, sb)
}
max {
  ma = f32[] parameter(0)
  mb = f32[] parameter(1)
  ROOT mc = f32[] maximum(ma, mb)
}
ENTRY e {
  x = f32[2,5,7,7] parameter(0)
  c6 = f32[] constant(0.1666667)
  b6 = f32[2,5,7,7] broadcast(c6), dimensions={}
  h = f32[2,5,7,7] multiply(x, b6)
  hs = f32[2,5,7,7] multiply(h, x)
  zero = f32[] constant(0)
  g = f32[2,5] reduce(hs, zero), dimensions={2,3}, to_apply=sum
  n = f32[] constant(49)
  nb = f32[2,5] broadcast(n), dimensions={}
  gap = f32[2,5] divide(g, nb)
  y = f32[1,6,9,11] parameter(1)
  ninf = f32[] constant(-inf)
  m = f32[1] reduce(y, ninf), dimensions={1,2,3}, to_apply=max
  z = f32[3,4,5] parameter(2)
  v = f32[5] parameter(3)
  vb = f32[3,4,5] broadcast(v), dimensions={2}
  zv = f32[3,4,5] multiply(z, vb)
  s = f32[3] reduce(zv, zero), dimensions={1,2}, to_apply=sum
  u = f32[200,1] parameter(4)
  uu = f32[200,1] multiply(u, u)
  n1 = f32[] reduce(uu, zero), dimensions={0,1}, to_apply=sum
  w = f32[4,1,9,1] parameter(5)
  n2 = f32[4] reduce(w, ninf), dimensions={1,2,3}, to_apply=max
  ROOT t = (f32[2,5], f32[1], f32[3], f32[], f32[4]) tuple(gap, m, s, n1, n2)
})"},
    // Matrix-vector products (generated GEMV; batch-1 dense layers): constant weights read in
    // place in both orientations ([n,k], ONNX Gemm transB=1, and [k,n]), a vector times a
    // matrix and a matrix times a vector, a batch of them, with a bias epilogue. Lengths leave
    // every tail: 53 = 32 + 16 + 5 contracted elements, 6 and 90 rows (blocks of 4 and 2 more),
    // 300 = 9 x 32 + 12.
    {"dot_gemv_constants_and_tails", R"(
HloModule m
ENTRY e {
  x = f32[1,53] parameter(0)
  wc = f32[6,53] constant({{-0.625, 0.0, 0.625, -0.875, -0.25, 0.375, 1.0, -0.5, 0.125, 0.75, -0.75, -0.125, 0.5, -1.0, -0.375, 0.25, 0.875, -0.625, 0.0, 0.625, -0.875, -0.25, 0.375, 1.0, -0.5, 0.125, 0.75, -0.75, -0.125, 0.5, -1.0, -0.375, 0.25, 0.875, -0.625, 0.0, 0.625, -0.875, -0.25, 0.375, 1.0, -0.5, 0.125, 0.75, -0.75, -0.125, 0.5, -1.0, -0.375, 0.25, 0.875, -0.625, 0.0}, {0.625, -0.875, -0.25, 0.375, 1.0, -0.5, 0.125, 0.75, -0.75, -0.125, 0.5, -1.0, -0.375, 0.25, 0.875, -0.625, 0.0, 0.625, -0.875, -0.25, 0.375, 1.0, -0.5, 0.125, 0.75, -0.75, -0.125, 0.5, -1.0, -0.375, 0.25, 0.875, -0.625, 0.0, 0.625, -0.875, -0.25, 0.375, 1.0, -0.5, 0.125, 0.75, -0.75, -0.125, 0.5, -1.0, -0.375, 0.25, 0.875, -0.625, 0.0, 0.625, -0.875}, {-0.25, 0.375, 1.0, -0.5, 0.125, 0.75, -0.75, -0.125, 0.5, -1.0, -0.375, 0.25, 0.875, -0.625, 0.0, 0.625, -0.875, -0.25, 0.375, 1.0, -0.5, 0.125, 0.75, -0.75, -0.125, 0.5, -1.0, -0.375, 0.25, 0.875, -0.625, 0.0, 0.625, -0.875, -0.25, 0.375, 1.0, -0.5, 0.125, 0.75, -0.75, -0.125, 0.5, -1.0, -0.375, 0.25, 0.875, -0.625, 0.0, 0.625, -0.875, -0.25, 0.375}, {1.0, -0.5, 0.125, 0.75, -0.75, -0.125, 0.5, -1.0, -0.375, 0.25, 0.875, -0.625, 0.0, 0.625, -0.875, -0.25, 0.375, 1.0, -0.5, 0.125, 0.75, -0.75, -0.125, 0.5, -1.0, -0.375, 0.25, 0.875, -0.625, 0.0, 0.625, -0.875, -0.25, 0.375, 1.0, -0.5, 0.125, 0.75, -0.75, -0.125, 0.5, -1.0, -0.375, 0.25, 0.875, -0.625, 0.0, 0.625, -0.875, -0.25, 0.375, 1.0, -0.5}, {0.125, 0.75, -0.75, -0.125, 0.5, -1.0, -0.375, 0.25, 0.875, -0.625, 0.0, 0.625, -0.875, -0.25, 0.375, 1.0, -0.5, 0.125, 0.75, -0.75, -0.125, 0.5, -1.0, -0.375, 0.25, 0.875, -0.625, 0.0, 0.625, -0.875, -0.25, 0.375, 1.0, -0.5, 0.125, 0.75, -0.75, -0.125, 0.5, -1.0, -0.375, 0.25, 0.875, -0.625, 0.0, 0.625, -0.875, -0.25, 0.375, 1.0, -0.5, 0.125, 0.75}, {-0.75, -0.125, 0.5, -1.0, -0.375, 0.25, 0.875, -0.625, 0.0, 0.625, -0.875, -0.25, 0.375, 1.0, -0.5, 0.125, 0.75, -0.75, -0.125, 0.5, -1.0, -0.375, 0.25, 0.875, -0.625, 0.0, 0.625, -0.875, -0.25, 0.375, 1.0, -0.5, 0.125, 0.75, -0.75, -0.125, 0.5, -1.0, -0.375, 0.25, 0.875, -0.625, 0.0, 0.625, -0.875, -0.25, 0.375, 1.0, -0.5, 0.125, 0.75, -0.75, -0.125}})
  wk = f32[53,6] constant({{-0.625, 0.25, -1.0, -0.125, 0.75, -0.5}, {0.375, -0.875, 0.0, 0.875, -0.375, 0.5}, {-0.75, 0.125, 1.0, -0.25, 0.625, -0.625}, {0.25, -1.0, -0.125, 0.75, -0.5, 0.375}, {-0.875, 0.0, 0.875, -0.375, 0.5, -0.75}, {0.125, 1.0, -0.25, 0.625, -0.625, 0.25}, {-1.0, -0.125, 0.75, -0.5, 0.375, -0.875}, {0.0, 0.875, -0.375, 0.5, -0.75, 0.125}, {1.0, -0.25, 0.625, -0.625, 0.25, -1.0}, {-0.125, 0.75, -0.5, 0.375, -0.875, 0.0}, {0.875, -0.375, 0.5, -0.75, 0.125, 1.0}, {-0.25, 0.625, -0.625, 0.25, -1.0, -0.125}, {0.75, -0.5, 0.375, -0.875, 0.0, 0.875}, {-0.375, 0.5, -0.75, 0.125, 1.0, -0.25}, {0.625, -0.625, 0.25, -1.0, -0.125, 0.75}, {-0.5, 0.375, -0.875, 0.0, 0.875, -0.375}, {0.5, -0.75, 0.125, 1.0, -0.25, 0.625}, {-0.625, 0.25, -1.0, -0.125, 0.75, -0.5}, {0.375, -0.875, 0.0, 0.875, -0.375, 0.5}, {-0.75, 0.125, 1.0, -0.25, 0.625, -0.625}, {0.25, -1.0, -0.125, 0.75, -0.5, 0.375}, {-0.875, 0.0, 0.875, -0.375, 0.5, -0.75}, {0.125, 1.0, -0.25, 0.625, -0.625, 0.25}, {-1.0, -0.125, 0.75, -0.5, 0.375, -0.875}, {0.0, 0.875, -0.375, 0.5, -0.75, 0.125}, {1.0, -0.25, 0.625, -0.625, 0.25, -1.0}, {-0.125, 0.75, -0.5, 0.375, -0.875, 0.0}, {0.875, -0.375, 0.5, -0.75, 0.125, 1.0}, {-0.25, 0.625, -0.625, 0.25, -1.0, -0.125}, {0.75, -0.5, 0.375, -0.875, 0.0, 0.875}, {-0.375, 0.5, -0.75, 0.125, 1.0, -0.25}, {0.625, -0.625, 0.25, -1.0, -0.125, 0.75}, {-0.5, 0.375, -0.875, 0.0, 0.875, -0.375}, {0.5, -0.75, 0.125, 1.0, -0.25, 0.625}, {-0.625, 0.25, -1.0, -0.125, 0.75, -0.5}, {0.375, -0.875, 0.0, 0.875, -0.375, 0.5}, {-0.75, 0.125, 1.0, -0.25, 0.625, -0.625}, {0.25, -1.0, -0.125, 0.75, -0.5, 0.375}, {-0.875, 0.0, 0.875, -0.375, 0.5, -0.75}, {0.125, 1.0, -0.25, 0.625, -0.625, 0.25}, {-1.0, -0.125, 0.75, -0.5, 0.375, -0.875}, {0.0, 0.875, -0.375, 0.5, -0.75, 0.125}, {1.0, -0.25, 0.625, -0.625, 0.25, -1.0}, {-0.125, 0.75, -0.5, 0.375, -0.875, 0.0}, {0.875, -0.375, 0.5, -0.75, 0.125, 1.0}, {-0.25, 0.625, -0.625, 0.25, -1.0, -0.125}, {0.75, -0.5, 0.375, -0.875, 0.0, 0.875}, {-0.375, 0.5, -0.75, 0.125, 1.0, -0.25}, {0.625, -0.625, 0.25, -1.0, -0.125, 0.75}, {-0.5, 0.375, -0.875, 0.0, 0.875, -0.375}, {0.5, -0.75, 0.125, 1.0, -0.25, 0.625}, {-0.625, 0.25, -1.0, -0.125, 0.75, -0.5}, {0.375, -0.875, 0.0, 0.875, -0.375, 0.5}})
  b = f32[6] parameter(1)
  d1 = f32[1,6] dot(x, wc), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  bb = f32[1,6] broadcast(b), dimensions={1}
  y1 = f32[1,6] add(d1, bb)
  y2 = f32[1,6] dot(x, wk), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  xt = f32[53,1] transpose(x), dimensions={1,0}
  y3 = f32[6,1] dot(wc, xt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  v = f32[3,1,300] parameter(2)
  w = f32[3,300,90] parameter(3)
  y4 = f32[3,1,90] dot(v, w), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  wt = f32[3,90,300] parameter(4)
  y5 = f32[3,90,1] dot(wt, v), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}
  ROOT t = (f32[1,6], f32[1,6], f32[6,1], f32[3,1,90], f32[3,90,1]) tuple(y1, y2, y3, y4, y5)
})"},
    // A max pool's gradient as JAX writes it: 3x3 windows, stride 2, padding on one side; and a
    // min selection with overlapping windows, whose ties go to the first element.
    {"select_and_scatter", R"(
HloModule m
ge {
  ga = f32[] parameter(0)
  gb = f32[] parameter(1)
  ROOT gc = pred[] compare(ga, gb), direction=GE
}
le {
  la = f32[] parameter(0)
  lb = f32[] parameter(1)
  ROOT lc = pred[] compare(la, lb), direction=LE
}
add {
  aa = f32[] parameter(0)
  ab = f32[] parameter(1)
  ROOT ac = f32[] add(aa, ab)
}
ENTRY e {
  x = f32[2,9,9,3] parameter(0)
  dy = f32[2,5,5,3] parameter(1)
  z = f32[] constant(0)
  g = f32[2,9,9,3] select-and-scatter(x, dy, z), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0}, select=ge, scatter=add
  r = f32[2,9,9,3] round-nearest-even(x)
  dy2 = f32[2,8,8,3] parameter(2)
  h = f32[2,9,9,3] select-and-scatter(r, dy2, z), window={size=1x2x2x1}, select=le, scatter=add
  ROOT t = (f32[2,9,9,3], f32[2,9,9,3]) tuple(g, h)
})"},
    {"multi_output_and_passthrough", R"(
HloModule m
ENTRY e {
  a = f32[16] parameter(0)
  b = f64[16] parameter(1)
  c = f32[16] constant({1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16})
  e = f32[16] exponential(a)
  s = f32[16] add(e, c)
  d = f64[16] convert(s)
  m = f64[16] multiply(d, b)
  ROOT t = (f32[16], f64[16], f32[16], f64[16], f32[16]) tuple(e, m, a, b, c)
})"},
};

}  // namespace mltune::backends
