// The ApiError a call throws (a test failure when it throws none).
#pragma once

#include <gtest/gtest.h>

#include "server/api_error.h"

namespace brisk::server {

template <typename Fn>
ApiError catch_api_error(Fn fn) {
  try {
    fn();
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "no ApiError thrown";
  return ApiError(0, "", "", "", "");
}

}  // namespace brisk::server
