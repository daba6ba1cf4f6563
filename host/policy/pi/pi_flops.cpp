// pi0/pi05's training FLOPs per sample (training_flops.hpp), from the geometry and the config, in the
// order the training forward runs: SigLIP per camera and the projector, the suffix embeddings, the
// joint layer loop (the VLM on the prefix, the expert on the suffix, one attention over both), and the
// action head. Which gradients exist follows what is frozen (paligemma_with_expert.cpp) and the data:
// pixels, noisy actions, state and time need none; everything after a trained layer does.
#include "host/policy/pi/pi_flops.hpp"

#include "host/policy/vision/siglip_flops.hpp"

namespace lrhost::policy::pi {

double pi_training_flops_per_sample(PiVariant variant, const PiConfigFields& config, const PiGeometry& geometry,
                                    int64_t num_cameras) {
  TrainingFlops flops;
  const auto& vision = geometry.paligemma.vision;
  const auto& vlm = geometry.paligemma.text;
  const auto& expert = geometry.expert;
  const bool paligemma_trains = !config.train_expert_only;
  const bool vision_trains = paligemma_trains && !config.freeze_vision_encoder;
  const bool checkpoint_vision = config.gradient_checkpointing && vision_trains;
  const bool checkpoint_pairs = config.gradient_checkpointing;

  // SigLIP on every camera (empty ones included), then the projector into the VLM's width.
  double patches = 0;
  for (int64_t camera = 0; camera < num_cameras; ++camera) {
    patches = static_cast<double>(vision::count_siglip_flops(flops, vision, vision_trains, checkpoint_vision));
    flops.matmul(patches, static_cast<double>(vision.hidden_size), static_cast<double>(vlm.hidden_size),
                 paligemma_trains, vision_trains);
  }

  // The suffix: pi0 has a state token and fuses time into each action token; pi05 conditions the
  // expert's norms on a time vector instead.
  const double chunk = static_cast<double>(config.chunk_size);
  const double width = static_cast<double>(expert.hidden_size);
  const double action_dim = static_cast<double>(config.max_action_dim);
  flops.matmul(chunk, action_dim, width, true, false);  // action_in_proj
  double suffix_length = chunk;
  if (variant == PiVariant::pi0) {
    flops.matmul(1, static_cast<double>(config.max_state_dim), width, true, false);  // state_proj
    flops.matmul(chunk, 2 * width, width, true, true);                               // action_time_mlp_in
    flops.matmul(chunk, width, width, true, true);                                   // action_time_mlp_out
    suffix_length += 1;
  } else {
    flops.matmul(1, width, width, true, false);  // time_mlp_in
    flops.matmul(1, width, width, true, true);   // time_mlp_out
  }
  // pi05's adaptive norms: dense(cond) -> scale, shift, gate, once per sample.
  auto adaptive_norm = [&](bool recomputed) {
    if (variant == PiVariant::pi05)
      flops.matmul(1, static_cast<double>(expert.adarms_cond_dim), 3 * width, true, true, recomputed);
  };

  // The joint layer loop. The prefix needs gradients when the VLM trains (its embeddings and the
  // projector do); with the whole PaliGemma frozen (train_expert_only) from the first attention on,
  // whose values mix in the suffix's.
  const double prefix_length =
      static_cast<double>(num_cameras) * patches + static_cast<double>(config.tokenizer_max_length);
  const double length = prefix_length + suffix_length;
  const double heads = static_cast<double>(vlm.num_attention_heads);
  const double head_dim = static_cast<double>(vlm.head_dim);
  const double kv_width = static_cast<double>(vlm.num_key_value_heads) * head_dim;
  bool prefix_grad = paligemma_trains;
  for (int64_t layer = 0; layer < vlm.num_hidden_layers; ++layer) {
    const bool last = layer + 1 == vlm.num_hidden_layers;
    const double vlm_width = static_cast<double>(vlm.hidden_size);
    flops.matmul(prefix_length, vlm_width, heads * head_dim, paligemma_trains, prefix_grad, checkpoint_pairs);
    flops.matmul(prefix_length, vlm_width, kv_width, paligemma_trains, prefix_grad, checkpoint_pairs);
    flops.matmul(prefix_length, vlm_width, kv_width, paligemma_trains, prefix_grad, checkpoint_pairs);
    adaptive_norm(checkpoint_pairs);
    flops.matmul(suffix_length, width, heads * head_dim, true, true, checkpoint_pairs);
    flops.matmul(suffix_length, width, kv_width, true, true, checkpoint_pairs);
    flops.matmul(suffix_length, width, kv_width, true, true, checkpoint_pairs);
    flops.activation_matmul(heads * length, head_dim, length, true, checkpoint_pairs);
    flops.activation_matmul(heads * length, length, head_dim, true, checkpoint_pairs);
    prefix_grad = true;  // the attention's output depends on the suffix's values
    if (!last) {         // the VLM's last layer ends at its keys and values (its output is never read)
      const double vlm_mlp = static_cast<double>(vlm.intermediate_size);
      flops.matmul(prefix_length, heads * head_dim, vlm_width, paligemma_trains, true, checkpoint_pairs);
      flops.matmul(prefix_length, vlm_width, vlm_mlp, paligemma_trains, true, checkpoint_pairs);
      flops.matmul(prefix_length, vlm_width, vlm_mlp, paligemma_trains, true, checkpoint_pairs);
      flops.matmul(prefix_length, vlm_mlp, vlm_width, paligemma_trains, true, checkpoint_pairs);
    }
    const double expert_mlp = static_cast<double>(expert.intermediate_size);
    flops.matmul(suffix_length, heads * head_dim, width, true, true, checkpoint_pairs);
    adaptive_norm(checkpoint_pairs);
    flops.matmul(suffix_length, width, expert_mlp, true, true, checkpoint_pairs);
    flops.matmul(suffix_length, width, expert_mlp, true, true, checkpoint_pairs);
    flops.matmul(suffix_length, expert_mlp, width, true, true, checkpoint_pairs);
  }
  adaptive_norm(false);                                // the expert's final norm
  flops.matmul(chunk, width, action_dim, true, true);  // action_out_proj on the action tokens
  return flops.total();
}

}  // namespace lrhost::policy::pi
