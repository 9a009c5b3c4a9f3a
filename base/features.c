/* cg_build_features: the optional dependencies this build was configured
 * with (meson_options.txt; meson defines CG_HAVE_<NAME> as 0 or 1). */
#include "clgraph/clgraph.h"

#if CG_HAVE_OPENCL
#define F_OPENCL " opencl"
#else
#define F_OPENCL ""
#endif
#if CG_HAVE_CLBLAST
#define F_CLBLAST " clblast"
#else
#define F_CLBLAST ""
#endif
#if CG_HAVE_ONNX
#define F_ONNX " onnx"
#else
#define F_ONNX ""
#endif
#if CG_HAVE_PNG
#define F_PNG " png"
#else
#define F_PNG ""
#endif

#if CG_HAVE_SENTENCEPIECE
#define F_SENTENCEPIECE " sentencepiece"
#else
#define F_SENTENCEPIECE ""
#endif

const char *cg_build_features(void) {
    static const char names[] = F_OPENCL F_CLBLAST F_ONNX F_PNG F_SENTENCEPIECE;
    return names[0] ? names + 1 : names; /* without the first space */
}
