#include "grammar/byte_grammar.h"

#include <optional>

#include <fmt/format.h>

#include "core/error.h"

namespace brisk::grammar {

bool ByteClass::contains(uint32_t cp) const {
  if (cp < 128) return ascii[cp];
  bool in = false;
  for (const CharRange& r : ranges) {
    if (cp >= r.lo && cp <= r.hi) {
      in = true;
      break;
    }
  }
  return in != negated;
}

bool ByteClass::may_contain(uint32_t lo, uint32_t hi) const {
  if (lo > hi) return false;
  if (!negated) {
    for (const CharRange& r : ranges) {
      if (hi >= r.lo && lo <= r.hi) return true;
    }
    return false;
  }
  // Negated: some code point of [lo, hi] lies outside every range (ranges are sorted).
  uint32_t next = lo;
  for (const CharRange& r : ranges) {
    if (r.hi < next) continue;
    if (r.lo > next) return true;
    if (r.hi >= hi) return false;
    next = r.hi + 1;
  }
  return next <= hi;
}

namespace {

class Lowering {
 public:
  explicit Lowering(const Grammar& g) : g_(g) {}

  ByteGrammar run() {
    for (const Rule& rule : g_.rules) out_.rules.push_back(ByteRule{rule.name, {}, -1, false, false, {}, -1});
    for (size_t r = 0; r < g_.rules.size(); ++r) {
      BRISK_CHECK(g_.rules[r].body >= 0, "grammar: rule '{}' has no body", g_.rules[r].name);
      lower_rule_body(int32_t(r), g_.rules[r].body);
      if (g_.rules[r].lookahead >= 0) {
        std::vector<Element> elems;
        lower_into(g_.rules[r].lookahead, elems);
        out_.rules[r].lookahead = add_alternative(-1, elems);
      }
    }
    out_.root = g_.root;
    compute_nullable();
    keep_byte_consuming_families();
    compute_continuations();
    return std::move(out_);
  }

 private:
  int32_t add_alternative(int32_t rule, const std::vector<Element>& elems) {
    int32_t begin = int32_t(out_.elements.size());
    out_.elements.insert(out_.elements.end(), elems.begin(), elems.end());
    out_.alternatives.push_back(Alternative{rule, begin, int32_t(out_.elements.size())});
    int32_t id = int32_t(out_.alternatives.size()) - 1;
    if (rule >= 0) out_.rules[rule].alternatives.push_back(id);
    return id;
  }

  int32_t new_rule(const std::string& base) {
    out_.rules.push_back(ByteRule{fmt::format("{}_{}", base, out_.rules.size()), {}, -1, false, true, {}, -1});
    return int32_t(out_.rules.size()) - 1;
  }

  void lower_rule_body(int32_t rule, int32_t expr) {
    const Expr& e = g_.exprs[expr];
    if (e.kind == ExprKind::kChoice) {
      for (int32_t child : e.children) lower_rule_body(rule, child);
      return;
    }
    std::vector<Element> elems;
    lower_into(expr, elems);
    add_alternative(rule, elems);
  }

  int32_t add_class(const Expr& e) {
    ByteClass c;
    c.negated = e.negated;
    c.ranges = e.ranges;
    for (uint32_t cp = 0; cp < 128; ++cp) {
      bool in = false;
      for (const CharRange& r : e.ranges) in = in || (cp >= r.lo && cp <= r.hi);
      c.ascii[cp] = in != e.negated;
    }
    out_.classes.push_back(std::move(c));
    return int32_t(out_.classes.size()) - 1;
  }

  // A rule whose body is `expr` (for a choice or repetition nested in a sequence).
  int32_t helper_rule(int32_t expr) {
    int32_t rule = new_rule(current_base());
    lower_rule_body(rule, expr);
    return rule;
  }

  std::string current_base() const { return "helper"; }

  void lower_into(int32_t expr, std::vector<Element>& out) {
    const Expr& e = g_.exprs[expr];
    switch (e.kind) {
      case ExprKind::kEmpty: return;
      case ExprKind::kBytes:
        for (unsigned char c : e.bytes) out.push_back({ElementKind::kByte, c});
        return;
      case ExprKind::kCharClass: out.push_back({ElementKind::kClass, add_class(e)}); return;
      case ExprKind::kRuleRef: out.push_back({ElementKind::kRule, e.rule}); return;
      case ExprKind::kSequence:
        for (int32_t child : e.children) lower_into(child, out);
        return;
      case ExprKind::kChoice: out.push_back({ElementKind::kRule, helper_rule(expr)}); return;
      case ExprKind::kRepeat: lower_repeat(e, out); return;
    }
  }

  void lower_repeat(const Expr& e, std::vector<Element>& out) {
    const Expr& child = g_.exprs[e.children[0]];
    if (child.kind == ExprKind::kCharClass && e.min == 0 && e.max == -1) {
      out.push_back({ElementKind::kClassStar, add_class(child)});
      return;
    }
    // One copy of the child, as elements (a helper rule when it is a choice). Each copy gets
    // its own helper rules, so that each helper has one reference site (continuations).
    auto once = [&] {
      std::vector<Element> elems;
      lower_into(e.children[0], elems);
      return elems;
    };
    for (int32_t i = 0; i < e.min; ++i) {
      std::vector<Element> copy = once();
      out.insert(out.end(), copy.begin(), copy.end());
    }
    if (e.max == -1) {
      if (child.kind == ExprKind::kCharClass) {
        out.push_back({ElementKind::kClassStar, add_class(child)});
        return;
      }
      // star ::= "" | star child  (left recursion keeps Earley sets small)
      int32_t star = new_rule("star");
      add_alternative(star, {});
      std::vector<Element> loop{{ElementKind::kRule, star}};
      std::vector<Element> copy = once();
      loop.insert(loop.end(), copy.begin(), copy.end());
      add_alternative(star, loop);
      out.push_back({ElementKind::kRule, star});
      return;
    }
    // Up to k more: opt_k ::= "" | child opt_{k-1}
    int32_t next = -1, family = -1;
    for (int32_t k = 1; k <= e.max - e.min; ++k) {
      int32_t opt = new_rule("opt");
      if (family < 0) family = opt;
      out_.rules[opt].repeat_family = family;
      out_.rules[opt].repeat_left = k;
      add_alternative(opt, {});
      std::vector<Element> more = once();
      if (next >= 0) more.push_back({ElementKind::kRule, next});
      add_alternative(opt, more);
      next = opt;
    }
    if (next >= 0) out.push_back({ElementKind::kRule, next});
  }

  // A helper referenced from one site (or from one site and its own left-recursive loop)
  // always goes on there: the mask cache parses such helpers together with their context up
  // to a user rule, as xgrammar does with a rule's automaton.
  void compute_continuations() {
    std::vector<std::vector<Site>> sites(out_.rules.size());
    for (size_t a = 0; a < out_.alternatives.size(); ++a) {
      const Alternative& alt = out_.alternatives[a];
      for (int32_t i = alt.begin; i < alt.end; ++i) {
        if (out_.elements[i].kind == ElementKind::kRule) {
          sites[out_.elements[i].value].push_back(Site{int32_t(a), i - alt.begin});
        }
      }
    }
    for (size_t r = 0; r < out_.rules.size(); ++r) {
      ByteRule& rule = out_.rules[r];
      if (!rule.helper) continue;
      int num_outer = 0;
      for (const Site& site : sites[r]) num_outer += out_.alternatives[site.alt].rule != int32_t(r);
      bool self_loops_ok = true;
      for (const Site& site : sites[r]) {
        if (out_.alternatives[site.alt].rule == int32_t(r) && site.dot != 0) self_loops_ok = false;
      }
      if (num_outer == 1 && self_loops_ok) rule.continuations = sites[r];
    }
    // end_rule: follow each helper's outer continuation to a rule without one; every rule on
    // the way shares the end, so each is walked once (a repetition's chain of n helpers would
    // otherwise cost n^2).
    const size_t n = out_.rules.size();
    std::vector<int32_t> outer(n, -1), path;
    for (size_t r = 0; r < n; ++r)
      for (const Site& site : out_.rules[r].continuations)
        if (out_.alternatives[site.alt].rule != int32_t(r)) outer[r] = out_.alternatives[site.alt].rule;
    for (size_t r = 0; r < n; ++r) {
      path.clear();
      int32_t current = int32_t(r);
      while (out_.rules[current].end_rule < 0 && outer[current] >= 0 && path.size() <= n) {
        path.push_back(current);
        current = outer[current];
      }
      const int32_t end = out_.rules[current].end_rule >= 0 ? out_.rules[current].end_rule : current;
      out_.rules[current].end_rule = end;
      for (int32_t p : path) out_.rules[p].end_rule = end;
    }
  }

  // A repetition family whose child can take no bytes is no family (ByteRule::repeat_family).
  void keep_byte_consuming_families() {
    for (ByteRule& rule : out_.rules) {
      if (rule.repeat_family < 0) continue;
      const Alternative& alt = out_.alternatives[rule.alternatives[1]];  // child opt_{k-1}
      const int32_t child_end = alt.end - (rule.repeat_left > 1 ? 1 : 0);
      bool takes_bytes = false;
      for (int32_t i = alt.begin; i < child_end; ++i) {
        const Element& el = out_.elements[i];
        takes_bytes = takes_bytes || el.kind == ElementKind::kByte || el.kind == ElementKind::kClass ||
                      (el.kind == ElementKind::kRule && !out_.rules[el.value].nullable);
      }
      if (!takes_bytes) {
        rule.repeat_family = -1;
        rule.repeat_left = 0;
      }
    }
  }

  void compute_nullable() {
    bool changed = true;
    while (changed) {
      changed = false;
      for (ByteRule& rule : out_.rules) {
        if (rule.nullable) continue;
        for (int32_t a : rule.alternatives) {
          const Alternative& alt = out_.alternatives[a];
          bool all = true;
          for (int32_t i = alt.begin; i < alt.end && all; ++i) {
            const Element& el = out_.elements[i];
            all = el.kind == ElementKind::kClassStar ||
                  (el.kind == ElementKind::kRule && out_.rules[el.value].nullable);
          }
          if (all) {
            rule.nullable = true;
            changed = true;
            break;
          }
        }
      }
    }
  }

  const Grammar& g_;
  ByteGrammar out_;
};

// Lowering's counts, expression by expression (memoized: expressions may be shared), following
// Lowering::lower_into (`inline_size`) and Lowering::lower_rule_body (`body_size`).
class SizeCounter {
 public:
  explicit SizeCounter(const Grammar& g) : g_(g), inline_(g.exprs.size()), body_(g.exprs.size()) {}

  LoweredSize total() {
    LoweredSize size{int64_t(g_.rules.size()), 0};
    for (const Rule& rule : g_.rules) {
      if (rule.body >= 0) size = add(size, body_size(rule.body));
      if (rule.lookahead >= 0) size = add(size, inline_size(rule.lookahead));
    }
    return size;
  }

 private:
  static constexpr int64_t kCap = int64_t(1) << 62;
  static int64_t cap(int64_t v) { return v > kCap ? kCap : v; }
  static LoweredSize add(LoweredSize a, LoweredSize b) {
    return {cap(a.rules + b.rules), cap(a.elements + b.elements)};
  }
  static LoweredSize times(LoweredSize a, int64_t n) {
    auto mul = [n](int64_t v) { return v != 0 && n > kCap / v ? kCap : cap(v * n); };
    return {mul(a.rules), mul(a.elements)};
  }

  LoweredSize body_size(int32_t expr) {
    if (body_[expr]) return *body_[expr];
    const Expr& e = g_.exprs[expr];
    LoweredSize size;
    if (e.kind == ExprKind::kChoice) {
      for (int32_t child : e.children) size = add(size, body_size(child));
    } else {
      size = inline_size(expr);
    }
    return *(body_[expr] = size);
  }

  LoweredSize inline_size(int32_t expr) {
    if (inline_[expr]) return *inline_[expr];
    const Expr& e = g_.exprs[expr];
    LoweredSize size;
    switch (e.kind) {
      case ExprKind::kEmpty: break;
      case ExprKind::kBytes: size.elements = int64_t(e.bytes.size()); break;
      case ExprKind::kCharClass:
      case ExprKind::kRuleRef: size.elements = 1; break;
      case ExprKind::kSequence:
        for (int32_t child : e.children) size = add(size, inline_size(child));
        break;
      case ExprKind::kChoice: size = add({1, 1}, body_size(expr)); break;  // a helper rule and its reference
      case ExprKind::kRepeat: size = repeat_size(e); break;
    }
    return *(inline_[expr] = size);
  }

  LoweredSize repeat_size(const Expr& e) {
    const bool class_child = g_.exprs[e.children[0]].kind == ExprKind::kCharClass;
    if (class_child && e.min == 0 && e.max == -1) return {0, 1};  // a class star
    const LoweredSize copy = inline_size(e.children[0]);
    LoweredSize size = times(copy, e.min);
    if (e.max == -1) {
      // A class star, or star ::= "" | star child and its reference.
      return add(size, class_child ? LoweredSize{0, 1} : add(copy, {1, 2}));
    }
    // opt_k ::= "" | child opt_{k-1}, k = 1..max-min, and a reference to the last.
    const int64_t num_optional = e.max - e.min;
    if (num_optional == 0) return size;
    return add(size, times(add(copy, {1, 1}), num_optional));
  }

  const Grammar& g_;
  std::vector<std::optional<LoweredSize>> inline_;
  std::vector<std::optional<LoweredSize>> body_;
};

}  // namespace

LoweredSize ByteGrammar::lowered_size(const Grammar& grammar) { return SizeCounter(grammar).total(); }

ByteGrammar ByteGrammar::lower(const Grammar& grammar) { return Lowering(grammar).run(); }

}  // namespace brisk::grammar
