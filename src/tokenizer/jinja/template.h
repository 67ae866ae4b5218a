// A parsed Jinja2 template: parse once, render many times (render is const and may run on
// several threads at once).
#pragma once

#include <memory>
#include <string>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/value.h"

namespace brisk::jinja {

class Template {
 public:
  // Throws Error(kInvalidArgument) "name:line:column: what" on a syntax error, an unknown
  // filter or test, or a construct this interpreter does not support.
  static Template parse(std::string source, std::string name = "template");

  // `globals` are the variables the template sees (jinja2's render(**globals)).
  std::string render(const ValueDict& globals) const;
  const std::string& name() const { return name_; }

 private:
  Template(std::string name, std::shared_ptr<const Body> body)
      : name_(std::move(name)), body_(std::move(body)) {}

  std::string name_;
  std::shared_ptr<const Body> body_;  // shared so Template copies stay cheap
};

}  // namespace brisk::jinja
