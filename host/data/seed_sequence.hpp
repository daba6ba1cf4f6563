// numpy's SeedSequence (numpy/random/bit_generator.pyx, after M. E. O'Neill's seed_seq) reduced to
// what the sampler needs: the 64-bit word `SeedSequence(entropy).generate_state(1, np.uint64)[0]`.
// LeRobot seeds each epoch's permutation with SeedSequence([seed, epoch]), so matching LeRobot's
// sample order requires this exact hash.
#pragma once
#include <cstdint>
#include <vector>

namespace lrhost::data {

// `entropy` are non-negative integers as numpy receives them in a list; each is split into 32-bit
// little-endian words (0 gives one zero word) before mixing.
uint64_t seed_sequence_uint64(const std::vector<uint64_t>& entropy);

}  // namespace lrhost::data
