// harness emu: the block- and warp-level part of cooperative groups. Grid and
// multi-grid groups are rejected by the translator (UnsupportedFeature).
#pragma once

namespace cooperative_groups {

class thread_block {
 public:
  void sync() const { __syncthreads(); }
  unsigned thread_rank() const { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
  unsigned size() const { return blockDim.x * blockDim.y * blockDim.z; }
  unsigned num_threads() const { return size(); }
  dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
  dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
  dim3 group_dim() const { return blockDim; }
  dim3 dim_threads() const { return blockDim; }
};
inline thread_block this_thread_block() { return thread_block(); }

template <unsigned N>
class thread_block_tile {
  static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "tile size must be a power of two <= 32");

 public:
  unsigned lane_mask() const {
    unsigned lane = thread_block().thread_rank() % 32u;
    return N == 32 ? 0xffffffffu : ((1u << N) - 1u) << (lane / N * N);
  }
  void sync() const { __syncwarp(lane_mask()); }
  unsigned thread_rank() const { return thread_block().thread_rank() % N; }
  unsigned size() const { return N; }
  unsigned num_threads() const { return N; }
  unsigned meta_group_rank() const { return thread_block().thread_rank() / N; }
  unsigned meta_group_size() const { return (thread_block().size() + N - 1) / N; }
  template <class T> T shfl(T v, int src) const { return __shfl_sync(lane_mask(), v, src, N); }
  template <class T> T shfl_up(T v, unsigned d) const { return __shfl_up_sync(lane_mask(), v, d, N); }
  template <class T> T shfl_down(T v, unsigned d) const { return __shfl_down_sync(lane_mask(), v, d, N); }
  template <class T> T shfl_xor(T v, int m) const { return __shfl_xor_sync(lane_mask(), v, m, N); }
  unsigned ballot(int p) const {
    unsigned lane = thread_block().thread_rank() % 32u;
    return (__ballot_sync(lane_mask(), p) >> (lane / N * N)) & (N == 32 ? 0xffffffffu : (1u << N) - 1u);
  }
  int any(int p) const { return __any_sync(lane_mask(), p); }
  int all(int p) const { return __all_sync(lane_mask(), p); }
};

template <unsigned N, class Parent>
inline thread_block_tile<N> tiled_partition(const Parent&) { return thread_block_tile<N>(); }

template <class Group>
inline void sync(const Group& g) { g.sync(); }

template <class T> struct plus { T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { T operator()(T a, T b) const { return a < b ? a : b; } };
template <class T> struct greater { T operator()(T a, T b) const { return a > b ? a : b; } };
template <class T> struct bit_and { T operator()(T a, T b) const { return a & b; } };
template <class T> struct bit_or { T operator()(T a, T b) const { return a | b; } };
template <class T> struct bit_xor { T operator()(T a, T b) const { return a ^ b; } };

// Butterfly reduction: every lane of the tile gets the result.
template <unsigned N, class T, class Op>
inline T reduce(const thread_block_tile<N>& tile, T v, Op op) {
  for (unsigned off = N / 2; off > 0; off /= 2) v = op(v, tile.shfl_xor(v, (int)off));
  return v;
}
template <unsigned N, class T, class Op>
inline T inclusive_scan(const thread_block_tile<N>& tile, T v, Op op) {
  for (unsigned off = 1; off < N; off *= 2) {
    T up = tile.shfl_up(v, off);
    if (tile.thread_rank() >= off) v = op(v, up);
  }
  return v;
}

}  // namespace cooperative_groups
