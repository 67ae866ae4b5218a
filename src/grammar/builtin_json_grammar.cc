#include <string>

#include "grammar/ebnf_parser.h"
#include "grammar/json_schema_converter.h"

namespace brisk::grammar {

// xgrammar's builtin JSON grammar (an object or array at the top level), its rules split by
// what follows each value so that lookaheads decide most tokens from the cache.
Grammar builtin_json_grammar() {
  std::string text = R"(root ::= "{" WS members_and_embrace | "[" WS elements_or_embrace
value_non_str ::= ("{" WS members_and_embrace | "[" WS elements_or_embrace | "0" fraction exponent | [1-9] [0-9]* fraction exponent | "-" [0-9] fraction exponent | "-" [1-9] [0-9]* fraction exponent | "true" | "false" | "null") (= WS member_suffix_suffix)
members_and_embrace ::= ("\"" characters_and_colon WS members_suffix | "}") (= [ \n\r\t,}\]])
members_suffix ::= (value_non_str WS member_suffix_suffix | "\"" characters_and_embrace | "\"" characters_and_comma WS "\"" characters_and_colon WS members_suffix) (= [ \n\r\t,}\]])
member_suffix_suffix ::= ("}" | "," WS "\"" characters_and_colon WS members_suffix) (= [ \n\r\t,}\]])
elements_or_embrace ::= "{" WS members_and_embrace elements_rest WS "]" | "[" WS elements_or_embrace elements_rest WS "]" | "\"" characters_item elements_rest WS "]" | "0" fraction exponent elements_rest WS "]" | [1-9] [0-9]* fraction exponent elements_rest WS "]" | "-" "0" fraction exponent elements_rest WS "]" | "-" [1-9] [0-9]* fraction exponent elements_rest WS "]" | "true" elements_rest WS "]" | "false" elements_rest WS "]" | "null" elements_rest WS "]" | "]"
elements ::= "{" WS members_and_embrace elements_rest | "[" WS elements_or_embrace elements_rest | "\"" characters_item elements_rest | "0" fraction exponent elements_rest | [1-9] [0-9]* fraction exponent elements_rest | "-" [0-9] fraction exponent elements_rest | "-" [1-9] [0-9]* fraction exponent elements_rest | "true" elements_rest | "false" elements_rest | "null" elements_rest
elements_rest ::= "" | WS "," WS elements
characters_and_colon ::= ("\"" WS ":" | [^\"\\\0-\x1f] characters_and_colon | "\\" escape characters_and_colon) (= WS [\"{[0-9tfn\-])
characters_and_comma ::= ("\"" WS "," | [^\"\\\0-\x1f] characters_and_comma | "\\" escape characters_and_comma) (= WS "\"")
characters_and_embrace ::= ("\"" WS "}" | [^\"\\\0-\x1f] characters_and_embrace | "\\" escape characters_and_embrace) (= WS [},])
characters_item ::= ("\"" | [^\"\\\0-\x1f] characters_item | "\\" escape characters_item) (= WS [,\]])
escape ::= ["\\/bfnrt] | "u" [A-Fa-f0-9] [A-Fa-f0-9] [A-Fa-f0-9] [A-Fa-f0-9]
fraction ::= "" | "." [0-9] [0-9]*
exponent ::= "" | "e" sign [0-9] [0-9]* | "E" sign [0-9] [0-9]*
sign ::= "" | "+" | "-"
)";
  for (size_t at = text.find("WS"); at != std::string::npos; at = text.find("WS", at)) {
    text.replace(at, 2, "[ \\n\\r\\t]*");
  }
  return parse_ebnf(text);
}

}  // namespace brisk::grammar
