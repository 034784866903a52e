// The neuronc loader: load a compiled model (.nca) and run it on the NeuronCore model.
//   auto model = neuronc::Model::load("model.nca");
//   neuronc::Session session(*model, {.target_cores = 1});
//   auto out = session.run({{"x", neuronc::TensorView(ptr, neuronc::DType::f32, {1, 3, 224,
//   224})}}); out->at("logits"); session.stats();
#pragma once

#include "neuronc/model.h"
#include "neuronc/session.h"
#include "neuronc/status.h"
#include "neuronc/tensor.h"
