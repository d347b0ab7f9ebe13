// nvcuda::wmma on emu (what <mma.h> resolves to): half, __nv_bfloat16, tf32
// and double fragments of the standard shapes, loads, stores, fills and
// mma_sync, with the numerics of emu_tensor.h.
//
// Which lane holds which matrix element is unspecified by CUDA; emu uses a
// simple one: slot s = lane * num_elements + i holds element s % (rows*cols)
// of the fragment's matrix in row-major order (fragments whose num_elements
// exceed rows*cols/32, like half matrix_a, hold the matrix 2 or 4 times).
// Kernels that only apply elementwise operations to x[i] after a load are
// portable and behave as on a GPU. Loads and stores are per lane; mma_sync is
// warp-synchronous: all 32 lanes of the warp must reach it.
#pragma once
#include <float.h>
#include <math.h>

#include <type_traits>

#include "emu_tensor.h"

namespace nvcuda {
namespace wmma {

struct row_major;
struct col_major;
struct matrix_a;
struct matrix_b;
struct accumulator;
enum layout_t { mem_row_major, mem_col_major };
namespace precision {
struct tf32;
}

inline float __float_to_tf32(float in) { return harness_emu::round_to_tf32(in); }

namespace detail {
template <class T> struct storage { using type = T; };
template <> struct storage<precision::tf32> { using type = float; };

// Elements per lane (num_elements) of each fragment CUDA defines for these types.
template <class Use, int m, int n, int k, class T> struct count { static constexpr int value = 0; };
#define HARNESS_EMU_FRAG(USE, M, N, K, T, E) \
  template <> struct count<USE, M, N, K, T> { static constexpr int value = E; };
HARNESS_EMU_FRAG(matrix_a, 16, 16, 16, __half, 16) HARNESS_EMU_FRAG(matrix_b, 16, 16, 16, __half, 16)
HARNESS_EMU_FRAG(matrix_a, 32, 8, 16, __half, 16) HARNESS_EMU_FRAG(matrix_b, 32, 8, 16, __half, 16)
HARNESS_EMU_FRAG(matrix_a, 8, 32, 16, __half, 16) HARNESS_EMU_FRAG(matrix_b, 8, 32, 16, __half, 16)
HARNESS_EMU_FRAG(accumulator, 16, 16, 16, __half, 8) HARNESS_EMU_FRAG(accumulator, 16, 16, 16, float, 8)
HARNESS_EMU_FRAG(accumulator, 32, 8, 16, __half, 8) HARNESS_EMU_FRAG(accumulator, 32, 8, 16, float, 8)
HARNESS_EMU_FRAG(accumulator, 8, 32, 16, __half, 8) HARNESS_EMU_FRAG(accumulator, 8, 32, 16, float, 8)
HARNESS_EMU_FRAG(matrix_a, 16, 16, 16, __nv_bfloat16, 8) HARNESS_EMU_FRAG(matrix_b, 16, 16, 16, __nv_bfloat16, 8)
HARNESS_EMU_FRAG(matrix_a, 32, 8, 16, __nv_bfloat16, 16) HARNESS_EMU_FRAG(matrix_b, 32, 8, 16, __nv_bfloat16, 4)
HARNESS_EMU_FRAG(matrix_a, 8, 32, 16, __nv_bfloat16, 4) HARNESS_EMU_FRAG(matrix_b, 8, 32, 16, __nv_bfloat16, 16)
HARNESS_EMU_FRAG(matrix_a, 16, 16, 8, precision::tf32, 4) HARNESS_EMU_FRAG(matrix_b, 16, 16, 8, precision::tf32, 4)
HARNESS_EMU_FRAG(accumulator, 16, 16, 8, float, 8)
HARNESS_EMU_FRAG(matrix_a, 8, 8, 4, double, 1) HARNESS_EMU_FRAG(matrix_b, 8, 8, 4, double, 1)
HARNESS_EMU_FRAG(accumulator, 8, 8, 4, double, 2)
#undef HARNESS_EMU_FRAG

template <class Use, int m, int n, int k> struct dims;
template <int m, int n, int k> struct dims<matrix_a, m, n, k> { static constexpr int rows = m, cols = k; };
template <int m, int n, int k> struct dims<matrix_b, m, n, k> { static constexpr int rows = k, cols = n; };
template <int m, int n, int k> struct dims<accumulator, m, n, k> { static constexpr int rows = m, cols = n; };

// The value a tensor core multiplies (tf32: the upper 19 bits).
template <class T> inline double operand(const typename storage<T>::type& v) {
  if constexpr (std::is_same<T, precision::tf32>::value) return harness_emu::tf32_operand(harness_emu::reg_bits(v));
  else return (double)v;
}

// CUDA documents 256-bit alignment; emu checks 16 bytes, which is all it can
// promise for host buffers and shared arrays, so that correct kernels pass.
inline void check_pointer(const void* p, unsigned ldm, size_t elem, const char* what, const char* file, int line) {
  if (((uintptr_t)p & 15u) != 0 || (ldm * elem) % 16 != 0)
    harness_emu::fail("wmma::%s at %s:%d in kernel %s: the pointer (%p) must be 256-bit aligned and ldm (%u) a "
                      "multiple of 16 bytes (%zu elements)", what, harness_emu::base_name(file), line,
                      harness_emu::g.launch ? harness_emu::g.launch->name : "?", p, ldm, 16 / elem);
}
}  // namespace detail

template <class Use, int m, int n, int k, class T, class Layout = void>
class fragment {
  static constexpr int kCount = detail::count<Use, m, n, k, T>::value;
  static_assert(kCount > 0, "not supported on emu: this wmma fragment (use/shape/type) combination");

 public:
  typedef T element_type;
  typedef typename detail::storage<T>::type storage_element_type;
  enum { num_elements = kCount, num_storage_elements = kCount };
  static constexpr int rows = detail::dims<Use, m, n, k>::rows, cols = detail::dims<Use, m, n, k>::cols;
  storage_element_type x[kCount];

  // Matrix coordinates of x[i] in the calling lane (see the header comment).
  static void coord(int lane, int i, int& r, int& c) {
    int p = (lane * kCount + i) % (rows * cols);
    r = p / cols;
    c = p % cols;
  }
};

template <class Use, int m, int n, int k, class T, class L>
inline void fill_fragment(fragment<Use, m, n, k, T, L>& f, const typename detail::storage<T>::type& v) {
  for (int i = 0; i < f.num_elements; i++) f.x[i] = v;
}

namespace detail {
template <class Frag, class P>
inline void load(Frag& f, const P* p, unsigned ldm, bool row_major, const char* file, int line) {
  check_pointer(p, ldm, sizeof(P), "load_matrix_sync", file, line);
  int lane = harness_emu::current_thread("wmma::load_matrix_sync")->lane;
  for (int i = 0; i < f.num_elements; i++) {
    int r, c;
    Frag::coord(lane, i, r, c);
    f.x[i] = p[row_major ? (size_t)r * ldm + c : (size_t)c * ldm + r];
  }
}
}  // namespace detail

template <class Use, int m, int n, int k, class T, class L,
          class = typename std::enable_if<!std::is_same<Use, accumulator>::value>::type>
inline void load_matrix_sync(fragment<Use, m, n, k, T, L>& f, const typename detail::storage<T>::type* p, unsigned ldm,
                             HARNESS_EMU_SITE) {
  static_assert(std::is_same<L, row_major>::value || std::is_same<L, col_major>::value,
                "a matrix_a/matrix_b fragment needs a row_major or col_major layout");
  detail::load(f, p, ldm, std::is_same<L, row_major>::value, file, line);
}
template <int m, int n, int k, class T>
inline void load_matrix_sync(fragment<accumulator, m, n, k, T>& f, const T* p, unsigned ldm, layout_t layout,
                             HARNESS_EMU_SITE) {
  detail::load(f, p, ldm, layout == mem_row_major, file, line);
}

template <int m, int n, int k, class T>
inline void store_matrix_sync(T* p, const fragment<accumulator, m, n, k, T>& f, unsigned ldm, layout_t layout,
                              HARNESS_EMU_SITE) {
  detail::check_pointer(p, ldm, sizeof(T), "store_matrix_sync", file, line);
  int lane = harness_emu::current_thread("wmma::store_matrix_sync")->lane;
  for (int i = 0; i < f.num_elements; i++) {
    int r, c;
    f.coord(lane, i, r, c);
    p[layout == mem_row_major ? (size_t)r * ldm + c : (size_t)c * ldm + r] = f.x[i];
  }
}

namespace detail {
// Where element (r, c) of a fragment type's matrix sits: the lowest lane that
// holds it and the index there, built once per type from its coord(). A lane
// then reads only the rows of A and columns of B its own outputs need, not
// every lane's whole fragment (84 % of an emu run of an hgemm WMMA kernel).
template <class F, int R, int C>
struct ElementMap {
  uint8_t lane[R][C], index[R][C];
};
template <class F, int R, int C>
inline const ElementMap<F, R, C>& element_map() {
  static const ElementMap<F, R, C> map = [] {
    ElementMap<F, R, C> e{};
    for (int l = 31; l >= 0; l--)  // the lowest lane's copy of a replicated element wins
      for (int i = 0; i < F::num_elements; i++) {
        int r, c;
        F::coord(l, i, r, c);
        e.lane[r][c] = (uint8_t)l;
        e.index[r][c] = (uint8_t)i;
      }
    return e;
  }();
  return map;
}
}  // namespace detail

template <int m, int n, int k, class Ta, class La, class Lb, class Td, class Tc>
inline void mma_sync(fragment<accumulator, m, n, k, Td>& d, const fragment<matrix_a, m, n, k, Ta, La>& a,
                     const fragment<matrix_b, m, n, k, Ta, Lb>& b, const fragment<accumulator, m, n, k, Tc>& c,
                     bool satf = false, HARNESS_EMU_SITE) {
  using namespace harness_emu;
  using FA = fragment<matrix_a, m, n, k, Ta, La>;
  using FB = fragment<matrix_b, m, n, k, Ta, Lb>;
  using FD = fragment<accumulator, m, n, k, Td>;
  const char* what = "wmma::mma_sync";
  WarpSlot* slots = my_warp_slots();
  int lane = current_thread(what)->lane;
  slots[lane].ptr[0] = &a;
  slots[lane].ptr[1] = &b;
  if (!tensor_rendezvous(what, file, line)) return;
  const auto& map_a = detail::element_map<FA, m, k>();
  const auto& map_b = detail::element_map<FB, k, n>();
  double A[m][k], B[k][n];
  bool have_row[m] = {}, have_col[n] = {};
  typename FD::storage_element_type out[FD::num_elements];
  for (int i = 0; i < FD::num_elements; i++) {
    int r, cc;
    FD::coord(lane, i, r, cc);
    if (!have_row[r]) {
      for (int kk = 0; kk < k; kk++)
        A[r][kk] = detail::operand<Ta>(((const FA*)slots[map_a.lane[r][kk]].ptr[0])->x[map_a.index[r][kk]]);
      have_row[r] = true;
    }
    if (!have_col[cc]) {
      for (int kk = 0; kk < k; kk++)
        B[kk][cc] = detail::operand<Ta>(((const FB*)slots[map_b.lane[kk][cc]].ptr[1])->x[map_b.index[kk][cc]]);
      have_col[cc] = true;
    }
    double s = (double)c.x[i];
    if constexpr (std::is_same<Td, double>::value) {
      for (int kk = 0; kk < k; kk++) s = fma(A[r][kk], B[kk][cc], s);  // DMMA: IEEE double FMAs
    } else {
      for (int kk = 0; kk < k; kk++) s += A[r][kk] * B[kk][cc];
      s = (double)(float)s;  // rounded once to float32 (then to half for half accumulators)
    }
    if (satf) {
      double top = std::is_same<Td, __half>::value ? 65504.0 : std::is_same<Td, float>::value ? (double)FLT_MAX : DBL_MAX;
      s = isnan(s) ? 0.0 : s > top ? top : s < -top ? -top : s;
    }
    out[i] = (typename FD::storage_element_type)s;
  }
  for (int i = 0; i < FD::num_elements; i++) d.x[i] = out[i];  // d may be c
  tensor_release(what, file, line);
}

}  // namespace wmma
}  // namespace nvcuda
