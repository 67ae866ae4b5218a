#include "brisk/status.h"

namespace brisk {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kCorruptData: return "corrupt data";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kOutOfMemory: return "out of memory";
    case ErrorCode::kInternal: return "internal error";
    case ErrorCode::kBackend: return "backend error";
  }
  return "unknown error";
}

}  // namespace brisk
