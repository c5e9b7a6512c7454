// Option enums shared by losses and initialisers, named as libtorch's (ember::kMean,
// ember::kFanIn, ember::kReLU, ...).
#pragma once

namespace ember {

// How a loss reduces its per-element values. kBatchMean (sum / batch size) is KLDivLoss only.
enum class Reduction { None, Mean, Sum, BatchMean };
inline constexpr Reduction kNone = Reduction::None;
inline constexpr Reduction kMean = Reduction::Mean;
inline constexpr Reduction kSum = Reduction::Sum;
inline constexpr Reduction kBatchMean = Reduction::BatchMean;

const char* reduction_name(Reduction reduction);

// Which fan the kaiming initialisers scale by.
enum class FanMode { FanIn, FanOut };
inline constexpr FanMode kFanIn = FanMode::FanIn;
inline constexpr FanMode kFanOut = FanMode::FanOut;

// Nonlinearities that nn::init::calculate_gain knows.
enum class Nonlinearity { Linear, Conv1D, Conv2D, Conv3D, Sigmoid, Tanh, ReLU, LeakyReLU, SELU };
inline constexpr Nonlinearity kLinear = Nonlinearity::Linear;
inline constexpr Nonlinearity kConv1D = Nonlinearity::Conv1D;
inline constexpr Nonlinearity kConv2D = Nonlinearity::Conv2D;
inline constexpr Nonlinearity kConv3D = Nonlinearity::Conv3D;
inline constexpr Nonlinearity kSigmoid = Nonlinearity::Sigmoid;
inline constexpr Nonlinearity kTanh = Nonlinearity::Tanh;
inline constexpr Nonlinearity kReLU = Nonlinearity::ReLU;
inline constexpr Nonlinearity kLeakyReLU = Nonlinearity::LeakyReLU;
inline constexpr Nonlinearity kSELU = Nonlinearity::SELU;

// Padding kinds of the vision layers, as libtorch's tag types: a variant of them is an
// option (Conv2dOptions(...).padding(ember::kSame).padding_mode(ember::kReflect)).
namespace enumtype {
struct kZeros {};
struct kConstant {};
struct kReflect {};
struct kReplicate {};
struct kCircular {};
struct kSame {};
struct kValid {};
struct kNearest {};
struct kNearestExact {};
struct kBilinear {};
struct kBicubic {};
struct kTrilinear {};
struct kArea {};
struct kGELU {};
struct kBorder {};
struct kReflection {};
struct kMax {};
}  // namespace enumtype
inline constexpr enumtype::kZeros kZeros{};
inline constexpr enumtype::kConstant kConstant{};
inline constexpr enumtype::kReflect kReflect{};
inline constexpr enumtype::kReplicate kReplicate{};
inline constexpr enumtype::kCircular kCircular{};
inline constexpr enumtype::kSame kSame{};
inline constexpr enumtype::kValid kValid{};
// Interpolation modes (F::interpolate, nn::Upsample); linear is the kLinear above, which
// libtorch also shares between calculate_gain and interpolate.
inline constexpr enumtype::kNearest kNearest{};
inline constexpr enumtype::kNearestExact kNearestExact{};
inline constexpr enumtype::kBilinear kBilinear{};
inline constexpr enumtype::kBicubic kBicubic{};
inline constexpr enumtype::kTrilinear kTrilinear{};
inline constexpr enumtype::kArea kArea{};
// The transformer layers' GELU activation (their ReLU is the kReLU above).
inline constexpr enumtype::kGELU kGELU{};
// grid_sample's padding modes (kZeros above is the third).
inline constexpr enumtype::kBorder kBorder{};
inline constexpr enumtype::kReflection kReflection{};
// EmbeddingBag's max mode (its sum and mean are the kSum and kMean reductions).
inline constexpr enumtype::kMax kMax{};

}  // namespace ember
