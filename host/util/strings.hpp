// String helpers used to make error messages helpful: edit distance and "did you mean" lists.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace lrhost::util {

// Levenshtein distance (insert, delete, substitute all cost 1).
std::size_t edit_distance(std::string_view a, std::string_view b);

// Up to `limit` candidates closest to `word`, nearest first; only reasonably close ones.
std::vector<std::string> nearest(std::string_view word, const std::vector<std::string>& candidates,
                                 std::size_t limit = 3);

// "'a', 'b', 'c'": for lists of valid values in messages.
std::string quoted_list(const std::vector<std::string>& items);

}  // namespace lrhost::util
