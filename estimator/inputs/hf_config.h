#pragma once
// Hugging Face config.json files as published: the fields that shape a model's cost mapped to
// a model file's (docs/model-families.md, "Hugging Face config.json"), the ones that do not
// ignored by name, what would change the cost and is not modelled refused with one line.
#include <nlohmann/json.hpp>
#include <string>

namespace shardcost {

// A config.json says what it is with model_type (transformers' PretrainedConfig).
bool is_hf_config(const nlohmann::json& j);
// The model file a published config.json describes; InputError naming the field and the fix.
nlohmann::json model_file_of_hf_config(const nlohmann::json& hf, const std::string& where);

}  // namespace shardcost
