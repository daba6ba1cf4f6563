// `lrhost checkpoint merge DIR --out OUT`: a LoRA adapter folder folded into a plain pretrained folder
// that LeRobot loads as an ordinary policy: model.safetensors with every adapted weight W + (B @ A) *
// scaling (PEFT's merge, nn::merge_lora) and the modules trained in full as trained, config.json with
// use_peft false, the processors and the type's extra files. LeRobot ships no such tool.
#pragma once
#include <filesystem>
#include <string>

namespace lrhost::ckpt {

struct MergeReport {
  std::filesystem::path adapter_dir;  // the pretrained folder that was merged
  std::string base;                   // its adapter_config.json base_model_name_or_path
  std::size_t merged_layers = 0;
  std::size_t trained_fully = 0;
};

// DIR: an adapter pretrained folder, a checkpoint step dir, a checkpoints dir or an output dir (its
// last sound checkpoint). ConfigError when it holds no adapters or OUT is a non-empty folder; the
// folder appears whole or not at all.
MergeReport merge_adapter_folder(const std::filesystem::path& dir, const std::filesystem::path& out);

}  // namespace lrhost::ckpt
