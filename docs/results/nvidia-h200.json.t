 vector_add | fwd | ≥ 0.95 × copy ceiling at ≥ 2²⁶ elements | 4 of 4 
 softmax | fwd | ≥ 0.93 × copy ceiling, N ≤ 16384 | 2 of 18 
 softmax | fwd | ≥ 0.85 × copy ceiling, 16384 < N ≤ 65536 | 6 of 6 
 softmax | fwd | ≥ 1.0 × best torch | 24 of 24 
 softmax | fwd | ≥ 2.0 × torch eager, float16, N = 4096 | 1 of 1 
 softmax | bwd | ≥ 0.90 × copy ceiling | 12 of 16 
 softmax | bwd | ≥ 1.0 × best torch | 12 of 16 
 layer_norm | fwd | ≥ 0.90 × copy ceiling | 13 of 27 
 layer_norm | fwd | ≥ 1.0 × best torch | 17 of 27 
 layer_norm | bwd | ≥ 0.85 × copy ceiling | 8 of 27 
 layer_norm | bwd | ≥ 1.0 × best torch | 27 of 27 
 rms_norm | fwd | ≥ 0.90 × copy ceiling | 17 of 27 
 rms_norm | fwd | ≥ 1.0 × best torch | 18 of 27 
 rms_norm | bwd | ≥ 0.85 × copy ceiling | 13 of 27 
 rms_norm | bwd | ≥ 1.0 × best torch | 27 of 27 
 transpose | fwd | ≥ 0.92 × copy ceiling | 6 of 10 
 transpose | fwd | ≥ 1.0 × best torch | 10 of 10 
 matmul | fwd | ≥ 1.0 × torch (cuBLAS), float16 and | 2 of 4 
 | | bfloat16 at 4096³ and 8192³ | 
 matmul | fwd | ≥ 0.9 × torch (cuBLAS), float16 and | 2 of 2 
 | | bfloat16 at 2048³ | 
 matmul | fwd | ≥ 1.0 × torch._scaled_mm, float8_e4m3fn | 0 of 1 
 | | at 8192³ | 
 matmul | fwd | fast accumulation: ≥ 1.0 × | 0 of 1 
 | | torch._scaled_mm with use_fast_accum, | 
 | | float8_e4m3fn at 8192³ | 
 attention | fwd | ≥ 1.0 × the fastest SDPA backend or | 24 of 24 
 | | FlexAttention, N ≥ 4096 | 
 attention | bwd | ≥ 1.0 × the fastest SDPA backend | 37 of 40 
 | | | 
