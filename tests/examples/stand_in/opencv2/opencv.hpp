// What PyTorch's custom-dataset example (examples/custom_dataset.cpp) needs of
// <opencv2/opencv.hpp>: the two OpenCV modules it calls. Debian's opencv.hpp includes every
// OpenCV module, and scripts/setup installs only core, imgproc and imgcodecs; the tests put
// this folder ahead of OpenCV's own headers.
#pragma once

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
