/* llama2c: Andrej Karpathy's llama2.c checkpoint format (legacy "version 0" header of seven int32,
 * float32 weights in llama2.c's order) and the RoPE row permutation shared with the GGUF loader. */
#ifndef ATTNCODA_LLAMA2C_H
#define ATTNCODA_LLAMA2C_H

/* Meta's original Llama weights (llama2.c, GGUF "llama") rotate interleaved pairs (2i, 2i+1) of
 * each head; model_forward rotates half-split pairs (i, i+hd/2) as Hugging Face does. Reorder the
 * rows of a q or k projection [n_head*head_dim, cols] in place so that half-split RoPE on the
 * result equals interleaved RoPE on the original: new row j*hd/2+i = old row 2i+j (the
 * permutation of HF's convert_llama_weights_to_hf). cols = 1 reorders a bias vector. */
void llama2c_permute_qk(float *w, int n_head, int head_dim, long cols);
#endif
