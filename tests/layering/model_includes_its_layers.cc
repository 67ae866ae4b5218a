// Built as part of a library that links brisk_model: its own headers and those of the layers
// under it (the backend interface, core) are on the include path.
#include "backend/backend.h"
#include "core/tensor.h"
#include "model/llama_model.h"
