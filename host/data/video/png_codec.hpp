// PNG image columns of LeRobot datasets (dtype "image": PNG bytes in the parquet files) decoded to
// and encoded from tensors through libavcodec's own PNG codec, so the host needs no image library
// besides FFmpeg. Channels are kept as stored: gray → 1, gray+alpha → 2, RGB → 3, RGBA → 4.
#pragma once

#include <string>
#include <string_view>

#include <torch/torch.h>

namespace lrhost::data {

// uint8 [C,H,W]. 16-bit images are reduced to 8 bits; palette images become RGB (RGBA when the
// palette has transparency); 1-bit images become gray. Throws util::IoError naming `what` (the
// file, column and row the bytes came from) when the bytes are not a decodable PNG.
torch::Tensor decode_png(std::string_view bytes, const std::string& what);

// Lossless PNG bytes of a uint8 [H,W,C] (C = 1, 2, 3 or 4) or [H,W] image. Throws util::DataError on
// another shape or dtype.
std::string encode_png(const torch::Tensor& hwc_uint8);

}  // namespace lrhost::data
