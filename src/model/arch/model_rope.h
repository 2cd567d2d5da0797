// MakeRopeParams: the RoPE table settings a ModelConfig implies (theta, partial rotary
// dims, scaling), shared by QwenModel and HybridModel.
//
//   PAGELLM_ASSIGN_OR_RETURN(RopeTable rope, BuildRopeTable(MakeRopeParams(config)));
#pragma once

#include "backend/rope_table.h"
#include "model/config.h"

namespace pagellm {

// rotary_dim = head_dim * partial_rotary_factor; table rows cover max_position_embeddings
// (and original_max * factor for scaled RoPE).
RopeParams MakeRopeParams(const ModelConfig& config);

}  // namespace pagellm
