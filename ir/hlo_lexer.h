// Character-level scanner for HLO text: whitespace and comments, names, integers, strings and
// balanced raw attribute values, with `file:line:col` error messages. The HLO grammar has many
// context-dependent forms (`3x3`, `1_1x0_0`, `b01f_01io->b01f`, shapes), so the parser drives the
// scanner one construct at a time instead of consuming a fixed token stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mltune::ir {

inline bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsAsciiAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
// Characters of instruction, computation and attribute names.
inline bool IsNameChar(char c) {
  return IsAsciiAlpha(c) || IsAsciiDigit(c) || c == '_' || c == '.' || c == '-';
}

class HloLexer {
 public:
  HloLexer(std::string_view text, std::string_view filename, int max_nesting)
      : text_(text), filename_(filename), max_nesting_(max_nesting) {}

  size_t pos() const { return pos_; }
  void set_pos(size_t pos) { pos_ = pos; }
  std::string_view text() const { return text_; }
  int max_nesting() const { return max_nesting_; }

  // Skips whitespace, `/* ... */` and `// ...` comments. An unterminated `/*` is left in place so
  // the next expectation reports it.
  void SkipSpace();
  bool AtEof() {
    SkipSpace();
    return pos_ >= text_.size();
  }
  // The next significant character ('\0' at the end), after SkipSpace.
  char Peek() {
    SkipSpace();
    return RawPeek(0);
  }
  // The character `k` places after the current position, without skipping anything.
  char RawPeek(size_t k) const { return pos_ + k < text_.size() ? text_[pos_ + k] : '\0'; }
  void Advance(size_t n = 1) { pos_ = pos_ + n > text_.size() ? text_.size() : pos_ + n; }

  // Consumes `c` if it is the next significant character.
  bool TryConsume(char c);
  // Consumes `word` if the next name-character run is exactly `word`.
  bool TryConsumeWord(std::string_view word);
  absl::Status Expect(char c);

  // The next run of name characters (possibly empty), without consuming it. A '-' directly
  // before '>' ends the run, so `x->y` reads as `x`.
  std::string_view PeekWord();
  // A name, with an optional leading `%` sigil (not part of the returned name).
  absl::StatusOr<std::string> ExpectName(std::string_view what);
  // The same, as a view into the text (valid as long as the text).
  absl::StatusOr<std::string_view> ExpectNameView(std::string_view what);
  // A bare word of name characters, e.g. an enum value (`GE`, `kLoop`, `API_VERSION_...`).
  absl::StatusOr<std::string> ExpectWord(std::string_view what);

  // Decimal integers with an optional '-'; overflow is an error.
  absl::StatusOr<int64_t> ExpectInt64(std::string_view what);
  absl::StatusOr<uint64_t> ExpectUint64(std::string_view what);
  absl::StatusOr<bool> ExpectBool(std::string_view what);

  // A double-quoted string with C escapes: `verbatim` gets the text with its quotes as written,
  // the result is the unescaped content.
  absl::StatusOr<std::string> ExpectString(std::string* verbatim = nullptr);

  // An attribute value kept as text: everything up to a ',' or whitespace outside brackets,
  // braces, parentheses and strings. Comments are dropped from the text.
  absl::StatusOr<std::string> ExpectRawValue(std::string_view what);

  // "file:line:col: message" at byte offset `pos`.
  absl::Status ErrorAt(size_t pos, std::string_view message) const;
  // "file:line:col: expected <what>, got <next>" at the current (space-skipped) position.
  absl::Status Expected(std::string_view what);
  // A short description of the text at `pos` for error messages.
  std::string Describe(size_t pos) const;
  // 1-based line and column of byte offset `pos`.
  std::pair<int64_t, int64_t> LineCol(size_t pos) const;
  // Line of `pos`; amortised O(1) when called with non-decreasing positions, as the parser does.
  int64_t LineOf(size_t pos);
  std::string Location(size_t pos) const;

 private:
  // Scans a string starting at the opening quote; returns the offset just past the closing quote
  // or npos when unterminated.
  size_t StringEnd(size_t start) const;

  std::string_view text_;
  std::string filename_;
  int max_nesting_;
  size_t pos_ = 0;
  size_t line_cache_pos_ = 0;
  int64_t line_cache_line_ = 1;
};

}  // namespace mltune::ir
