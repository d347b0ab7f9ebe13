#include <cuda_runtime.h>

// Mamba-3 scan, forward, float32. All pointers are device memory, row-major and
// contiguous (P = head_dim, N = d_state, always even):
//   x, y  : [batch][seq_len][n_heads][P]    element (b,t,h,p) at ((b*seq_len + t)*n_heads + h)*P + p
//   B, C  : [batch][seq_len][n_heads][N]    element (b,t,h,n) at ((b*seq_len + t)*n_heads + h)*N + n
//   dt,lam: [batch][seq_len][n_heads]       element (b,t,h)   at (b*seq_len + t)*n_heads + h
//   theta : [batch][seq_len][n_heads][N/2]  element (b,t,h,i) at ((b*seq_len + t)*n_heads + h)*(N/2) + i
//   A,skip: [n_heads]
// For every (b, h), with the N x P state H = 0 and S_prev = 0 before t = 0:
//   alpha = exp(dt*A), beta = (1 - lam)*dt*alpha, gamma = lam*dt, S = B_t x_t^T (N x P)
//   H = R(theta_t)(alpha*H + beta*S_prev) + gamma*S;  S_prev = S
//   y_t[p] = sum_n C_t[n]*H[n][p] + skip*x_t[p]
// R(theta_t) turns each row pair (2i, 2i+1) by theta_t[i]:
//   row 2i <- cos*row 2i - sin*row 2i+1,  row 2i+1 <- sin*row 2i + cos*row 2i+1.
// Write every element of y; the inputs are read-only. Launch your kernels here;
// scratch memory may be allocated.
extern "C" void solve(const float* x, const float* B, const float* C, const float* dt, const float* A,
                      const float* lam, const float* theta, const float* skip, float* y, int batch,
                      int seq_len, int n_heads, int head_dim, int d_state) {}
