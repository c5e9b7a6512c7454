// ember::data, as torch::data: datasets, transforms, samplers and the data loader.
#pragma once
#include "ember/data/chunk.h"
#include "ember/data/dataloader.h"
#include "ember/data/datasets.h"
#include "ember/data/example.h"
#include "ember/data/image_datasets.h"
#include "ember/data/samplers.h"
#include "ember/data/transforms.h"
