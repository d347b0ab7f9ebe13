// harness emu: nvcuda::wmma on the CPU (emu_wmma.h)
#pragma once
#include "emu_wmma.h"
