#include "ir/hlo_lexer.h"

#include <limits>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace mltune::ir {

void HloLexer::SkipSpace() {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (IsAsciiSpace(c)) {
      ++pos_;
    } else if (c == '/' && RawPeek(1) == '*') {
      const size_t end = text_.find("*/", pos_ + 2);
      if (end == std::string_view::npos) return;
      pos_ = end + 2;
    } else if (c == '/' && RawPeek(1) == '/') {
      const size_t end = text_.find('\n', pos_);
      pos_ = end == std::string_view::npos ? text_.size() : end + 1;
    } else {
      return;
    }
  }
}

bool HloLexer::TryConsume(char c) {
  if (Peek() != c || pos_ >= text_.size()) return false;
  ++pos_;
  return true;
}

std::string_view HloLexer::PeekWord() {
  SkipSpace();
  size_t end = pos_;
  while (end < text_.size() && IsNameChar(text_[end])) {
    if (text_[end] == '-' && end + 1 < text_.size() && text_[end + 1] == '>') break;
    ++end;
  }
  return text_.substr(pos_, end - pos_);
}

bool HloLexer::TryConsumeWord(std::string_view word) {
  if (PeekWord() != word) return false;
  pos_ += word.size();
  return true;
}

absl::Status HloLexer::Expect(char c) {
  if (TryConsume(c)) return absl::OkStatus();
  return Expected(absl::StrCat("'", std::string(1, c), "'"));
}

absl::StatusOr<std::string> HloLexer::ExpectName(std::string_view what) {
  absl::StatusOr<std::string_view> name = ExpectNameView(what);
  if (!name.ok()) return name.status();
  return std::string(*name);
}

absl::StatusOr<std::string_view> HloLexer::ExpectNameView(std::string_view what) {
  SkipSpace();
  const size_t start = pos_;
  if (RawPeek(0) == '%') ++pos_;
  std::string_view word = PeekWord();
  // Names start with a letter or '_' (with or without the sigil), so the printer can drop the
  // sigil and `1` or `-x` is never taken as a name.
  if (word.empty() || (!IsAsciiAlpha(word[0]) && word[0] != '_')) {
    pos_ = start;
    return Expected(what);
  }
  pos_ += word.size();
  return word;
}

absl::StatusOr<std::string> HloLexer::ExpectWord(std::string_view what) {
  std::string_view word = PeekWord();
  if (word.empty()) return Expected(what);
  pos_ += word.size();
  return std::string(word);
}

absl::StatusOr<int64_t> HloLexer::ExpectInt64(std::string_view what) {
  SkipSpace();
  const size_t start = pos_;
  size_t p = pos_;
  const bool negative = p < text_.size() && text_[p] == '-';
  if (negative) ++p;
  if (p >= text_.size() || !IsAsciiDigit(text_[p])) return Expected(what);
  // Accumulate as a negative number so INT64_MIN is representable.
  int64_t value = 0;
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  bool overflow = false;
  while (p < text_.size() && IsAsciiDigit(text_[p])) {
    const int64_t digit = text_[p] - '0';
    if (value < (kMin + digit) / 10) overflow = true;
    if (!overflow) value = value * 10 - digit;
    ++p;
  }
  if (!overflow && !negative && value == kMin) overflow = true;
  if (overflow) {
    return ErrorAt(
        start,
        absl::StrCat("integer out of range: '",
                     std::string(text_.substr(start, std::min<size_t>(p - start, 40))), "'"));
  }
  pos_ = p;
  return negative ? value : -value;
}

absl::StatusOr<uint64_t> HloLexer::ExpectUint64(std::string_view what) {
  SkipSpace();
  const size_t start = pos_;
  size_t p = pos_;
  if (p >= text_.size() || !IsAsciiDigit(text_[p])) return Expected(what);
  uint64_t value = 0;
  bool overflow = false;
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  while (p < text_.size() && IsAsciiDigit(text_[p])) {
    const uint64_t digit = static_cast<uint64_t>(text_[p] - '0');
    if (value > (kMax - digit) / 10) overflow = true;
    if (!overflow) value = value * 10 + digit;
    ++p;
  }
  if (overflow) {
    return ErrorAt(
        start,
        absl::StrCat("integer out of range: '",
                     std::string(text_.substr(start, std::min<size_t>(p - start, 40))), "'"));
  }
  pos_ = p;
  return value;
}

absl::StatusOr<bool> HloLexer::ExpectBool(std::string_view what) {
  if (TryConsumeWord("true")) return true;
  if (TryConsumeWord("false")) return false;
  return Expected(what);
}

size_t HloLexer::StringEnd(size_t start) const {
  size_t p = start + 1;
  while (p < text_.size()) {
    const char c = text_[p];
    if (c == '\\') {
      p += 2;
    } else if (c == '"') {
      return p + 1;
    } else {
      ++p;
    }
  }
  return std::string_view::npos;
}

absl::StatusOr<std::string> HloLexer::ExpectString(std::string* verbatim) {
  SkipSpace();
  if (RawPeek(0) != '"') return Expected("string");
  const size_t start = pos_;
  const size_t end = StringEnd(start);
  if (end == std::string_view::npos) return ErrorAt(start, "unterminated string");
  const std::string_view body = text_.substr(start + 1, end - start - 2);
  std::string unescaped;
  std::string error;
  if (!absl::CUnescape(absl::string_view(body.data(), body.size()), &unescaped, &error)) {
    return ErrorAt(start, absl::StrCat("invalid string escape: ", error));
  }
  if (verbatim != nullptr) *verbatim = std::string(text_.substr(start, end - start));
  pos_ = end;
  return unescaped;
}

absl::StatusOr<std::string> HloLexer::ExpectRawValue(std::string_view what) {
  SkipSpace();
  const size_t start = pos_;
  std::string out;
  std::vector<char> closers;
  size_t p = pos_;
  size_t chunk = p;  // start of the text not yet copied to `out`
  while (p < text_.size()) {
    const char c = text_[p];
    if (c == '"') {
      const size_t end = StringEnd(p);
      if (end == std::string_view::npos) return ErrorAt(p, "unterminated string");
      p = end;
      continue;
    }
    if (c == '/' && p + 1 < text_.size() && text_[p + 1] == '*') {
      const size_t end = text_.find("*/", p + 2);
      if (end == std::string_view::npos) return ErrorAt(p, "unterminated comment");
      out.append(text_.substr(chunk, p - chunk));
      p = end + 2;
      chunk = p;
      continue;
    }
    if (c == '{' || c == '[' || c == '(') {
      if (static_cast<int>(closers.size()) >= max_nesting_) {
        return ErrorAt(p, absl::StrCat("nesting deeper than ", max_nesting_));
      }
      closers.push_back(c == '{' ? '}' : c == '[' ? ']' : ')');
    } else if (c == '}' || c == ']' || c == ')') {
      if (closers.empty()) break;
      if (closers.back() != c) {
        pos_ = p;
        return Expected(absl::StrCat("'", std::string(1, closers.back()), "'"));
      }
      closers.pop_back();
    } else if (closers.empty() && (c == ',' || IsAsciiSpace(c))) {
      break;
    }
    ++p;
  }
  if (!closers.empty()) {
    pos_ = p;
    return Expected(absl::StrCat("'", std::string(1, closers.back()), "'"));
  }
  out.append(text_.substr(chunk, p - chunk));
  if (out.empty()) {
    pos_ = start;
    return Expected(what);
  }
  pos_ = p;
  return out;
}

std::pair<int64_t, int64_t> HloLexer::LineCol(size_t pos) const {
  if (pos > text_.size()) pos = text_.size();
  int64_t line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < pos; ++i) {
    if (text_[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return {line, static_cast<int64_t>(pos - line_start) + 1};
}

int64_t HloLexer::LineOf(size_t pos) {
  if (pos > text_.size()) pos = text_.size();
  if (pos < line_cache_pos_) {
    line_cache_pos_ = 0;
    line_cache_line_ = 1;
  }
  for (size_t i = line_cache_pos_; i < pos; ++i) {
    if (text_[i] == '\n') ++line_cache_line_;
  }
  line_cache_pos_ = pos;
  return line_cache_line_;
}

std::string HloLexer::Location(size_t pos) const {
  auto [line, col] = LineCol(pos);
  return absl::StrCat(line, ":", col);
}

absl::Status HloLexer::ErrorAt(size_t pos, std::string_view message) const {
  return absl::InvalidArgumentError(
      absl::StrCat(filename_, ":", Location(pos), ": ", std::string(message)));
}

absl::Status HloLexer::Expected(std::string_view what) {
  SkipSpace();
  return ErrorAt(pos_, absl::StrCat("expected ", std::string(what), ", got ", Describe(pos_)));
}

std::string HloLexer::Describe(size_t pos) const {
  if (pos >= text_.size()) return "end of input";
  const char c = text_[pos];
  if (c == '/' && pos + 1 < text_.size() && text_[pos + 1] == '*') return "unterminated comment";
  if (c == '"') {
    const size_t end = StringEnd(pos);
    const size_t len = end == std::string_view::npos ? text_.size() - pos : end - pos;
    if (len > 40) return absl::StrCat("string ", std::string(text_.substr(pos, 37)), "...");
    return absl::StrCat("string ", std::string(text_.substr(pos, len)));
  }
  size_t end = pos;
  while (end < text_.size() && end - pos < 40 && IsNameChar(text_[end])) {
    if (text_[end] == '-' && end + 1 < text_.size() && text_[end + 1] == '>') break;
    ++end;
  }
  if (end > pos) return absl::StrCat("'", std::string(text_.substr(pos, end - pos)), "'");
  const unsigned char u = static_cast<unsigned char>(c);
  if (u < 0x20 || u >= 0x7f) return absl::StrFormat("byte 0x%02x", u);
  return absl::StrCat("'", std::string(1, c), "'");
}

}  // namespace mltune::ir
