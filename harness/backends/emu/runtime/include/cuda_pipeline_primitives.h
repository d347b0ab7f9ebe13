// harness emu: the pipeline primitives (__pipeline_memcpy_async, __pipeline_commit,
// __pipeline_wait_prior) are provided by the force-included emu_tensor.h.
#pragma once
