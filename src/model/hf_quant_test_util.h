// Helpers shared by the Hugging Face quantized-checkpoint tests (hf_quant_test.cc,
// hf_int8_test.cc): a TensorStore of packed tensors seen through HfQuantTensorSource under a
// given quantization_config.
//
//   auto source = Repack(store, quantization_config_json);   // StatusOr
//   EXPECT_NE(ErrorOf(store, json).find("g_idx"), std::string::npos);
#pragma once

#include <memory>
#include <string>

#include "common/json.h"
#include "model/hf_quant_config.h"
#include "model/hf_quant_source.h"
#include "model/tensor_source.h"

namespace pagellm::hf_quant_testing {

inline StatusOr<std::unique_ptr<HfQuantTensorSource>> Repack(const TensorStore& store,
                                                            const Json& quantization_config) {
  PAGELLM_ASSIGN_OR_RETURN(HfQuantConfig c, ParseHfQuantConfig(Json{{"quantization_config", quantization_config}}));
  return HfQuantTensorSource::Create(store, c);
}

// The repacking's error message, or "OK".
inline std::string ErrorOf(const TensorStore& store, const Json& quantization_config) {
  auto source = Repack(store, quantization_config);
  return source.ok() ? std::string("OK") : source.status().message();
}

}  // namespace pagellm::hf_quant_testing
