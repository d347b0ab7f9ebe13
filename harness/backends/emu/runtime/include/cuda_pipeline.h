// harness emu: the pipeline primitives are provided by the force-included
// emu_tensor.h; the nvcuda::experimental::pipeline class is not supported.
#pragma once
