/* Put in front of every OpenCL C source of clgraph when it is embedded
 * (tools/py/embed_cl.py --preamble); a #line directive after it keeps build
 * logs pointing at the source's own lines.
 *
 * IDX is the index type: int unless the host builds with -DIDX=long for
 * tensors of 2^31 elements or more; IDX8 its 8-wide vector (int8 or long8,
 * given with it by the host where a kernel takes one).
 *
 * One kernel per program (cl_backend.h): kernel K is built alone with
 * -DCG_ONE_KERNEL=1 -DCG_KERNEL_K=1, and a source wraps each kernel in
 * #if CG_WANT(K) so that it still builds whole without them. */
#ifndef IDX
#define IDX int
#endif
#ifndef IDX8
#define IDX8 int8
#endif
#ifndef CG_ONE_KERNEL
#define CG_ONE_KERNEL 0
#endif
#define CG_WANT(k) (!CG_ONE_KERNEL || CG_KERNEL_##k)
