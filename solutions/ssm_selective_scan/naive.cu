// Naive baseline for ssm_selective_scan, kept unchanged as the yardstick.
// Source: the community write-up of LeetGPU's "SSM Selective Scan" problem page
// (project seed shared/seeds/001_7504666387b05ecf.txt); the code below is
// copied verbatim.
// It runs one thread per batch item, walking every (d, t, n) in sequence.
// (Its Ad[] array is computed and never used; left as found.)

#include <cuda_runtime.h>
#include <math.h>
__global__ void ssm_scan(const float* u, const float* delta, const float* A,
    const float* B, const float* C, const float* skip, float* y, int batch, int L, int D, int N) {
    int b=blockIdx.x; if(b>=batch)return;
    // Simplified: per-batch sequential scan
    for(int d=0;d<D;d++){
        float h[64]={0};
        for(int t=0;t<L;t++){
            float d_t=delta[(b*L+t)*D+d];
            for(int n=0;n<N;n++){
                float Abar=expf(d_t*A[d*N+n]);
                float Bbar=d_t*B[(b*L+t)*N+n];
                h[n]=Abar*h[n]+Bbar*u[(b*L+t)*D+d];
            }
            float yt=0;for(int n=0;n<N;n++)yt+=C[(b*L+t)*N+n]*h[n];
            y[(b*L+t)*D+d]=yt+skip[d]*u[(b*L+t)*D+d];
        }
    }
}
extern "C" void solve(const float* u,const float* delta,const float* A,const float* B,
    const float* C,const float* skip,float* y,int batch,int L,int D,int N) {
    ssm_scan<<<batch,1>>>(u,delta,A,B,C,skip,y,batch,L,D,N); cudaDeviceSynchronize();
}
