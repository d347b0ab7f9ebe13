"""emu translator: source rewrites keep lines and catch unsupported features."""

from __future__ import annotations

import pytest

from harness.backends.emu.translate import blank_comments_and_strings, translate
from harness.errors import UnsupportedFeature


def body(text: str) -> str:
    out = translate(text, "k.cu")
    first, rest = out.split("\n", 1)
    assert first == '#line 1 "k.cu"'
    return rest


def test_launch_rewrite_keeps_line_count_and_evaluates_args_once() -> None:
    src = "void f(float* p, int n) {\n  k<<<dim3(2, 2),\n     128, 0, 0>>>(p,\n n);\n  g();\n}\n"
    out = body(src)
    assert out.count("\n") == src.count("\n")
    assert out.splitlines()[4] == "  g();"
    assert '::harness_emu::Launcher(__FILE__, __LINE__, "k", dim3(2, 2),' in out
    assert "[&](auto&&... __emu_a) { k(__emu_a...); }, p," in out


def test_template_and_qualified_kernel_names() -> None:
    out = body("void f() { ns::scan<float, 4><<<1, 32>>>(); a::b<T<2>><<<g, b, s>>>(x); }\n")
    assert '"ns::scan<float, 4>", 1, 32)([&](auto&&... __emu_a) { ns::scan<float, 4>(__emu_a...); })' in out
    assert '"a::b<T<2>>", g, b, s)' in out


def test_extern_shared_becomes_dynamic_buffer() -> None:
    out = body("__global__ void k() {\n  extern __shared__ __align__(16) float smem[];\n  static __shared__ int x;\n}\n")
    assert "float* const smem = reinterpret_cast<float*>(::harness_emu::dyn_smem);" in out
    assert "__shared__ int x;" in out and "static __shared__" not in out


def test_comments_and_strings_are_ignored() -> None:
    src = '// asm("nop") k<<<1,1>>>()\nconst char* s = "asm(x) <<<";\n/* wmma:: */\n'
    assert body(src) == src
    blank = blank_comments_and_strings(src)
    assert len(blank) == len(src) and "asm" not in blank and blank.count("\n") == src.count("\n")


@pytest.mark.parametrize("code, feature, line", [
    ("__global__ void k() {\n asm volatile(\"trap;\");\n}", "inline PTX assembly (asm): trap", 2),
    # PTX beyond the instructions emu executes is refused, naming the instruction
    ("__device__ unsigned f() {\n unsigned l; asm(\"mov.u32 %0, %%laneid;\" : \"=r\"(l)); return l;\n}", "inline PTX assembly (asm): mov.u32", 2),
    ("__device__ float f(float x) {\n float r; asm(\"ex2.approx.f16 %0, %1;\" : \"=f\"(r) : \"f\"(x)); return r;\n}", "inline PTX assembly (asm): ex2.approx.f16", 2),
    ("__device__ float f(float x) {\n float r;\n asm(\"ex2.approx.f32 %0, %1; add.f32 %0, %0, 1.0;\" : \"=f\"(r) : \"f\"(x)); return r;\n}", "inline PTX assembly (asm): add.f32", 3),
    ("__device__ void f(float* d, unsigned* a) {\n asm(\"mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};\"\n"
     " : \"+r\"(a[0]), \"+r\"(a[1]) : \"r\"(a[2]), \"r\"(a[3]), \"r\"(a[4]), \"r\"(a[5]), \"r\"(a[6]), \"r\"(a[7]));\n}",
     "inline PTX assembly (asm): mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", 2),
    ("__device__ void f(unsigned a) {\n asm(\"ldmatrix.sync.aligned.m8n8.x4.shared.b8 {%0}, [%0];\" :: \"r\"(a));\n}",
     "inline PTX assembly (asm): ldmatrix.sync.aligned.m8n8.x4.shared.b8", 2),
    ("#define STR \"nop;\"\n__device__ void f() {\n asm(STR);\n}", "inline PTX assembly (asm)", 3),
    ("#include <mma.h>\nusing namespace nvcuda;\n\nwmma::fragment<wmma::accumulator, 16, 16, 16, int> f;", "wmma integer (int8/int32) fragments", 4),
    ("#include <mma.h>\nusing namespace nvcuda::wmma;\nfragment<matrix_a, 8, 8, 32, experimental::precision::u4, row_major> f;",
     "tensor-core intrinsics beyond wmma half/bf16/tf32/double (__hmma, sub-byte or 1-bit wmma)", 3),
    ("__global__ void k() {\n\n auto g = cooperative_groups::this_grid(); g.sync();\n}", "cooperative-groups grid synchronization (this_grid/grid.sync)", 3),
    ("__global__ void child() {}\n__global__ void parent() {\n child<<<1, 1>>>();\n}", "dynamic parallelism (kernel launch in device code)", 3),
    ("texture<float, 1> t;", "textures/surfaces", 1),
    ("__global__ void k(cudaTextureObject_t t) {}", "textures/surfaces", 1),
    ("#include <cub/cub.cuh>", "CUB/Thrust/libcu++/CUTLASS headers", 1),
])
def test_unsupported_features(code: str, feature: str, line: int) -> None:
    with pytest.raises(UnsupportedFeature) as info:
        translate(code, "k.cu")
    assert str(info.value) == f"not supported on emu: {feature} at k.cu:{line}"


def test_host_launch_next_to_device_function_is_fine() -> None:
    src = "__device__ int sq(int x) { return x * x; }\n__global__ void k() {}\nvoid h() { k<<<1, 1>>>(); }\n"
    assert "Launcher" in body(src)


def test_special_function_ptx_becomes_the_host_function_on_its_line() -> None:
    """One MUFU instruction as inline PTX (how fast kernels write ex2) runs on
    emu through the accurate host function, like __expf; lines stay put."""
    src = (
        "__device__ float f(float x) {\n"
        '  float r; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x * (2.f)));\n'
        '  float s; asm volatile ("rcp.approx.f32 %0, %1;"\n     : "=f"(s) : "f"(r));\n'
        '  // asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x));\n'
        "  return s;\n}\n"
    )
    out = body(src)
    assert "(r) = exp2f(x * (2.f));" in out
    assert "(s) = 1.0f / (r)" in out
    assert '// asm("ex2.approx.f32' in out  # comments are left alone
    assert out.count("\n") == src.count("\n")


def test_tensor_core_ptx_becomes_runtime_calls_on_its_first_line() -> None:
    """mma.sync with "+f" operands, ldmatrix in a #define (continuation lines
    kept), cp.async with an "n" operand: one lambda each, lines kept."""
    src = (
        "#define LDM(r, a) asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\" \\\n"
        "    : \"=r\"(r[0]), \\\n \"=r\"(r[1]) : \"r\"(a))\n"
        "__device__ void f(float* d, unsigned* a, unsigned s, const float* g) {\n"
        "  asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 \"\n"
        "               \"{%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\\n\"\n"
        "               : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3]) : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]));\n"
        "  asm volatile(\"cp.async.cg.shared.global [%0], [%1], %2;\\n\" :: \"r\"(s), \"l\"(g), \"n\"(16));\n"
        "  asm volatile(\"cp.async.wait_group %0;\" :: \"n\"(1)); LDM(a, s);\n"
        "}\n"
    )
    out = body(src)
    lines = out.split("\n")
    assert len(lines) == len(src.split("\n"))
    assert lines[0].startswith("#define LDM(r, a) [&]() { { uint32_t __emu_r[4]; ::harness_emu::ptx_ldmatrix(2, true, ")
    assert lines[0].endswith("\\") and lines[1] == "\\" and lines[2] == ""
    assert "::harness_emu::ptx_mma(::harness_emu::MmaType::BF16, 8, __emu_a, __emu_b, __emu_c, __emu_d" in lines[4]
    assert "__emu_b[2] = {::harness_emu::reg_bits(a[2])}" in lines[4]
    assert "float __emu_c[4] = {::harness_emu::from_bits<float>(::harness_emu::reg_bits(d[0]))" in lines[4]
    assert "::harness_emu::set_reg(d[3], ::harness_emu::reg_bits(__emu_d[3]));" in lines[4]
    assert "::harness_emu::ptx_cp_async(true, ::harness_emu::addr_operand(s), ::harness_emu::addr_operand(g), " \
           "(long long)(16), (long long)(16), __FILE__, __LINE__);" in lines[7]
    assert '::harness_emu::async_wait((long long)(1), "cp.async.wait_group");' in lines[8]


def test_noinline_qualifier_is_rewritten_and_the_gnu_spelling_left_to_gxx() -> None:
    """nvcc's `__noinline__` keyword becomes the attribute in the solution's own
    code only; inside an attribute it is GCC's spelling and stays (a header
    macro would also rewrite libstdc++'s `__attribute__((__noinline__))`)."""
    src = (
        "#define MY_NOINLINE __noinline__\n"
        "__device__ __noinline__ float f(float x) { return x; }\n"
        "__attribute__((aligned(4), __noinline__)) static int g() { return 0; }\n"
        "[[gnu::__noinline__]] static int h() { return 0; }\n"
        "// __noinline__ in a comment\n"
    )
    out = body(src).splitlines()
    assert out[0] == "#define MY_NOINLINE __attribute__((noinline))"
    assert out[1] == "__device__ __attribute__((noinline)) float f(float x) { return x; }"
    assert out[2:] == src.splitlines()[2:]
