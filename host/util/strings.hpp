// String helpers used to make messages helpful: edit distance, "did you mean" lists, sizes in bytes,
// words quoted for a shell (the commands lrhost prints for users to paste).
#pragma once
#include <cstdint>
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

// `text` in ASCII lower case (flag and config values compared case-insensitively).
std::string lowercase(std::string text);

// "24GiB", "24 GiB", "80GB", "80G", "512MiB", "1e9": bytes (GiB/G: 2^30, GB: 10^9, no unit: bytes);
// ConfigError naming `what` for anything else or a size < 1 byte.
int64_t parse_memory_size(const std::string& text, const std::string& what);

// "512 B", "1.5 KiB", "3.2 GiB": a size for people (powers of 1024).
std::string human_bytes(std::uintmax_t bytes);

// `text` as one shell word: unchanged when it holds only characters no shell treats specially,
// else in single quotes (a ' inside written as '\'').
std::string shell_quoted(const std::string& text);

}  // namespace lrhost::util
