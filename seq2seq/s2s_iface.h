/* The interface of a seq2seq model's graphs, resolved from names to input
 * and output positions once per model (built or model.cg), so that no
 * later code looks a name up: the loader plans with it, and the decoders
 * bind and read tensors by position (cg_plan_run_indexed). */
#ifndef CG_SEQ2SEQ_S2S_IFACE_H
#define CG_SEQ2SEQ_S2S_IFACE_H

#include "s2s.h"

/* The encoder: inputs src and src_len; outputs keys, keys_proj (-1: none)
 * and the initial states s0_<l> (-1: that layer starts at 0). */
typedef struct s2s_enc_iface {
    int src, src_len;
    int n_out;
    int keys, kproj;
    int *s0; /* [decoder_layers] */
} s2s_enc_iface;

/* A decoder step graph (decoder or decoder_logp); -1: not in the graph. */
typedef struct s2s_dec_iface {
    int n_in, n_out;
    int y, keys, kproj, len, pos, htilde;
    int parent;                    /* the graph reorders its own state rows */
    int sent;                      /* keys, keys_proj and src_len per sentence */
    int *h, *c;                    /* [decoder_layers] */
    unsigned char *state;          /* [n_in]: a recurrent state input, h<digits>, c<digits> or htilde */
    int logp, top_v, top_i, top_k; /* top_k: k of top_logp / top_id, 0 with logp */
    int a, htilde_new;
    int *h_new, *c_new;       /* [decoder_layers] */
    unsigned char *state_out; /* [n_out]: a state output (h<l>_new, c<l>_new, htilde_new) */
} s2s_dec_iface;

/* The three graphs' interfaces; dec_logp.n_in is 0 without decoder_logp. */
typedef struct s2s_iface {
    s2s_enc_iface enc;
    s2s_dec_iface dec, dec_logp;
} s2s_iface;

/* Resolves and checks the interface the decoders drive for configuration
 * c; a missing name is named with `file`. */
cg_status cg_s2s_iface_resolve(const cg_model *model, const s2s_config *c, const char *file, s2s_iface *out);
void cg_s2s_iface_free(s2s_iface *x);

/* The position of g's input `name`, or -1. */
int cg_s2s_input_pos(const cg_graph *g, const char *name);

/* The position of g's output `name`, or -1. */
int cg_s2s_output_pos(const cg_graph *g, const char *name);

/* A recurrent state input's name: h<digits>, c<digits> or htilde. */
int cg_s2s_is_state_name(const char *name);

/* Converts a parsed, unverified model.cg's decoders written without the
 * inputs `parent` or `sentence` to the builder's interface
 * (s2s_upgrade.c); *changed (may be NULL) says whether it did. */
cg_status cg_s2s_upgrade(cg_model *model, int *changed);

#endif
