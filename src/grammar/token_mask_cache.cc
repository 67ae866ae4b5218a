#include "grammar/token_mask_cache.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <climits>
#include <future>
#include <map>
#include <thread>

namespace brisk::grammar {

TokenMaskCache::TokenMaskCache(const ByteGrammar& grammar, const TokenVocab& vocab)
    : grammar_(grammar), vocab_(vocab) {
  for (int32_t id : vocab_.sorted()) max_token_bytes_ = std::max(max_token_bytes_, vocab_.token_bytes(id).size());
}

std::vector<int32_t> PositionMask::accepted_tokens() const {
  std::vector<int32_t> ids = accepted_ids;
  for (size_t w = 0; w < accepted_bits.size(); ++w)
    for (uint32_t bits = accepted_bits[w]; bits != 0; bits &= bits - 1)
      ids.push_back(int32_t(w * 32 + size_t(std::countr_zero(bits))));
  return ids;
}

const ByteRule* TokenMaskCache::repetition_start(const ParserItem& item) const {
  const ByteRule& rule = grammar_.rules[grammar_.alternatives[item.alt].rule];
  return rule.repeat_family >= 0 && item.dot == 0 && item.utf8 == 0 ? &rule : nullptr;
}

size_t TokenMaskCache::num_entries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

const PositionMask& TokenMaskCache::get(const ParserItem& item, std::span<const Site> context, int max_threads) {
  auto append = [](Key& key, int32_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  Key key;
  append(key, item.alt);
  append(key, item.dot);
  append(key, int32_t(item.utf8));
  constexpr size_t kItemBytes = 3 * sizeof(int32_t);  // the context's sites follow
  for (const Site& site : context) {
    append(key, site.alt);
    append(key, site.dot);
  }
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (auto it = entries_.find(key); it != entries_.end()) return *it->second;
    if (!computing_.contains(key)) break;
    computed_.wait(lock);  // another thread computes this position
  }
  computing_.insert(key);
  const ByteRule* family = repetition_start(item);
  Key family_key;
  std::shared_ptr<const PositionMask> known;
  size_t known_length = 0;
  if (family != nullptr) {
    const ByteRule& rule = *family;
    append(family_key, rule.repeat_family);
    family_key.append(key, kItemBytes);
    const Sibling* best = nullptr;
    for (const Sibling& s : siblings_[family_key])
      if (best == nullptr || std::min(s.left, rule.repeat_left) > std::min(best->left, rule.repeat_left)) best = &s;
    if (best != nullptr) {
      known = entries_.at(best->key);
      known_length = size_t(std::min(best->left, rule.repeat_left));
    }
  }
  lock.unlock();
  // Computed outside the lock: other positions are computed or read meanwhile.
  std::shared_ptr<const PositionMask> mask;
  try {
    if (known && known_length >= max_token_bytes_) {
      mask = known;
    } else {
      mask = compute(item, context, known.get(), known_length, max_threads);
    }
  } catch (...) {
    lock.lock();
    computing_.erase(key);
    computed_.notify_all();
    throw;
  }
  lock.lock();
  computing_.erase(key);
  auto [inserted, _] = entries_.emplace(key, std::move(mask));
  if (family != nullptr) siblings_[family_key].push_back(Sibling{family->repeat_left, std::move(key)});
  computed_.notify_all();
  return *inserted->second;
}

void TokenMaskCache::precompute(std::span<const GrammarPosition> positions, int num_threads,
                                std::chrono::steady_clock::time_point deadline) {
  // Tasks: a repetition family's starts in one task, most copies left first, so that each starts
  // from the one before it; every other position a task of its own.
  std::map<std::pair<int32_t, std::vector<int32_t>>, std::vector<size_t>> families;
  std::vector<std::vector<size_t>> tasks;
  for (size_t i = 0; i < positions.size(); ++i) {
    const ByteRule* rule = repetition_start(positions[i].item);
    if (rule == nullptr) {
      tasks.push_back({i});
      continue;
    }
    std::vector<int32_t> context;
    for (const Site& site : positions[i].context) context.insert(context.end(), {site.alt, site.dot});
    families[{rule->repeat_family, std::move(context)}].push_back(i);
  }
  for (auto& [_, members] : families) {
    std::sort(members.begin(), members.end(), [&](size_t a, size_t b) {
      return repetition_start(positions[a].item)->repeat_left > repetition_start(positions[b].item)->repeat_left;
    });
    tasks.push_back(std::move(members));
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t t = next++; t < tasks.size() && std::chrono::steady_clock::now() < deadline; t = next++)
      for (size_t i : tasks[t]) get(positions[i].item, positions[i].context, 1);
  };
  std::vector<std::future<void>> running;
  for (int t = 1; t < num_threads; ++t) running.push_back(std::async(std::launch::async, work));
  work();
  for (auto& f : running) f.get();
}

namespace {

// True when token bytes [from, end) pass the lookahead assertion `lookahead_alt` (see the header).
bool passes_lookahead(EarleyParser& lookahead, int32_t lookahead_alt, const std::string& token, size_t from) {
  lookahead.reset_to_alternative(lookahead_alt);
  if (lookahead.can_end()) return true;
  for (size_t i = from; i < token.size(); ++i) {
    if (!lookahead.advance(uint8_t(token[i]))) return false;
    if (lookahead.can_end()) return true;
  }
  return true;  // the whole rest was consumed
}

// Vocabularies from this size on are classified on several threads.
constexpr int32_t kMinTokensPerThread = 8192;

}  // namespace

// The tokens whose first byte is in [first_byte, end_byte), in byte order: each thread of compute()
// walks such a range with parsers of its own.
void TokenMaskCache::classify(const ParserItem& start, std::span<const Site> context, int first_byte, int end_byte,
                              size_t min_length, Classified& out) const {
  int32_t innermost = context.empty() ? grammar_.alternatives[start.alt].rule
                                      : grammar_.alternatives[context.back().alt].rule;
  int32_t rule = grammar_.rules[innermost].end_rule;
  bool is_root = rule == grammar_.root;
  int32_t lookahead_alt = grammar_.rules[rule].lookahead;
  const auto& sorted = vocab_.sorted();
  const auto& lcp = vocab_.sorted_lcp();
  EarleyParser local(grammar_), lookahead(grammar_);
  local.reset_to_item(start, context);
  // Walk the tokens in byte order, keeping the parser at the longest prefix shared with the
  // last token walked: `depth` bytes of it are pushed. reach_or[k]: the rule can complete
  // after some number of bytes in 1..k.
  int32_t depth = 0;
  std::vector<uint8_t> reach_or{0};
  for (int b = first_byte; b < end_byte; ++b) {
    int32_t begin = vocab_.first_byte_begin(b);
    int32_t end = vocab_.first_byte_begin(b + 1);
    if (begin == end) continue;
    local.pop(depth);
    reach_or.resize(1);
    depth = 0;
    if (!local.advance(uint8_t(b))) continue;  // every token starting with b is rejected
    local.pop(1);
    int32_t run_min = 0;  // common prefix of the next token and the last one walked
    for (int32_t i = begin; i < end; ++i) {
      run_min = std::min(run_min, lcp[i]);
      const std::string& token = vocab_.token_bytes(sorted[i]);
      if (token.size() <= min_length) continue;  // known
      if (depth > run_min) {
        local.pop(depth - run_min);
        reach_or.resize(size_t(run_min) + 1);
        depth = run_min;
      }
      run_min = INT32_MAX;
      bool ok = true;
      while (depth < int32_t(token.size())) {
        if (!local.advance(uint8_t(token[depth]))) {
          ok = false;
          break;
        }
        ++depth;
        reach_or.push_back(reach_or.back() | uint8_t(local.can_end()));
      }
      if (ok) {
        out.accepted.push_back(sorted[i]);
        continue;
      }
      bool reaches_end = depth > 0 && reach_or[depth] != 0;
      if (reaches_end && !is_root) {
        bool passes = lookahead_alt < 0;
        for (int32_t k = depth; k >= 1 && !passes; --k) {
          if (local.can_end_at(k)) passes = passes_lookahead(lookahead, lookahead_alt, token, size_t(k));
        }
        if (passes) out.uncertain.push_back(i);
        continue;  // the rest of the token decided: tokens sharing this prefix may differ
      }
      // Tokens that share this one's first depth + 1 bytes fail at the same byte.
      while (i + 1 < end && lcp[i + 1] > depth) {
        ++i;
        run_min = std::min(run_min, lcp[i]);
      }
    }
  }
  local.pop(depth);
}

std::unique_ptr<PositionMask> TokenMaskCache::compute(const ParserItem& start, std::span<const Site> context,
                                                      const PositionMask* known, size_t known_length,
                                                      int max_threads) {
  // Only tokens whose first byte the position takes cost a walk: first-byte ranges of about
  // equal numbers of them, one per thread (none where too few), joined in byte order.
  EarleyParser probe(grammar_);
  probe.reset_to_item(start, context);
  std::vector<int64_t> live_before(257, 0);  // walked tokens with a first byte below b
  for (int b = 0; b < 256; ++b) {
    int64_t live = 0;
    if (vocab_.first_byte_begin(b + 1) > vocab_.first_byte_begin(b) && probe.advance(uint8_t(b))) {
      probe.pop(1);
      live = vocab_.first_byte_begin(b + 1) - vocab_.first_byte_begin(b);
    }
    live_before[b + 1] = live_before[b] + live;
  }
  const int64_t num_live = live_before[256];
  const int64_t threads = max_threads > 0 ? max_threads : std::max(1u, std::thread::hardware_concurrency());
  const int num_threads = int(std::clamp<int64_t>(num_live / kMinTokensPerThread, 1, threads));
  std::vector<int> bounds{0};
  for (int b = 1; b < 256 && int(bounds.size()) < num_threads; ++b)
    if (live_before[b] * num_threads >= num_live * int64_t(bounds.size())) bounds.push_back(b);
  bounds.push_back(256);
  std::vector<Classified> parts(bounds.size() - 1);
  std::vector<std::future<void>> running;
  for (size_t t = 1; t < parts.size(); ++t)
    running.push_back(std::async(std::launch::async, [&, t] {
      classify(start, context, bounds[t], bounds[t + 1], known_length, parts[t]);
    }));
  classify(start, context, bounds[0], bounds[1], known_length, parts[0]);
  for (auto& f : running) f.get();

  auto mask = std::make_unique<PositionMask>();
  std::vector<int32_t> accepted;
  for (Classified& part : parts) {
    accepted.insert(accepted.end(), part.accepted.begin(), part.accepted.end());
    mask->uncertain.insert(mask->uncertain.end(), part.uncertain.begin(), part.uncertain.end());
  }
  if (known != nullptr) {
    auto is_known = [&](int32_t id) { return vocab_.token_bytes(id).size() <= known_length; };
    for (int32_t id : known->accepted_tokens())
      if (is_known(id)) accepted.push_back(id);
    for (int32_t index : known->uncertain)
      if (is_known(vocab_.sorted()[index])) mask->uncertain.push_back(index);
    std::sort(mask->uncertain.begin(), mask->uncertain.end());
  }
  if (accepted.size() * 32 >= size_t(vocab_.vocab_size())) {
    mask->accepted_bits.assign((size_t(vocab_.vocab_size()) + 31) / 32, 0);
    for (int32_t id : accepted) mask->accepted_bits[id >> 5] |= 1u << (id & 31);
  } else {
    mask->accepted_ids = std::move(accepted);
  }
  return mask;
}

}  // namespace brisk::grammar
