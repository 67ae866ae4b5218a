#include "tokenizer/jinja/json_dump.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "tokenizer/jinja/py_string.h"

namespace brisk::jinja {
namespace {

void dump_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (char32_t cp : utf8_decode(s)) {
    switch (cp) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (cp < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<uint32_t>(cp));
        } else if (ensure_ascii && cp > 0x7F) {
          if (cp >= 0x10000) {
            char32_t v = cp - 0x10000;
            out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
          } else {
            out += fmt::format("\\u{:04x}", static_cast<uint32_t>(cp));
          }
        } else {
          utf8_append(out, cp);
        }
    }
  }
  out += '"';
}

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& options) : options_(options) {
    if (options.separators) {
      item_sep_ = options.separators->first;
      key_sep_ = options.separators->second;
    } else {
      // Python drops the space after ',' when indenting, to avoid trailing spaces.
      item_sep_ = options.indent ? "," : ", ";
      key_sep_ = ": ";
    }
  }

  void dump(std::string& out, const Value& v, int depth) {
    switch (v.type()) {
      case Value::Type::kNone: out += "null"; return;
      case Value::Type::kBool: out += v.as_bool() ? "true" : "false"; return;
      case Value::Type::kInt: out += std::to_string(v.as_int()); return;
      case Value::Type::kFloat: {
        double d = v.as_double();
        if (std::isnan(d)) out += "NaN";
        else if (std::isinf(d)) out += d > 0 ? "Infinity" : "-Infinity";
        else out += format_python_float(d);
        return;
      }
      case Value::Type::kString: dump_string(out, v.as_string(), options_.ensure_ascii); return;
      case Value::Type::kList: case Value::Type::kTuple: {
        const ValueList& items = v.as_list();
        if (items.empty()) {
          out += "[]";
          return;
        }
        out += '[';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) out += item_sep_;
          newline(out, depth + 1);
          dump(out, items[i], depth + 1);
        }
        newline(out, depth);
        out += ']';
        return;
      }
      case Value::Type::kDict: {
        std::vector<const std::pair<Value, Value>*> items;
        for (const auto& item : v.as_dict().items) items.push_back(&item);
        if (items.empty()) {
          out += "{}";
          return;
        }
        if (options_.sort_keys)
          std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) {
            return a->first.to_str() < b->first.to_str();
          });
        out += '{';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) out += item_sep_;
          newline(out, depth + 1);
          dump_key(out, items[i]->first);
          out += key_sep_;
          dump(out, items[i]->second, depth + 1);
        }
        newline(out, depth);
        out += '}';
        return;
      }
      default:
        throw_error(ErrorCode::kInvalidArgument, "Object of type {} is not JSON serializable",
                    v.type_name());
    }
  }

 private:
  void newline(std::string& out, int depth) {
    if (!options_.indent) return;
    out += '\n';
    for (int i = 0; i < depth; ++i) out += *options_.indent;
  }

  // Python converts bool/int/float/None keys to their JSON text; other types are errors.
  void dump_key(std::string& out, const Value& key) {
    if (key.is_string()) return dump_string(out, key.as_string(), options_.ensure_ascii);
    std::string text;
    if (key.is_none()) text = "null";
    else if (key.is_bool()) text = key.as_bool() ? "true" : "false";
    else if (key.is_int() || key.is_float()) dump(text, key, 0);
    else
      throw_error(ErrorCode::kInvalidArgument,
                  "keys must be str, int, float, bool or None, not {}", key.type_name());
    dump_string(out, text, options_.ensure_ascii);
  }

  const JsonDumpOptions& options_;
  std::string item_sep_;
  std::string key_sep_;
};

}  // namespace

std::string json_dump(const Value& value, const JsonDumpOptions& options) {
  std::string out;
  Dumper(options).dump(out, value, 0);
  return out;
}

}  // namespace brisk::jinja
