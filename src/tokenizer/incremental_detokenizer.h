// IncrementalDetokenizer: turns a stream of generated token ids into text deltas for
// streaming responses. A delta never ends inside a UTF-8 sequence that a later token
// could complete (an emoji split over several byte tokens is held back until whole),
// and the concatenation of all deltas plus Flush() equals Decode(all ids) exactly.
//
//   IncrementalDetokenizer detok(*tokenizer, /*skip_special_tokens=*/true);
//   for (int32_t id : generated) send(detok.Push(id));
//   send(detok.Flush());
//
// Borrows `tokenizer`, which must outlive it. Not thread-safe (one per request).
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace pagellm::tokenizer {

class IncrementalDetokenizer {
 public:
  IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens)
      : tokenizer_(tokenizer), skip_special_tokens_(skip_special_tokens) {}

  // Returns the text that became final with this token (possibly empty).
  std::string Push(int32_t id);
  // Returns whatever is still held back (incomplete UTF-8 becomes U+FFFD).
  std::string Flush();
  // True while bytes of the tokens pushed so far are held back (an incomplete character).
  bool holds_back() const { return !pending_.empty(); }

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_tokens_;
  bool first_ = true;
  std::string pending_;  // bytes not yet returned; at most an incomplete sequence
};

}  // namespace pagellm::tokenizer
