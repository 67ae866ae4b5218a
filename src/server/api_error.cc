#include "server/api_error.h"

namespace brisk::server {

nlohmann::json ApiError::body() const {
  auto optional = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  return {{"error", {{"message", what()}, {"type", type_}, {"param", optional(param_)}, {"code", optional(code_)}}}};
}

}  // namespace brisk::server
