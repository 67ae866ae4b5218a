// Built as part of a library that links brisk_model: the engine is a layer above the model, so
// its headers are not on the include path and this must not compile.
#include "engine/scheduler.h"
