#include "tokenizer/pcre2_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace brisk {

Pcre2Regex::Pcre2Regex(const std::string& pattern, const std::string& what) : pattern_(pattern) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  // Input is validated to UTF-8 before it reaches a regex, so PCRE2's own check is skipped.
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &error_code,
                                   &error_offset, nullptr);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    throw_error(ErrorCode::kCorruptData, "{}: cannot compile regex '{}' at offset {}: {}", what,
                pattern, error_offset, reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter when JIT fails
  code_ = code;
}

Pcre2Regex::~Pcre2Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

std::vector<std::pair<size_t, size_t>> Pcre2Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  auto* code = static_cast<pcre2_code*>(code_);
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(code, nullptr);
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    int rc = pcre2_match(code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, data, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(data);
      throw_error(ErrorCode::kInternal, "regex '{}' failed with PCRE2 error {}", pattern_, rc);
    }
    PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    size_t begin = ovector[0], end = ovector[1];
    matches.emplace_back(begin, end);
    if (end > begin) {
      start = end;
    } else {
      if (end >= text.size()) break;
      start = end + std::max<size_t>(1, utf8::sequence_length(text, end));
    }
  }
  pcre2_match_data_free(data);
  return matches;
}

}  // namespace brisk
