// Qwen3-VL as GR00T's backbone; see qwen3_vl_model.hpp.
#include "host/nn/qwen3_vl_model.hpp"

#include "host/util/error.hpp"

namespace lrhost::nn {

Qwen3VLConfig Qwen3VLConfig::from_json(const nlohmann::json& object, const std::string& where) {
  if (!object.is_object() || !object.contains("text_config") || !object.contains("vision_config"))
    throw util::ConfigError(where + ": expected a Qwen3-VL config with text_config and vision_config");
  Qwen3VLConfig c;
  c.text = Qwen3VLTextConfig::from_json(object["text_config"], where + ": text_config");
  c.vision = Qwen3VLVisionConfig::from_json(object["vision_config"], where + ": vision_config");
  if (object.contains("image_token_id")) c.image_token_id = object["image_token_id"].get<int64_t>();
  if (c.vision.out_hidden_size != c.text.hidden_size)
    throw util::ConfigError(where + ": vision_config.out_hidden_size (" + std::to_string(c.vision.out_hidden_size) +
                            ") must equal text_config.hidden_size (" + std::to_string(c.text.hidden_size) + ")");
  return c;
}

torch::Tensor qwen3_rope_index(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                               const torch::Tensor& image_grid_thw, int64_t image_token_id,
                               int64_t spatial_merge_size) {
  const auto ids = input_ids.to(torch::kCPU, torch::kLong).contiguous();
  const auto mask = attention_mask.to(torch::kCPU, torch::kLong).contiguous();
  const auto grids = image_grid_thw.to(torch::kCPU, torch::kLong).contiguous();
  const int64_t batch = ids.size(0), length = ids.size(1);
  auto positions = torch::zeros({3, batch, length}, torch::kLong);
  auto out = positions.accessor<int64_t, 3>();
  const int64_t* token = ids.data_ptr<int64_t>();
  const int64_t* attended = mask.data_ptr<int64_t>();
  const int64_t* grid = grids.data_ptr<int64_t>();
  int64_t next_grid = 0;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t position = 0;
    for (int64_t j = 0; j < length;) {
      const int64_t at = b * length + j;
      if (!attended[at]) {
        ++j;
        continue;
      }
      if (token[at] != image_token_id) {
        for (int r = 0; r < 3; ++r) out[r][b][j] = position;
        ++position;
        ++j;
        continue;
      }
      if (next_grid >= grids.size(0))
        throw util::DataError("more images in input_ids than image_grid_thw lists (" + std::to_string(grids.size(0)) +
                              ")");
      const int64_t t = grid[3 * next_grid], h = grid[3 * next_grid + 1] / spatial_merge_size,
                    w = grid[3 * next_grid + 2] / spatial_merge_size;
      ++next_grid;
      // The image's tokens: t·h·w attended image tokens from here on (a run of them).
      int64_t placed = 0;
      for (; j < length && placed < t * h * w; ++j) {
        const int64_t here = b * length + j;
        if (!attended[here]) continue;
        if (token[here] != image_token_id)
          throw util::DataError("row " + std::to_string(b) + ": an image of " + std::to_string(t * h * w) +
                                " tokens has only " + std::to_string(placed) + " <|image_pad|> tokens in a run");
        const int64_t row = placed / (w * t), column = placed % w;  // get_vision_position_ids' order
        out[0][b][j] = position;
        out[1][b][j] = position + row;
        out[2][b][j] = position + column;
        ++placed;
      }
      position += std::max(h, w);
    }
  }
  if (next_grid != grids.size(0))
    throw util::DataError("image_grid_thw lists " + std::to_string(grids.size(0)) + " images, input_ids holds " +
                          std::to_string(next_grid));
  return positions.to(input_ids.device());
}

Qwen3VLBackboneImpl::Qwen3VLBackboneImpl(const Qwen3VLConfig& config, int64_t text_layers) : config_(config) {
  visual = register_module("visual", Qwen3VLVisionModel(config.vision));
  language_model = register_module("language_model", Qwen3VLTextModel(config.text, text_layers));
}

torch::Tensor Qwen3VLBackboneImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                           const torch::Tensor& pixel_values, const torch::Tensor& image_grid_thw) {
  auto embeds = language_model->embed_tokens(input_ids);
  const auto image_mask = input_ids == config_.image_token_id;
  const auto vision = visual->forward(pixel_values, image_grid_thw);
  const int64_t tokens = image_mask.sum().item<int64_t>();
  if (tokens != vision.merged.size(0))
    throw util::DataError("Image features and image tokens do not match, tokens: " + std::to_string(tokens) +
                          ", features: " + std::to_string(vision.merged.size(0)));
  embeds = embeds.masked_scatter(image_mask.unsqueeze(-1).expand_as(embeds), vision.merged.to(embeds.scalar_type()));
  const auto positions = qwen3_rope_index(input_ids, attention_mask, image_grid_thw, config_.image_token_id,
                                          config_.vision.spatial_merge_size);
  return language_model->run_layers(embeds, positions, attention_mask, image_mask, vision.deepstack);
}

}  // namespace lrhost::nn
