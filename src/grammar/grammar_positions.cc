#include "grammar/grammar_positions.h"

#include <algorithm>

namespace brisk::grammar {
namespace {

class PositionFinder {
 public:
  PositionFinder(const ByteGrammar& g, size_t max_depth) : g_(g), max_depth_(max_depth), sites_(g.rules.size()) {
    find_reachable();
    for (size_t a = 0; a < g_.alternatives.size(); ++a) {
      const Alternative& alt = g_.alternatives[a];
      if (alt.rule < 0 || !reachable_[alt.rule]) continue;  // lookahead sequences are parsed apart
      for (int32_t i = alt.begin; i < alt.end; ++i)
        if (g_.elements[i].kind == ElementKind::kRule) sites_[g_.elements[i].value].push_back({int32_t(a), i - alt.begin});
    }
  }

  std::vector<GrammarPosition> run(size_t max_positions) {
    std::vector<GrammarPosition> out;
    max_contexts_ = max_positions;
    for (int32_t r : order_) {
      std::vector<std::vector<Site>> contexts;
      std::vector<Site> chain;
      chains(r, chain, contexts);
      for (int32_t a : g_.rules[r].alternatives) {
        const Alternative& alt = g_.alternatives[a];
        for (int32_t dot = 0; dot < alt.end - alt.begin; ++dot) {
          if (g_.elements[alt.begin + dot].kind == ElementKind::kRule) continue;
          for (const std::vector<Site>& context : contexts) {
            if (out.size() >= max_positions) return out;
            out.push_back({ParserItem{a, dot, 0, 0}, context});
          }
        }
      }
    }
    return out;
  }

 private:
  // Rules reachable from the root, in breadth-first order.
  void find_reachable() {
    reachable_.assign(g_.rules.size(), false);
    reachable_[g_.root] = true;
    order_.push_back(g_.root);
    for (size_t next = 0; next < order_.size(); ++next) {
      for (int32_t a : g_.rules[order_[next]].alternatives) {
        const Alternative& alt = g_.alternatives[a];
        for (int32_t i = alt.begin; i < alt.end; ++i) {
          const Element& el = g_.elements[i];
          if (el.kind != ElementKind::kRule || reachable_[el.value]) continue;
          reachable_[el.value] = true;
          order_.push_back(el.value);
        }
      }
    }
  }

  bool tail_of_itself(int32_t rule, const Site& site) const {
    const Alternative& alt = g_.alternatives[site.alt];
    return alt.rule == rule && site.dot + 1 == alt.end - alt.begin;
  }

  // Every context a rule's items can have below `chain` (EarleyParser::find_context's walk).
  // `hops`: levels walked (a guard: a walk up the grammar visits each rule once per context site).
  void chains(int32_t rule, std::vector<Site>& chain, std::vector<std::vector<Site>>& out, size_t hops = 0) const {
    if (out.size() >= max_contexts_) return;  // shared rules can branch at every level
    if (hops > g_.rules.size() * (chain.size() + 1)) {
      out.push_back(chain);
      return;
    }
    std::vector<Site> parents;
    for (const Site& site : sites_[rule]) {
      if (g_.alternatives[site.alt].rule == rule && site.dot == 0) {  // left recursion: two parents
        out.push_back(chain);
        return;
      }
      if (!tail_of_itself(rule, site)) parents.push_back(site);
    }
    // The root's own items have no parent; a rule without parents ends its context too.
    if (rule == g_.root || parents.empty()) out.push_back(chain);
    const bool fixed = !g_.rules[rule].continuations.empty();
    for (const Site& site : parents) {
      if (fixed) {
        chains(g_.alternatives[site.alt].rule, chain, out, hops + 1);
        continue;
      }
      if (chain.size() >= max_depth_ || std::find(chain.begin(), chain.end(), site) != chain.end()) {
        out.push_back(chain);
        continue;
      }
      chain.push_back(site);
      chains(g_.alternatives[site.alt].rule, chain, out, hops + 1);
      chain.pop_back();
    }
  }

  const ByteGrammar& g_;
  size_t max_depth_;
  size_t max_contexts_ = 0;
  std::vector<std::vector<Site>> sites_;  // per rule: the elements that reference it
  std::vector<bool> reachable_;
  std::vector<int32_t> order_;
};

}  // namespace

std::vector<GrammarPosition> reachable_positions(const ByteGrammar& grammar, size_t max_depth, size_t max_positions) {
  return PositionFinder(grammar, max_depth).run(max_positions);
}

}  // namespace brisk::grammar
