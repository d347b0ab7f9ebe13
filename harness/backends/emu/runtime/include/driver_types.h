// harness emu: provided by the force-included emu_cuda.h
#pragma once
