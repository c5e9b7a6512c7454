// Note [Convolution on oneDNN]
// float32 convolutions that are not pointwise run on oneDNN's direct kernels (those PyTorch's
// CPU convolution runs; on request its Winograd kernels, Note [Winograd convolution]), which
// work on channel-blocked (nChw16c) or channels-last activations (Note [Channels-last
// passes]) without a column matrix: the 3x3 rows of `ember bench conv` took 1.2-1.4x less CPU
// than im2col + GEMM on the direct kernels.
// Each chunk of images (image_chunks: fixed by the shape) is one task on ember's pool running
// single-threaded oneDNN (Note [oneDNN threads]) and reorders its operands to and from the
// kernel's layouts itself. The weight gradient is one partial per chunk, summed by the kernel
// within a chunk and then over the chunks in order: results are the same for any thread
// count. Weight reorders run as parallel parts. Plans are built once per shape and chunk
// length and shared; every primitive takes the caller's scratchpad, so one plan runs on
// several threads at once.
#include "cpu/conv_onednn.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "cpu/dispatch.h"
#include "cpu/onednn.h"
#include "cpu/parallel.h"
#include "cpu/transpose.h"
#include "ember/error.h"

namespace ember::cpu {
namespace {

using dnnl::memory;

// Spatial dims of the convolution: ConvShape's leading unit dims (1-d and 2-d) are dropped,
// so oneDNN sees the rank its kernels are written for.
int first_spatial_dim(const ConvShape& s) {
  int first = 0;
  while (first < 2 && s.in[first] == 1 && s.out[first] == 1 && s.kernel[first] == 1 && s.pad[first] == 0) ++first;
  return first;
}

// A row-major descriptor (float32 unless said).
memory::desc plain_desc(const memory::dims& dims, memory::data_type type = memory::data_type::f32) {
  memory::dims strides(dims.size(), 1);
  for (size_t d = dims.size() - 1; d > 0; --d) strides[d - 1] = strides[d] * dims[d];
  return memory::desc(dims, type, strides);
}

// The channels-last layout of an activation: [batch, positions..., channels].
memory::format_tag channels_last_tag(size_t rank) {
  return rank == 3 ? memory::format_tag::nwc : rank == 4 ? memory::format_tag::nhwc : memory::format_tag::ndhwc;
}

// An operand in the plain layout the caller holds and in the kernel's layout, with the
// reorder between them (plain -> kernel for inputs, kernel -> plain for outputs); no reorder
// when the two agree.
struct Operand {
  memory::desc plain, kernel;
  std::optional<dnnl::reorder> reorder;
  // The kernel layout is channels-last: the reorder is a transpose of each image, which
  // ember's transpose_floats runs 2-3x faster than oneDNN's reorder (no oneDNN reorder then).
  bool transpose = false;
  size_t scratchpad_bytes = 0;
  // Whether the kernel's layout differs from the plain one (staged through a buffer).
  bool staged() const { return reorder.has_value() || transpose; }
  // The same reorder split along dim 0 at whole blocks of the kernel layout, so the parts
  // write disjoint memory and run as parallel tasks (weights only; empty when it doesn't split).
  struct Part {
    dnnl::reorder reorder;
    memory::desc from, to;  // sub-tensors of the whole operand's layouts
  };
  std::vector<Part> parts;
};

dnnl::reorder make_reorder(const memory::desc& from, const memory::desc& to, size_t& scratchpad_bytes) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::reorder::primitive_desc pd(onednn_engine(), from, onednn_engine(), to, attr);
  scratchpad_bytes = std::max(scratchpad_bytes, pd.scratchpad_desc().get_size());
  return dnnl::reorder(pd);
}

// Weight reorders run as at most this many parts, fixed by the shape.
constexpr int64_t kMaxReorderParts = 8;

Operand make_operand(const memory::desc& plain, const memory::desc& kernel, bool input, bool split = false) {
  Operand o{plain, kernel, std::nullopt, false, 0, {}};
  if (plain == kernel) return o;
  // Channels-last exists for ranks 3-5 (a grouped 3-d weight has rank 6); float32 only.
  const size_t rank = plain.dims().size();
  o.transpose = rank >= 3 && rank <= 5 && plain.data_type() == memory::data_type::f32 &&
                kernel == memory::desc(plain.dims(), memory::data_type::f32, channels_last_tag(rank));
  if (o.transpose) return o;
  const memory::desc& from = input ? plain : kernel;
  const memory::desc& to = input ? kernel : plain;
  o.reorder = make_reorder(from, to, o.scratchpad_bytes);
  // Split only a blocked layout (Winograd's weights are opaque) that pads no dim (a whole
  // reorder zeroes the padding) and whose dim 0 is a whole number of its blocks.
  if (!split || kernel.data.format_kind != dnnl_blocked) return o;
  const dnnl_blocking_desc_t& blocking = kernel.data.format_desc.blocking;
  int64_t block = 1;
  for (int i = 0; i < blocking.inner_nblks; ++i)
    if (blocking.inner_idxs[i] == 0) block *= blocking.inner_blks[i];
  const memory::dims dims = plain.dims();
  const bool padded = !std::equal(dims.begin(), dims.end(), kernel.data.padded_dims);
  if (padded || dims[0] % block != 0) return o;
  const int64_t blocks = dims[0] / block, parts = std::min(blocks, kMaxReorderParts);
  if (parts < 2) return o;
  for (int64_t part = 0; part < parts; ++part) {
    memory::dims part_dims = dims, offsets(dims.size(), 0);
    offsets[0] = part * blocks / parts * block;
    part_dims[0] = (part + 1) * blocks / parts * block - offsets[0];
    const memory::desc plain_part = plain.submemory_desc(part_dims, offsets);
    const memory::desc kernel_part = kernel.submemory_desc(part_dims, offsets);
    const memory::desc& from_part = input ? plain_part : kernel_part;
    const memory::desc& to_part = input ? kernel_part : plain_part;
    o.parts.push_back({make_reorder(from_part, to_part, o.scratchpad_bytes), from_part, to_part});
  }
  return o;
}

// Element count rounded up to whole 64-byte lines, so scratch parts stay aligned.
int64_t aligned_floats(size_t bytes) { return static_cast<int64_t>((bytes + 63) / 64 * 16); }

// The primitives of one convolution shape, its batch the images of one call.
struct ConvPlan {
  dnnl::convolution_forward forward, forward_bias;
  dnnl::convolution_backward_data backward_input;
  dnnl::convolution_backward_weights backward_weight;
  // forward: src, weights, dst; backward_input: diff_dst, weights, diff_src; backward_weight:
  // src, diff_dst, diff_weights.
  Operand forward_src, forward_weights, forward_dst, bias;
  Operand input_grad_out, input_weights, input_grad_x;
  Operand weight_x, weight_grad_out, weight_grad;
  bool reference = false;  // some pass would run oneDNN's reference kernel: not used
  bool winograd = false;   // the passes run the Winograd kernels
  std::string kernels;      // onednn_conv_kernels
  size_t scratchpad_bytes = 0;
  int64_t chunk_floats = 0;     // the largest operand of one call's images in a kernel layout
  int64_t weights_floats = 0;   // the weights in either kernel layout
  int64_t partial_floats = 0;   // the weight gradient in its kernel layout
};

// Note [Channels-last passes]
// oneDNN's direct kernels take the activations (input, output and their gradients) either
// channel-blocked (nChw16c) or channels-last (nhwc). On channels-last the forward runs its
// brgemm kernel (brgconv) and the gradients the same jit kernels as on the blocked layout.
// Measured here (AVX-512, one thread, ms; blocked -> channels-last): forward 3.77 -> 3.22 (256
// channels 14x14, 4 images), 7.55 -> 6.20 (512, 7x7, 8 images), 0.98 -> 0.87 (64 -> 128 stride
// 2), never slower; the weight gradient 3.81 -> 3.45, 7.93 -> 6.59, 0.97 -> 0.90 (64, 56x56) at
// stride 1 but 0.99 -> 1.09 at stride 2; the input gradient 1.05 -> 0.95 and 1.09 -> 0.94 at
// stride 2, even or slower at stride 1 (7.45 -> 7.56). So each pass takes its own layout by a
// rule fixed by the shape (choose_layouts), where the shape has enough terms per output to pay
// for the slower reorders to channels-last (kChannelsLastMinTerms): the forward channels-last
// where oneDNN runs its brgemm kernel there (AVX-512; elsewhere every pass stays blocked), the
// weight gradient at stride 1 and the input gradient at a larger stride where channels-last
// runs the same kernel as blocked.
struct ActivationLayouts {
  bool forward = false, input_grad = false, weight_grad = false;  // channels-last, else blocked
};

// oneDNN's primitive descriptors of the four passes of a shape.
struct PassDescs {
  dnnl::convolution_forward::primitive_desc forward, forward_bias;
  dnnl::convolution_backward_data::primitive_desc backward_input;
  dnnl::convolution_backward_weights::primitive_desc backward_weight;
  memory::dims x_dims, out_dims, w_dims;
};

// `type`: the activations', weights' and bias's data type (f32 or bf16); the weight gradient
// is float32 either way (the chunks' partials add up in float32).
PassDescs pass_descs(const ConvShape& s, dnnl::algorithm algorithm, ActivationLayouts layouts,
                     memory::data_type type = memory::data_type::f32) {
  const int first = first_spatial_dim(s);
  memory::dims x_dims = {s.batch, s.in_channels}, out_dims = {s.batch, s.out_channels};
  memory::dims w_dims, strides, dilates, pad_l, pad_r;
  if (s.groups > 1) w_dims = {s.groups, s.out_channels / s.groups, s.in_channels / s.groups};
  else w_dims = {s.out_channels, s.in_channels};
  for (int d = first; d < 3; ++d) {
    x_dims.push_back(s.in[d]);
    out_dims.push_back(s.out[d]);
    w_dims.push_back(s.kernel[d]);
    strides.push_back(s.stride[d]);
    dilates.push_back(s.dilation[d] - 1);  // oneDNN counts the gaps
    pad_l.push_back(s.pad[d]);
    // The padding after: whatever makes the output exactly s.out (it may be negative).
    pad_r.push_back((s.out[d] - 1) * s.stride[d] + (s.kernel[d] - 1) * s.dilation[d] + 1 - s.in[d] - s.pad[d]);
  }
  auto activation = [type](const memory::dims& dims, bool channels_last) {
    return memory::desc(dims, type, channels_last ? channels_last_tag(dims.size()) : memory::format_tag::any);
  };
  const memory::desc w_any(w_dims, type, memory::format_tag::any);
  const memory::desc w_grad_any(w_dims, memory::data_type::f32, memory::format_tag::any);
  const memory::desc bias_plain = plain_desc({s.out_channels}, type);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const auto training = dnnl::prop_kind::forward_training;
  auto forward_on = [&](bool channels_last, bool bias) {
    const memory::desc x = activation(x_dims, channels_last), out = activation(out_dims, channels_last);
    if (bias)
      return dnnl::convolution_forward::primitive_desc(
          {training, algorithm, x, w_any, bias_plain, out, strides, dilates, pad_l, pad_r}, attr, onednn_engine());
    return dnnl::convolution_forward::primitive_desc(
        {training, algorithm, x, w_any, out, strides, dilates, pad_l, pad_r}, attr, onednn_engine());
  };
  PassDescs d{forward_on(layouts.forward, false), forward_on(layouts.forward, true), {}, {}, x_dims, out_dims, w_dims};
  // Each gradient pass is hinted by a forward on its own layout (built only when one differs).
  std::optional<dnnl::convolution_forward::primitive_desc> other_forward;
  auto hint = [&](bool channels_last) {
    if (channels_last == layouts.forward) return d.forward;
    if (!other_forward) other_forward = forward_on(channels_last, false);
    return *other_forward;
  };
  d.backward_input = dnnl::convolution_backward_data::primitive_desc(
      {algorithm, activation(x_dims, layouts.input_grad), w_any, activation(out_dims, layouts.input_grad), strides,
       dilates, pad_l, pad_r},
      attr, onednn_engine(), hint(layouts.input_grad));
  d.backward_weight = dnnl::convolution_backward_weights::primitive_desc(
      {algorithm, activation(x_dims, layouts.weight_grad), w_grad_any, activation(out_dims, layouts.weight_grad),
       strides, dilates, pad_l, pad_r},
      attr, onednn_engine(), hint(layouts.weight_grad));
  return d;
}

// The reorders between the caller's layout and channels-last (a transpose of each image) take
// longer than those to the blocked layout (oneDNN's 3-6x, transpose_floats about 2x): measured
// here on oneDNN's, a whole step of 64 channels 3x3 at 56x56 (576 terms per output) ran 3%
// slower on channels-last, 128 at 28x28 (1152) 2-3% faster, 256 at 14x14 (2304) 5% faster; on
// transpose_floats 64 channels still gained nothing. Below this many terms per output every
// pass stays blocked.
constexpr int64_t kChannelsLastMinTerms = 1024;

// The layouts of Note [Channels-last passes], from oneDNN's kernels for one image of the shape,
// so every batch and chunk length of a shape makes the same choice. (Should a chunk length's
// channels-last plan fail where one image's did not, make_plan falls back to blocked for that
// length alone, the two lengths' weight layouts differ and onednn_conv_fits sends the shape to
// im2col: correct, slower; not seen with oneDNN 2.6.)
ActivationLayouts choose_layouts(const ConvShape& s) {
  if (s.col_rows() < kChannelsLastMinTerms) return {};
  ConvShape image = s;
  image.batch = 1;
  try {
    const PassDescs blocked = pass_descs(image, dnnl::algorithm::convolution_direct, {});
    const PassDescs channels_last = pass_descs(image, dnnl::algorithm::convolution_direct, {true, true, true});
    auto impl = [](const dnnl::primitive_desc_base& pd) { return std::string(pd.impl_info_str()); };
    bool unit_stride = true;
    for (int d = 0; d < 3; ++d) unit_stride = unit_stride && s.stride[d] == 1;
    ActivationLayouts layouts;
    // Measured on AVX-512 only, where oneDNN has the brgemm kernels: elsewhere all blocked.
    layouts.forward = impl(channels_last.forward).rfind("brg", 0) == 0;
    if (!layouts.forward) return {};
    layouts.input_grad = !unit_stride && impl(channels_last.backward_input) == impl(blocked.backward_input);
    layouts.weight_grad = unit_stride && impl(channels_last.backward_weight) == impl(blocked.backward_weight);
    return layouts;
  } catch (const dnnl::error&) {
    return {};  // no channels-last kernel for some pass: all blocked
  }
}

ConvPlan make_plan(const ConvShape& s, dnnl::algorithm algorithm, ActivationLayouts layouts,
                   memory::data_type type = memory::data_type::f32) {
  const PassDescs d = pass_descs(s, algorithm, layouts, type);
  const dnnl::convolution_forward::primitive_desc &forward = d.forward, &forward_bias = d.forward_bias;
  const dnnl::convolution_backward_data::primitive_desc& backward_input = d.backward_input;
  const dnnl::convolution_backward_weights::primitive_desc& backward_weight = d.backward_weight;
  const memory::desc bias_plain = plain_desc({s.out_channels}, type);
  const memory::desc x_plain = plain_desc(d.x_dims, type), out_plain = plain_desc(d.out_dims, type);
  const memory::desc w_plain = plain_desc(d.w_dims, type);

  ConvPlan p;
  for (const dnnl::primitive_desc_base* pd :
       std::initializer_list<const dnnl::primitive_desc_base*>{&forward, &forward_bias, &backward_input,
                                                               &backward_weight}) {
    p.reference = p.reference || std::string(pd->impl_info_str()).rfind("ref", 0) == 0;
    p.scratchpad_bytes = std::max(p.scratchpad_bytes, pd->scratchpad_desc().get_size());
  }
  // The biased forward must agree with the plain one on layouts: it shares their reorders.
  p.reference = p.reference || forward_bias.src_desc() != forward.src_desc() ||
                forward_bias.weights_desc() != forward.weights_desc() || forward_bias.dst_desc() != forward.dst_desc();
  p.forward = dnnl::convolution_forward(forward);
  p.forward_bias = dnnl::convolution_forward(forward_bias);
  p.backward_input = dnnl::convolution_backward_data(backward_input);
  p.backward_weight = dnnl::convolution_backward_weights(backward_weight);
  p.forward_src = make_operand(x_plain, forward.src_desc(), true);
  p.forward_weights = make_operand(w_plain, forward.weights_desc(), true, true);
  p.forward_dst = make_operand(out_plain, forward.dst_desc(), false);
  p.bias = make_operand(bias_plain, forward_bias.bias_desc(), true);
  p.input_grad_out = make_operand(out_plain, backward_input.diff_dst_desc(), true);
  p.input_weights = make_operand(w_plain, backward_input.weights_desc(), true, true);
  p.input_grad_x = make_operand(x_plain, backward_input.diff_src_desc(), false);
  p.weight_x = make_operand(x_plain, backward_weight.src_desc(), true);
  p.weight_grad_out = make_operand(out_plain, backward_weight.diff_dst_desc(), true);
  p.weight_grad = make_operand(w_plain, backward_weight.diff_weights_desc(), false, true);
  p.reference = p.reference || p.bias.staged();
  for (const Operand* o : {&p.forward_src, &p.forward_weights, &p.forward_dst, &p.input_grad_out, &p.input_weights,
                           &p.input_grad_x, &p.weight_x, &p.weight_grad_out, &p.weight_grad}) {
    p.scratchpad_bytes = std::max(p.scratchpad_bytes, o->scratchpad_bytes);
    if (o != &p.forward_weights && o != &p.input_weights && o != &p.weight_grad)
      p.chunk_floats = std::max(p.chunk_floats, aligned_floats(o->kernel.get_size()));
  }
  p.weights_floats =
      aligned_floats(std::max(forward.weights_desc().get_size(), backward_input.weights_desc().get_size()));
  p.partial_floats = aligned_floats(backward_weight.diff_weights_desc().get_size());
  p.winograd = algorithm == dnnl::algorithm::convolution_winograd;
  auto describe = [](const char* pass, const dnnl::primitive_desc_base& pd, bool channels_last) {
    return std::string(pass) + " " + pd.impl_info_str() + (channels_last ? " channels-last" : " oneDNN's layout");
  };
  p.kernels = describe("forward", forward, layouts.forward) + ", " +
              describe("input gradient", backward_input, layouts.input_grad) + ", " +
              describe("weight gradient", backward_weight, layouts.weight_grad);
  return p;
}

// Note [Winograd convolution]
// On request (ember::backends::set_conv_algorithm("winograd"), EMBER_CONV_ALGORITHM=winograd),
// 2-d 3x3 convolutions with stride 1 run on oneDNN's Winograd F(4x4, 3x3) kernels where it
// has them (jit_wino_4x3: AVX-512). Measured here (oneDNN alone, batch 8, 2 threads) forward
// and both gradients took 1.7-2.5x less time than the direct kernels: 256 channels at 14x14
// 12.7 -> 7.7 ms, 128 at 28x28 12.4 -> 6.6 ms, 64 at 56x56 12.8 -> 5.2 ms. Not the default: the
// error is about ten times the direct kernels' (5e-7 against 7e-8 of the sum of the terms'
// magnitudes, float64 reference), beyond float32 parity with PyTorch's CPU convolution (which
// runs the direct kernels) at 1e-5 relative. Shapes without a Winograd kernel stay direct.
bool winograd_shape(const ConvShape& s) {
  return first_spatial_dim(s) == 1 && s.groups == 1 && s.kernel[1] == 3 && s.kernel[2] == 3 && s.stride[1] == 1 &&
         s.stride[2] == 1 && s.dilation[1] == 1 && s.dilation[2] == 1;
}

// Note [bfloat16 convolution]
// bfloat16 convolutions run on oneDNN's bf16 kernels where the CPU has bf16 instructions
// (AVX512-BF16, AMX): bf16 activations and weights, float32 accumulation, outputs rounded once
// to bf16, as the float32 copies they replace computed them; the weight gradient comes out in
// float32 per chunk, the chunks add up in float32 and the sum is rounded once. Measured here
// (AVX512-BF16, batch 8, 2 threads, forward + backward): 64 channels 3x3 at 56x56 12.3 ms in
// float32 -> 7.2 ms in bf16, 128 at 28x28 11.1 -> 6.1, 256 at 14x14 10.7 -> 6.4; PyTorch's
// bf16 convolutions 7.2, 6.2, 6.2 ms in the same minute. Elsewhere bf16 keeps the float32
// copies (oneDNN would emulate bf16, slower). No channels-last rule (oneDNN picks the
// layouts) and no Winograd: those are float32's.
ConvPlan make_plan(const ConvShape& s, bool winograd, bool bf16) {
  if (bf16) return make_plan(s, dnnl::algorithm::convolution_direct, {}, memory::data_type::bf16);
  if (winograd && winograd_shape(s)) {
    try {
      ConvPlan p = make_plan(s, dnnl::algorithm::convolution_winograd, {});
      if (!p.reference) return p;
    } catch (const dnnl::error&) {
      // no Winograd kernel for this shape here
    }
  }
  const ActivationLayouts layouts = choose_layouts(s);
  if (layouts.forward || layouts.input_grad || layouts.weight_grad) {
    try {
      ConvPlan p = make_plan(s, dnnl::algorithm::convolution_direct, layouts);
      if (!p.reference) return p;
    } catch (const dnnl::error&) {
      // this batch has no channels-last kernel: blocked below
    }
  }
  return make_plan(s, dnnl::algorithm::convolution_direct, {});
}

std::atomic<int>& winograd_setting() {
  static std::atomic<int> setting{-1};  // -1: EMBER_CONV_ALGORITHM not read yet
  return setting;
}

// Plans by shape and images per call, shared by every thread: execution only reads them.
const ConvPlan& plan_for(const ConvShape& shape, int64_t images, ScalarType dtype) {
  ConvShape key = shape;
  key.batch = images;
  const bool bf16 = dtype == kBFloat16, winograd = conv_winograd() && !bf16;  // bf16: direct only
  auto tie = [winograd, bf16](const ConvShape& s) {
    return std::make_tuple(winograd, bf16, s.batch, s.in_channels, s.out_channels, s.groups, s.in[0], s.in[1], s.in[2],
                           s.out[0], s.out[1], s.out[2], s.kernel[0], s.kernel[1], s.kernel[2], s.stride[0],
                           s.stride[1], s.stride[2], s.pad[0], s.pad[1], s.pad[2], s.dilation[0], s.dilation[1],
                           s.dilation[2]);
  };
  using Key = decltype(tie(key));
  static std::mutex mutex;
  static auto* plans = new std::map<Key, std::unique_ptr<ConvPlan>>();  // never destroyed, as the engine
  std::lock_guard<std::mutex> lock(mutex);
  auto it = plans->find(tie(key));
  if (it == plans->end()) {
    OneDnnSingleThreaded single_threaded;  // building a primitive may otherwise start an OpenMP team
    it = plans->emplace(tie(key), std::make_unique<ConvPlan>(make_plan(key, winograd, bf16))).first;
  }
  return *it->second;
}

// The calling thread's buffer `slot` of at least `floats`, 64-byte aligned, kept between
// calls: 0 and 1 a chunk's operands, 2 the scratchpad, 3 the weights in their kernel layout
// (staged for the calling thread and read by every task of its call).
float* thread_buffer(int slot, int64_t floats) {
  thread_local std::vector<float> buffers[4];
  std::vector<float>& buffer = buffers[slot];
  if (static_cast<int64_t>(buffer.size()) < floats + 16) buffer.resize(static_cast<size_t>(floats + 16));
  return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(buffer.data()) + 63) & ~uintptr_t{63});
}

// Runs `primitive` with `args` and the calling thread's scratchpad.
void execute(const dnnl::primitive& primitive, std::unordered_map<int, memory> args, size_t scratchpad_bytes) {
  const memory::desc scratch_desc({static_cast<int64_t>(scratchpad_bytes)}, memory::data_type::u8, {1});
  args.emplace(DNNL_ARG_SCRATCHPAD,
               memory(scratch_desc, onednn_engine(), thread_buffer(2, aligned_floats(scratchpad_bytes))));
  primitive.execute(onednn_stream(), args);
  onednn_stream().wait();
}

memory wrap(const memory::desc& desc, const void* data) {
  return memory(desc, onednn_engine(), const_cast<void*>(data));
}

// Calls fn(task) for task in [0, count), one pool task each, with oneDNN single-threaded.
template <typename Fn>
void for_each_task(int64_t count, const Fn& fn) {
  parallel_for(0, count, 1, [&](int64_t lo, int64_t hi) {
    OneDnnSingleThreaded single_threaded;
    for (int64_t n = lo; n < hi; ++n) fn(n);
  });
}

// Runs o's reorder from `from` to `to` (plain to kernel layout for an input, the reverse for
// an output); its parts, where it has them, as pool tasks.
void run_reorder(const Operand& o, bool input, const void* from, void* to, size_t scratchpad_bytes) {
  if (o.transpose) {
    const memory::dims dims = o.plain.dims();
    int64_t positions = 1;
    for (size_t d = 2; d < dims.size(); ++d) positions *= dims[d];
    const int64_t channels = dims[1], image = channels * positions;
    const auto transpose = EMBER_KERNEL(transpose_floats);
    for (int64_t n = 0; n < dims[0]; ++n)
      transpose(static_cast<const float*>(from) + n * image, input ? channels : positions,
                input ? positions : channels, static_cast<float*>(to) + n * image);
    return;
  }
  if (o.parts.empty()) {
    OneDnnSingleThreaded single_threaded;
    execute(*o.reorder, {{DNNL_ARG_FROM, wrap(input ? o.plain : o.kernel, from)},
                         {DNNL_ARG_TO, wrap(input ? o.kernel : o.plain, to)}},
            scratchpad_bytes);
    return;
  }
  for_each_task(static_cast<int64_t>(o.parts.size()), [&](int64_t part) {
    const Operand::Part& p = o.parts[static_cast<size_t>(part)];
    execute(p.reorder, {{DNNL_ARG_FROM, wrap(p.from, from)}, {DNNL_ARG_TO, wrap(p.to, to)}}, scratchpad_bytes);
  });
}

// An input in the kernel's layout: `data` itself when the layouts agree, else reordered into `buffer`.
const void* staged_input(const Operand& o, const void* data, void* buffer, size_t scratchpad_bytes) {
  if (!o.staged()) return data;
  run_reorder(o, true, data, buffer, scratchpad_bytes);
  return buffer;
}

// Where the kernel writes an output: `data` itself when the layouts agree, else `buffer`,
// which finish_output then reorders into `data`.
void* output_target(const Operand& o, void* data, void* buffer) { return o.staged() ? buffer : data; }
void finish_output(const Operand& o, const void* kernel_data, void* data, size_t scratchpad_bytes) {
  if (o.staged()) run_reorder(o, false, kernel_data, data, scratchpad_bytes);
}

// Each pass runs on chunks of the batch, one call of oneDNN's kernel per chunk, which then
// blocks over the chunk's images itself (weights read once per chunk, the weight gradient
// summed over the chunk inside the kernel): as many whole images as fit in kChunkPixels
// output positions (one image per chunk down to 23x23 outputs, so 28x28 keeps 8 one-image
// tasks at batch 8 rather than 7 uneven ones, which ran 1.2x slower on 2 threads), at least
// two chunks (both cores busy at batch 2+) and at most kMaxChunks, so the weight gradient's
// partials stay bounded. The chunks depend on the shape alone, not on the thread count. A
// plan serves every chunk of its number of images.
constexpr int64_t kChunkPixels = 1024;
constexpr int64_t kMaxChunks = 16;
int64_t image_chunks(const ConvShape& s) {
  const int64_t images = std::max<int64_t>(1, kChunkPixels / s.out_plane());
  return std::clamp((s.batch + images - 1) / images, std::min<int64_t>(s.batch, 2), std::min(s.batch, kMaxChunks));
}
// The first image of chunk `chunk` of `count`: chunks have batch / count images or one more.
int64_t chunk_begin(const ConvShape& s, int64_t chunk, int64_t count) { return chunk * s.batch / count; }

// The primitive and operands of a plan's forward (with or without bias) or input-gradient pass.
struct Pass {
  const dnnl::primitive& primitive;
  const Operand &weights, &in, &out;
  int in_id, out_id;
};
Pass pass_of(const ConvPlan& p, bool forward, bool bias) {
  if (forward)
    return {bias ? p.forward_bias : p.forward, p.forward_weights, p.forward_src, p.forward_dst, DNNL_ARG_SRC,
            DNNL_ARG_DST};
  return {p.backward_input, p.input_weights, p.input_grad_out, p.input_grad_x, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC};
}

// Forward and input gradient: the weights go to their kernel layout once, then each chunk's
// input is staged, the pass maps it to the output, and the output is reordered back.
void map_chunks(const ConvShape& s, ScalarType dtype, bool forward, const void* weights, const void* in_data,
                void* out_data, const void* bias) {
  const int64_t chunks = image_chunks(s), images = s.batch / chunks;
  const ConvPlan& p = plan_for(s, images, dtype);
  const int64_t item = static_cast<int64_t>(element_size(dtype));
  const char* in = static_cast<const char*>(in_data);
  char* out = static_cast<char*>(out_data);
  const void* staged_weights = staged_input(pass_of(p, forward, bias).weights, weights,
                                            thread_buffer(3, p.weights_floats), p.scratchpad_bytes);
  const int64_t x_image = s.in_channels * s.in_plane() * item, out_image = s.out_channels * s.out_plane() * item;
  const int64_t in_image = forward ? x_image : out_image, result_image = forward ? out_image : x_image;
  for_each_task(chunks, [&](int64_t chunk) {
    const int64_t first = chunk_begin(s, chunk, chunks), count = chunk_begin(s, chunk + 1, chunks) - first;
    const ConvPlan& plan = count == images ? p : plan_for(s, count, dtype);
    const Pass pass = pass_of(plan, forward, bias);
    const void* source =
        staged_input(pass.in, in + first * in_image, thread_buffer(0, plan.chunk_floats), plan.scratchpad_bytes);
    void* target = output_target(pass.out, out + first * result_image, thread_buffer(1, plan.chunk_floats));
    std::unordered_map<int, memory> args = {{pass.in_id, wrap(pass.in.kernel, source)},
                                            {DNNL_ARG_WEIGHTS, wrap(pass.weights.kernel, staged_weights)},
                                            {pass.out_id, wrap(pass.out.kernel, target)}};
    if (bias) args.emplace(DNNL_ARG_BIAS, wrap(plan.bias.plain, bias));
    execute(pass.primitive, std::move(args), plan.scratchpad_bytes);
    finish_output(pass.out, target, out + first * result_image, plan.scratchpad_bytes);
  });
}

}  // namespace

bool conv_winograd() {
  int setting = winograd_setting().load();
  if (setting < 0) {
    const char* env = std::getenv("EMBER_CONV_ALGORITHM");
    const std::string name = env ? env : "direct";
    EMBER_CHECK(name == "direct" || name == "winograd", "conv_algorithm", "EMBER_CONV_ALGORITHM=", name,
                ": expected direct or winograd");
    setting = name == "winograd";
    winograd_setting().store(setting);
  }
  return setting == 1;
}

void set_conv_winograd(bool on) { winograd_setting().store(on ? 1 : 0); }

bool onednn_conv_winograd(const ConvShape& s) {
  return onednn_conv_fits(s) && plan_for(s, s.batch / image_chunks(s), kFloat32).winograd;
}

bool onednn_conv_fits(const ConvShape& s, ScalarType dtype) {
  if (s.batch <= 0 || s.in_channels <= 0 || s.out_channels <= 0 || s.out_plane() <= 0 || s.pointwise()) return false;
  // bfloat16 only where the CPU has bf16 instructions (and EMBER_CPU_CAPABILITY allows
  // AVX-512): elsewhere oneDNN would emulate them, slower than the float32 copies.
  const bool bf16_cpu = cpu_has_avx512_bf16() && kernel_build(cpu_capability()) == Capability::AVX512;
  if (dtype != kFloat32 && !(dtype == kBFloat16 && bf16_cpu)) return false;
  try {
    const int64_t chunks = image_chunks(s), images = s.batch / chunks;
    const ConvPlan& p = plan_for(s, images, dtype);
    if (p.reference) return false;
    if (s.batch % chunks == 0) return true;
    // The longer chunks' plan shares the weights (and weight gradient) staged in p's layouts.
    const ConvPlan& longer = plan_for(s, images + 1, dtype);
    return !longer.reference && longer.forward_weights.kernel == p.forward_weights.kernel &&
           longer.input_weights.kernel == p.input_weights.kernel && longer.weight_grad.kernel == p.weight_grad.kernel;
  } catch (const dnnl::error&) {
    return false;  // no oneDNN kernel takes this shape (e.g. padding after beyond what it accepts)
  }
}

std::string onednn_conv_kernels(const ConvShape& s, ScalarType dtype) {
  return onednn_conv_fits(s, dtype) ? plan_for(s, s.batch / image_chunks(s), dtype).kernels : "";
}

int64_t onednn_conv_scratch_elements(const ConvShape& s, ScalarType dtype) {
  return image_chunks(s) * plan_for(s, s.batch / image_chunks(s), dtype).partial_floats;
}

void onednn_conv_forward(const ConvShape& s, ScalarType dtype, const void* x, const void* weight, const void* bias,
                         void* out) {
  map_chunks(s, dtype, true, weight, x, out, bias);
}

void onednn_conv_backward_input(const ConvShape& s, ScalarType dtype, const void* grad_out, const void* weight,
                                void* grad_x) {
  map_chunks(s, dtype, false, weight, grad_out, grad_x, nullptr);
}

void onednn_conv_backward_weight(const ConvShape& s, ScalarType dtype, const void* x_data, const void* grad_out_data,
                                 void* grad_weight, float* scratch) {
  const int64_t partial_count = image_chunks(s);
  // One partial per chunk; the plans of both chunk lengths share a gradient layout (onednn_conv_fits).
  const int64_t images = s.batch / partial_count;
  const ConvPlan& p = plan_for(s, images, dtype);
  const int64_t item = static_cast<int64_t>(element_size(dtype));
  const char* x = static_cast<const char*>(x_data);
  const char* grad_out = static_cast<const char*>(grad_out_data);
  const int64_t in_image = s.in_channels * s.in_plane() * item, out_image = s.out_channels * s.out_plane() * item;
  // The partials are float32 (the kernel's weight gradient) for either dtype.
  const int64_t count = static_cast<int64_t>(p.weight_grad.kernel.get_size() / sizeof(float));
  float* partials = scratch;
  for_each_task(partial_count, [&](int64_t chunk) {
    const int64_t first = chunk_begin(s, chunk, partial_count), last = chunk_begin(s, chunk + 1, partial_count);
    const ConvPlan& plan = last - first == images ? p : plan_for(s, last - first, dtype);
    const void* src = staged_input(plan.weight_x, x + first * in_image, thread_buffer(0, plan.chunk_floats),
                                   plan.scratchpad_bytes);
    const void* diff_dst = staged_input(plan.weight_grad_out, grad_out + first * out_image,
                                        thread_buffer(1, plan.chunk_floats), plan.scratchpad_bytes);
    execute(plan.backward_weight,
            {{DNNL_ARG_SRC, wrap(plan.weight_x.kernel, src)},
             {DNNL_ARG_DIFF_DST, wrap(plan.weight_grad_out.kernel, diff_dst)},
             {DNNL_ARG_DIFF_WEIGHTS, wrap(plan.weight_grad.kernel, partials + chunk * p.partial_floats)}},
            plan.scratchpad_bytes);
  });
  // The partials add up in chunk order into the first (or straight into grad_weight, float32
  // in the kernel's layout).
  float* sum = p.weight_grad.staged() ? partials : static_cast<float*>(grad_weight);
  parallel_for(0, count, 16384, [&](int64_t lo, int64_t hi) {
    if (sum != partials) std::copy(partials + lo, partials + hi, sum + lo);
    for (int64_t c = 1; c < partial_count; ++c) {
      const float* partial = partials + c * p.partial_floats;
      for (int64_t e = lo; e < hi; ++e) sum[e] += partial[e];
    }
  });
  finish_output(p.weight_grad, sum, grad_weight, p.scratchpad_bytes);
}

}  // namespace ember::cpu
