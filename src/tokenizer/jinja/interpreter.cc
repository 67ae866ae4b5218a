#include "tokenizer/jinja/interpreter.h"

#include "core/error.h"
#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/py_string.h"

namespace brisk::jinja {
namespace {

// Deep enough for recursive schema macros, shallow enough to stop runaway recursion early.
constexpr int kMaxCallDepth = 256;

bool expr_references(const Expr* expr, const std::string& name) {
  if (!expr) return false;
  if (expr->kind == ExprKind::kName && expr->name == name) return true;
  for (const ExprPtr& e : expr->args)
    if (expr_references(e.get(), name)) return true;
  for (const auto& [_, e] : expr->kwargs)
    if (expr_references(e.get(), name)) return true;
  return false;
}

// Whether a macro body mentions `name`: jinja2 accepts extra positional/keyword arguments
// only when the body uses `varargs`/`kwargs`.
bool body_references(const Body& body, const std::string& name) {
  for (const StmtPtr& stmt : body) {
    if (expr_references(stmt->expr.get(), name) || expr_references(stmt->filter.get(), name))
      return true;
    for (const ExprPtr& e : stmt->values)
      if (expr_references(e.get(), name)) return true;
    for (const MacroParam& p : stmt->params)
      if (expr_references(p.default_value.get(), name)) return true;
    for (const auto& [condition, branch] : stmt->branches)
      if (expr_references(condition.get(), name) || body_references(branch, name)) return true;
    if (body_references(stmt->body, name) || body_references(stmt->else_body, name)) return true;
  }
  return false;
}

}  // namespace

Interpreter::Interpreter(const std::string& name, const ValueDict& globals)
    : name_(name), globals_(globals), frame_(std::make_shared<Frame>()) {}

Interpreter::~Interpreter() {
  for (const auto& frame : closures_) frame->vars.clear();
  for (const Value& ns : namespaces_) ns.as_namespace().attrs.items.clear();
}

void Interpreter::fail(const std::string& message) const {
  throw_error(ErrorCode::kInvalidArgument, "{}:{}:{}: {}", name_, loc_.line, loc_.column, message);
}

void Interpreter::check_defined(const Value& v) const {
  if (v.is_undefined()) fail(v.undefined_hint().empty() ? "value is undefined" : v.undefined_hint());
}

std::string Interpreter::render(const Body& body) {
  std::string out;
  exec(body, out);
  return out;
}

std::shared_ptr<Frame> Interpreter::push_frame() {
  auto frame = std::make_shared<Frame>();
  frame->parent = frame_;
  return frame;
}

Value Interpreter::lookup(const std::string& name) const {
  for (const Frame* f = frame_.get(); f; f = f->parent.get()) {
    auto it = f->vars.find(name);
    if (it != f->vars.end()) return it->second;
  }
  if (const Value* v = globals_.find(name)) return *v;
  Value builtin = find_builtin_global(name);
  if (!builtin.is_undefined()) return builtin;
  return Value::undefined(fmt::format("'{}' is undefined", name));
}

void Interpreter::assign(const std::vector<std::string>& targets, const Value& value) {
  if (targets.size() == 1) {
    frame_->vars[targets[0]] = value;
    return;
  }
  ValueList items = iterate(value);
  if (items.size() != targets.size())
    fail(fmt::format("cannot unpack {} values into {} names", items.size(), targets.size()));
  for (size_t i = 0; i < targets.size(); ++i) frame_->vars[targets[i]] = items[i];
}

Interpreter::Flow Interpreter::exec(const Body& body, std::string& out) {
  for (const StmtPtr& stmt : body) {
    Flow flow = exec_stmt(*stmt, out);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec_stmt(const Stmt& stmt, std::string& out) {
  loc_ = stmt.loc;
  switch (stmt.kind) {
    case StmtKind::kText:
      out += stmt.text;
      return Flow::kNormal;
    case StmtKind::kOutput:
      out += eval(*stmt.expr).to_str();
      return Flow::kNormal;
    case StmtKind::kIf:
      for (const auto& [condition, body] : stmt.branches)
        if (!condition || eval(*condition).truthy()) return exec(body, out);
      return Flow::kNormal;
    case StmtKind::kFor:
      return exec_for(stmt, out);
    case StmtKind::kSet:
      exec_set(stmt);
      return Flow::kNormal;
    case StmtKind::kSetBlock: {
      std::string text;
      exec(stmt.body, text);
      Value value(std::move(text));
      if (stmt.expr) value = apply_filter_chain(*stmt.expr, value);
      frame_->vars[stmt.targets[0]] = value;
      return Flow::kNormal;
    }
    case StmtKind::kFilterBlock: {
      std::string text;
      Flow flow = exec(stmt.body, text);
      out += apply_filter_chain(*stmt.expr, Value(std::move(text))).to_str();
      return flow;
    }
    case StmtKind::kMacro:
      frame_->vars[stmt.name] = make_macro(stmt.body, stmt.params, stmt.name);
      return Flow::kNormal;
    case StmtKind::kCallBlock: {
      // `caller()` inside the called macro renders this block's body.
      Value caller = make_macro(stmt.body, stmt.params, "caller");
      const Expr& call_expr = *stmt.expr;
      Value callee = eval(*call_expr.args[0]);
      CallArgs args = eval_args(call_expr, 1);
      args.keyword.emplace_back("caller", caller);
      loc_ = stmt.loc;
      out += call(callee, args).to_str();
      return Flow::kNormal;
    }
    case StmtKind::kWith: {
      std::vector<Value> values;
      for (const ExprPtr& e : stmt.values) values.push_back(eval(*e));
      auto saved = frame_;
      frame_ = push_frame();
      for (size_t i = 0; i < values.size(); ++i) frame_->vars[stmt.targets[i]] = values[i];
      Flow flow = exec(stmt.body, out);
      frame_ = saved;
      return flow;
    }
    case StmtKind::kBreak: return Flow::kBreak;
    case StmtKind::kContinue: return Flow::kContinue;
    case StmtKind::kGeneration: return exec(stmt.body, out);
  }
  return Flow::kNormal;
}

Value Interpreter::apply_filter_chain(const Expr& chain, const Value& input) {
  // Block filters are parsed over a placeholder literal that stands for the rendered body.
  if (chain.kind != ExprKind::kFilter) return input;
  Value target = apply_filter_chain(*chain.args[0], input);
  CallArgs args = eval_args(chain, 1);
  loc_ = chain.loc;
  return apply_filter(chain.name, target, args);
}

void Interpreter::exec_set(const Stmt& stmt) {
  Value value = eval(*stmt.expr);
  if (stmt.target_attr.empty()) {
    assign(stmt.targets, value);
    return;
  }
  Value target = lookup(stmt.targets[0]);
  if (!target.is_namespace())
    fail(fmt::format("cannot assign attribute '{}' on '{}': only a namespace() accepts "
                     "attribute assignment", stmt.target_attr, stmt.targets[0]));
  target.as_namespace().attrs.set(Value(stmt.target_attr), value);
}

Interpreter::Flow Interpreter::exec_for(const Stmt& stmt, std::string& out) {
  ValueList items = iterate(eval(*stmt.expr));
  auto saved = frame_;
  if (stmt.filter) {
    // jinja2 filters first, so loop.length/last/nextitem see only the kept items.
    ValueList kept;
    for (const Value& item : items) {
      frame_ = push_frame();
      assign(stmt.targets, item);
      if (eval(*stmt.filter).truthy()) kept.push_back(item);
      frame_ = saved;
    }
    items = std::move(kept);
  }
  const int64_t length = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < length; ++i) {
    frame_ = push_frame();
    assign(stmt.targets, items[static_cast<size_t>(i)]);
    ValueDict loop;
    loop.items.reserve(12);
    loop.items.emplace_back(Value("index"), Value(i + 1));
    loop.items.emplace_back(Value("index0"), Value(i));
    loop.items.emplace_back(Value("revindex"), Value(length - i));
    loop.items.emplace_back(Value("revindex0"), Value(length - i - 1));
    loop.items.emplace_back(Value("first"), Value(i == 0));
    loop.items.emplace_back(Value("last"), Value(i == length - 1));
    loop.items.emplace_back(Value("length"), Value(length));
    loop.items.emplace_back(Value("depth"), Value(1));
    loop.items.emplace_back(Value("depth0"), Value(0));
    loop.items.emplace_back(Value("previtem"),
                            i > 0 ? items[static_cast<size_t>(i - 1)]
                                  : Value::undefined("there is no previous item"));
    loop.items.emplace_back(Value("nextitem"),
                            i + 1 < length ? items[static_cast<size_t>(i + 1)]
                                           : Value::undefined("there is no next item"));
    loop.items.emplace_back(
        Value("cycle"), Value::callable("loop.cycle", [i](CallArgs& args, Interpreter& interp) {
          if (args.positional.empty()) interp.fail("loop.cycle() needs at least one item");
          return args.positional[static_cast<size_t>(i) % args.positional.size()];
        }));
    frame_->vars["loop"] = Value::dict(std::move(loop));
    Flow flow = exec(stmt.body, out);
    frame_ = saved;
    if (flow == Flow::kBreak) break;
  }
  if (length == 0 && !stmt.else_body.empty()) return exec(stmt.else_body, out);
  return Flow::kNormal;
}

Value Interpreter::make_macro(const Body& body, const std::vector<MacroParam>& params,
                              const std::string& name) {
  // Macros close over the scope they are defined in (jinja2 resolves free names there).
  std::shared_ptr<Frame> closure = frame_;
  closures_.push_back(closure);
  const bool takes_varargs = body_references(body, "varargs");
  const bool takes_kwargs = body_references(body, "kwargs");
  return Value::callable(name, [closure, &body, &params, name, takes_varargs, takes_kwargs](
                                   CallArgs& args, Interpreter& interp) {
    if (args.positional.size() > params.size() && !takes_varargs)
      interp.fail(fmt::format("macro '{}' takes not more than {} argument(s)", name, params.size()));
    if (++interp.call_depth_ > kMaxCallDepth)
      interp.fail(fmt::format("macro '{}' recursed deeper than {} calls", name, kMaxCallDepth));
    auto frame = std::make_shared<Frame>();
    frame->parent = closure;
    ValueList varargs;
    for (size_t i = 0; i < args.positional.size(); ++i) {
      if (i < params.size()) frame->vars[params[i].name] = args.positional[i];
      else varargs.push_back(args.positional[i]);
    }
    ValueDict kwargs;
    for (auto& [key, value] : args.keyword) {
      size_t index = 0;
      while (index < params.size() && params[index].name != key) ++index;
      bool is_param = index < params.size();
      if (key == "caller" || (is_param && index >= args.positional.size())) {
        frame->vars[key] = value;
      } else if (!is_param && takes_kwargs) {
        kwargs.items.emplace_back(Value(key), value);
      } else {
        interp.fail(fmt::format("macro '{}' takes no keyword argument '{}'", name, key));
      }
    }
    auto saved_frame = interp.frame_;
    SourceLoc saved_loc = interp.loc_;
    interp.frame_ = frame;
    for (const MacroParam& p : params) {
      if (frame->vars.count(p.name)) continue;
      frame->vars[p.name] = p.default_value
                                ? interp.eval(*p.default_value)
                                : Value::undefined(fmt::format("'{}' is undefined", p.name));
    }
    frame->vars["varargs"] = Value::tuple(std::move(varargs));
    frame->vars["kwargs"] = Value::dict(std::move(kwargs));
    std::string out;
    interp.exec(body, out);
    interp.frame_ = saved_frame;
    interp.loc_ = saved_loc;
    --interp.call_depth_;
    return Value(std::move(out));
  });
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  check_defined(callee);
  if (!callee.is_callable()) fail(fmt::format("'{}' object is not callable", callee.type_name()));
  return callee.as_callable().fn(args, *this);
}

Value Interpreter::apply_filter(const std::string& name, const Value& target, CallArgs& args) {
  FilterFn fn = find_filter(name);
  if (!fn) fail(fmt::format("unknown filter '{}'", name));
  return fn(*this, target, args);
}

bool Interpreter::apply_test(const std::string& name, const Value& target, CallArgs& args) {
  TestFn fn = find_test(name);
  if (!fn) fail(fmt::format("unknown test '{}'", name));
  return fn(*this, target, args);
}

ValueList Interpreter::iterate(const Value& v) {
  switch (v.type()) {
    case Value::Type::kUndefined: return {};
    case Value::Type::kList: case Value::Type::kTuple: return v.as_list();
    case Value::Type::kDict: {
      ValueList keys;
      for (const auto& [k, _] : v.as_dict().items) keys.push_back(k);
      return keys;
    }
    case Value::Type::kString: {
      ValueList chars;
      for (char32_t cp : utf8_decode(v.as_string())) chars.emplace_back(utf8_encode(std::u32string(1, cp)));
      return chars;
    }
    default:
      fail(fmt::format("'{}' object is not iterable", v.type_name()));
  }
}

}  // namespace brisk::jinja
