// NFC through ICU; see nfc.hpp.
#include "host/text/nfc.hpp"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uniset.h>
#include <unicode/unistr.h>
#include <unicode/utypes.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace lrhost::text {
namespace {

// The Unicode version of the `tokenizers` crate's normalization tables (see nfc.hpp).
constexpr const char* tokenizers_unicode_set = "[:age=9.0:]";

// ICU's NFC restricted to the set; built once. ICU normalizers are immutable after construction and safe to share
// between threads. The set is a member because the filtered normalizer refers to it.
class TokenizersNfc {
 public:
  TokenizersNfc() : set_(icu::UnicodeString(tokenizers_unicode_set, -1, US_INV), status_) {
    set_.freeze();
    const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status_);
    if (U_FAILURE(status_)) throw std::runtime_error(std::string("ICU NFC setup failed: ") + u_errorName(status_));
    filtered_ = std::make_unique<icu::FilteredNormalizer2>(*nfc, set_);
  }
  const icu::Normalizer2& get() const { return *filtered_; }

 private:
  UErrorCode status_ = U_ZERO_ERROR;  // declared first: the set's constructor reports into it
  icu::UnicodeSet set_;
  std::unique_ptr<icu::FilteredNormalizer2> filtered_;
};

const icu::Normalizer2& tokenizers_nfc() {
  static const TokenizersNfc normalizer;
  return normalizer.get();
}

}  // namespace

void append_nfc(std::string& out, std::string_view text) {
  // ASCII is always in NFC; most prompts are, and they skip ICU.
  if (std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; })) {
    out.append(text);
    return;
  }
  UErrorCode status = U_ZERO_ERROR;
  icu::StringByteSink<std::string> sink(&out, static_cast<int32_t>(text.size()));
  tokenizers_nfc().normalizeUTF8(0, icu::StringPiece(text.data(), static_cast<int32_t>(text.size())), sink, nullptr,
                                 status);
  if (U_FAILURE(status)) throw std::runtime_error(std::string("ICU NFC failed: ") + u_errorName(status));
}

}  // namespace lrhost::text
