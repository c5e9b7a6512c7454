// ember::nn::attention: flex_attention with block masks and score mods, and
// scaled_dot_product_attention.
#pragma once
#include "ember/nn/attention/block_mask.h"
#include "ember/nn/attention/flex_attention.h"
#include "ember/nn/attention/kv_cache.h"
#include "ember/nn/attention/mod_math.h"
#include "ember/nn/attention/mods.h"
#include "ember/nn/attention/sdpa.h"
