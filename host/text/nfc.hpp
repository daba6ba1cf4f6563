// The NFC normalizer of Hugging Face `tokenizers` (normalizers.NFC, which transformers' Qwen2Tokenizer installs):
// Unicode canonical composition, computed by ICU. `tokenizers` composes with the tables of its
// unicode-normalization-alignments crate, which are Unicode 9.0's, so ICU's NFC is restricted to the code points
// assigned by Unicode 9.0 (ICU's FilteredNormalizer2 over [:age=9.0:]); later characters pass through unchanged
// and stop composition and reordering, as characters unknown to the crate's tables do. With ICU's own (newer)
// tables the two differ on the combining marks added since, e.g. U+1DF6 or U+0D3B.
#pragma once
#include <string>
#include <string_view>

namespace lrhost::text {

// Appends the NFC form of `text` (valid UTF-8) to `out`. Throws std::runtime_error when ICU fails.
void append_nfc(std::string& out, std::string_view text);

}  // namespace lrhost::text
