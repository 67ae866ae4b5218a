#include "grammar/json_formats.h"

#include <map>
#include <string>

namespace brisk::grammar {

namespace {

std::map<std::string, std::string, std::less<>> make_formats() {
  std::map<std::string, std::string, std::less<>> f;
  const std::string date = "\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])";
  const std::string time = "([01]\\d|2[0-3]):[0-5]\\d:([0-5]\\d|60)(\\.\\d+)?(Z|[+-]([01]\\d|2[0-3]):[0-5]\\d)";
  f["date"] = date;
  f["time"] = time;
  f["date-time"] = date + "T" + time;
  // RFC 5321 mailbox: dot-string or quoted string, then a domain.
  const std::string atom = "[\\w!#$%&'*+/=?^`{|}~-]+";
  const std::string quoted = "\\\\\"(\\\\[\\x20-\\x7e]|[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e])*\\\\\"";
  const std::string label = "[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?";
  f["email"] = "(" + atom + "(\\." + atom + ")*|" + quoted + ")@" + label + "(\\.[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])*";
  const std::string byte = "(25[0-5]|2[0-4]\\d|[01]?\\d?\\d)";
  f["ipv4"] = "(" + byte + "\\.){3}" + byte;
  const std::string h = "[0-9a-fA-F]{1,4}";
  const std::string v4 = "((25[0-5]|(2[0-4]|1?[0-9])?[0-9])\\.){3}(25[0-5]|(2[0-4]|1?[0-9])?[0-9])";
  f["ipv6"] = "((" + h + ":){7}" + h + "|(" + h + ":){1,7}:|(" + h + ":){1,6}:" + h + "|(" + h + ":){1,5}(:" + h +
              "){1,2}|(" + h + ":){1,4}(:" + h + "){1,3}|(" + h + ":){1,3}(:" + h + "){1,4}|(" + h + ":){1,2}(:" +
              h + "){1,5}|" + h + ":(:" + h + "){1,6}|:((:" + h + "){1,7}|:)|::(ffff(:0{1,4})?:)?" + v4 + "|(" + h +
              ":){1,4}:" + v4 + ")";
  f["hostname"] = "[a-z0-9]([a-z0-9-]*[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*";
  f["uuid"] = "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}";
  f["duration"] =
      "P((\\d+D|\\d+M(\\d+D)?|\\d+Y(\\d+M(\\d+D)?)?)(T(\\d+S|\\d+M(\\d+S)?|\\d+H(\\d+M(\\d+S)?)?))?|"
      "T(\\d+S|\\d+M(\\d+S)?|\\d+H(\\d+M(\\d+S)?)?)|\\d+W)";
  // RFC 3986 URI.
  const std::string pct = "%[0-9A-Fa-f][0-9A-Fa-f]";
  const std::string pchar = "([\\w.~!$&'()*+,;=:@-]|" + pct + ")";
  const std::string qf = "([\\w.~!$&'()*+,;=:@/?-]|" + pct + ")*";
  const std::string userinfo = "([\\w.~!$&'()*+,;=:-]|" + pct + ")*";
  const std::string host = "([\\w.~!$&'()*+,;=-]|" + pct + ")*";
  const std::string authority = "(" + userinfo + "@)?" + host + "(:\\d*)?";
  f["uri"] = "[a-zA-Z][a-zA-Z+.-]*:(//" + authority + "(/" + pchar + "*)*|/?(" + pchar + "+(/" + pchar + "*)*)?)(\\?" +
             qf + ")?(#" + qf + ")?";
  return f;
}

}  // namespace

const char* json_format_regex(std::string_view format) {
  static const auto formats = make_formats();
  auto it = formats.find(format);
  return it == formats.end() ? nullptr : it->second.c_str();
}

}  // namespace brisk::grammar
