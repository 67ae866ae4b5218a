// Picks the W4A16 tuning table for a GPU (w4a16_tuning.h).
#include "backend/cuda/tuning/w4a16_tuning.h"

#include "backend/cuda/runtime/device.h"

namespace brisk::cuda {

const W4A16Tuning& w4a16_tuning_for(std::string_view gpu, int num_sms) {
  // Measured tables by device name, then by SM count (another name of the same part); the H200's
  // otherwise (its rules are the best guess for any Hopper part).
  const W4A16Tuning* const tables[] = {&kW4A16TuningH200};
  for (const W4A16Tuning* t : tables)
    if (gpu == t->gpu) return *t;
  for (const W4A16Tuning* t : tables)
    if (num_sms == t->num_sms) return *t;
  return kW4A16TuningH200;
}

const W4A16Tuning& w4a16_tuning() {
  static const W4A16Tuning& tuning = w4a16_tuning_for(select_device().name, select_device().num_sms);
  return tuning;
}

}  // namespace brisk::cuda
