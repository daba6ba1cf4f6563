// Whether a policy can train on a dataset mixture whose datasets differ: a camera missing from some
// datasets, or a state/action narrower in some (host/data/mixture/mixture_dataset.hpp). Only
// policies that honour the mixture's masks may (Policy::honours_mixture_masks: the VLAs, which have
// empty cameras and pad state/action); for the others it is an error naming the dataset and the key,
// never black frames or zero dimensions trained on as if they were data. Checked wherever a policy
// meets a dataset (lr.policy.new, Policy:use_dataset).
#pragma once
#include "host/data/frame_source.hpp"
#include "host/policy/policy.hpp"

namespace lrhost::policy {

// ConfigError when `dataset` is a mixture the policy cannot take; nothing for a single dataset.
void check_mixture_fits(const Policy& policy, const data::FrameSource& dataset);

}  // namespace lrhost::policy
