#include "grammar/grammar.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"

namespace brisk::grammar {

namespace {

Expr make(ExprKind kind) {
  Expr e;
  e.kind = kind;
  return e;
}

// A code point written inside a string literal or a character class.
std::string escape_codepoint(uint32_t cp, bool in_class) {
  switch (cp) {
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    case '\\': return "\\\\";
    case 0: return "\\0";
    default: break;
  }
  if (!in_class && cp == '"') return "\\\"";
  if (in_class && (cp == ']' || cp == '-' || cp == '^' || cp == '[')) return fmt::format("\\{}", char(cp));
  if (cp < 0x20 || cp == 0x7f) return fmt::format("\\x{:02x}", cp);
  if (cp < 0x80) return std::string(1, char(cp));
  if (cp <= 0xffff) return fmt::format("\\u{:04x}", cp);
  return fmt::format("\\U{:08x}", cp);
}

}  // namespace

std::vector<CharRange> normalize_ranges(std::vector<CharRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const CharRange& a, const CharRange& b) { return a.lo < b.lo; });
  std::vector<CharRange> out;
  for (const CharRange& r : ranges) {
    if (!out.empty() && r.lo <= out.back().hi + 1) {
      out.back().hi = std::max(out.back().hi, r.hi);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

int32_t Grammar::empty() {
  exprs.push_back(make(ExprKind::kEmpty));
  return int32_t(exprs.size()) - 1;
}

int32_t Grammar::bytes(std::string_view text) {
  if (text.empty()) return empty();
  Expr e = make(ExprKind::kBytes);
  e.bytes = std::string(text);
  exprs.push_back(std::move(e));
  return int32_t(exprs.size()) - 1;
}

int32_t Grammar::char_class(std::vector<CharRange> ranges, bool negated) {
  Expr e = make(ExprKind::kCharClass);
  e.ranges = normalize_ranges(std::move(ranges));
  e.negated = negated;
  exprs.push_back(std::move(e));
  return int32_t(exprs.size()) - 1;
}

int32_t Grammar::ref(int32_t rule) {
  Expr e = make(ExprKind::kRuleRef);
  e.rule = rule;
  exprs.push_back(std::move(e));
  return int32_t(exprs.size()) - 1;
}

int32_t Grammar::sequence(std::vector<int32_t> children) {
  if (children.empty()) return empty();
  if (children.size() == 1) return children[0];
  Expr e = make(ExprKind::kSequence);
  e.children = std::move(children);
  exprs.push_back(std::move(e));
  return int32_t(exprs.size()) - 1;
}

int32_t Grammar::choice(std::vector<int32_t> children) {
  BRISK_ASSERT(!children.empty());
  if (children.size() == 1) return children[0];
  Expr e = make(ExprKind::kChoice);
  e.children = std::move(children);
  exprs.push_back(std::move(e));
  return int32_t(exprs.size()) - 1;
}

int32_t Grammar::repeat(int32_t child, int32_t min, int32_t max) {
  BRISK_CHECK(min >= 0 && (max == -1 || max >= min), "grammar: invalid repetition {{{},{}}}", min, max);
  Expr e = make(ExprKind::kRepeat);
  e.children = {child};
  e.min = min;
  e.max = max;
  exprs.push_back(std::move(e));
  return int32_t(exprs.size()) - 1;
}

int32_t Grammar::rule_id(std::string_view name) {
  int32_t id = find_rule(name);
  if (id >= 0) return id;
  rules.push_back(Rule{std::string(name), -1, -1});
  return int32_t(rules.size()) - 1;
}

int32_t Grammar::find_rule(std::string_view name) const {
  for (size_t i = 0; i < rules.size(); ++i) {
    if (rules[i].name == name) return int32_t(i);
  }
  return -1;
}

std::string Grammar::expr_to_string(int32_t id) const {
  const Expr& e = exprs[id];
  switch (e.kind) {
    case ExprKind::kEmpty: return "\"\"";
    case ExprKind::kBytes: {
      std::string out = "\"";
      for (unsigned char c : e.bytes) {
        out += c >= 0x80 ? fmt::format("\\x{:02x}", c) : escape_codepoint(c, false);
      }
      return out + "\"";
    }
    case ExprKind::kCharClass: {
      std::string out = e.negated ? "[^" : "[";
      for (const CharRange& r : e.ranges) {
        out += escape_codepoint(r.lo, true);
        if (r.hi != r.lo) out += "-" + escape_codepoint(r.hi, true);
      }
      return out + "]";
    }
    case ExprKind::kRuleRef: return rules[e.rule].name;
    case ExprKind::kSequence:
    case ExprKind::kChoice: {
      std::string out = "(";
      for (size_t i = 0; i < e.children.size(); ++i) {
        if (i > 0) out += e.kind == ExprKind::kChoice ? " | " : " ";
        out += expr_to_string(e.children[i]);
      }
      return out + ")";
    }
    case ExprKind::kRepeat: {
      std::string child = expr_to_string(e.children[0]);
      if (e.min == 0 && e.max == -1) return child + "*";
      if (e.min == 1 && e.max == -1) return child + "+";
      if (e.min == 0 && e.max == 1) return child + "?";
      if (e.max == -1) return fmt::format("{}{{{},}}", child, e.min);
      if (e.min == e.max) return fmt::format("{}{{{}}}", child, e.min);
      return fmt::format("{}{{{},{}}}", child, e.min, e.max);
    }
  }
  return "";
}

std::string Grammar::to_string() const {
  std::string out;
  for (const Rule& rule : rules) {
    out += rule.name + " ::= " + (rule.body >= 0 ? expr_to_string(rule.body) : "\"\"");
    if (rule.lookahead >= 0) out += " (= " + expr_to_string(rule.lookahead) + ")";
    out += "\n";
  }
  return out;
}

}  // namespace brisk::grammar
