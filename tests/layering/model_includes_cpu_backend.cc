// Built as part of a library that links brisk_model: the model reaches the backends through the
// op interface (backend/backend.h) only, so the CPU backend's headers are not on the include
// path and this must not compile.
#include "backend/cpu/cpu_backend.h"
