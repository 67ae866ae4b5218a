// Backends by name: the one place that knows every backend brisk was built with (the CPU
// reference always, the CUDA backend with BRISK_CUDA).
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"

namespace brisk {

// "cpu", or "cuda" when brisk was built with CUDA; anything else is a clear error.
std::unique_ptr<Backend> make_backend(const std::string& name);

}  // namespace brisk
