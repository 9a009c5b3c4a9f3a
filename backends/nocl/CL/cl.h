/* OpenCL for a build without it (-Dopencl=disabled, or no OpenCL found):
 * the types and constants that the operators' OpenCL host code (ops/) and
 * the test plugins name, so they compile unchanged, and the few OpenCL
 * calls they make, each failing with CL_INVALID_OPERATION. None of it runs:
 * such a build has no OpenCL device (backends/no_opencl.c), so no OpenCL
 * kernel is ever chosen. meson puts this folder on the include path only
 * in that build, ahead of the system's headers; the values are OpenCL 1.2's.
 * A name missing here is a compile error of the CPU-only build: add it. */
#ifndef CG_NOCL_CL_H
#define CG_NOCL_CL_H

#include <stddef.h>
#include <stdint.h>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef int64_t cl_long;
typedef uint64_t cl_ulong;
typedef float cl_float;
typedef cl_uint cl_bool;
typedef cl_ulong cl_bitfield;
typedef cl_bitfield cl_device_type;
typedef cl_uint cl_kernel_work_group_info;
typedef cl_uint cl_device_info;
typedef cl_uint cl_mem_info;
typedef cl_uint cl_command_queue_info;
typedef cl_bitfield cl_mem_flags;
typedef union {
    cl_int s[4];
} cl_int4;
typedef union {
    cl_int s[8];
} cl_int8;
typedef union {
    cl_long s[4];
} cl_long4;
typedef union {
    cl_long s[8];
} cl_long8;

typedef struct _cl_platform_id *cl_platform_id;
typedef struct _cl_device_id *cl_device_id;
typedef struct _cl_context *cl_context;
typedef struct _cl_command_queue *cl_command_queue;
typedef struct _cl_mem *cl_mem;
typedef struct _cl_program *cl_program;
typedef struct _cl_kernel *cl_kernel;
typedef struct _cl_event *cl_event;

#define CL_SUCCESS 0
#define CL_OUT_OF_HOST_MEMORY -6
#define CL_INVALID_OPERATION -59
#define CL_MEM_READ_ONLY (1 << 2)
#define CL_MEM_COPY_HOST_PTR (1 << 5)
#define CL_QUEUE_CONTEXT 0x1090
#define CL_DEVICE_MAX_WORK_GROUP_SIZE 0x1004
#define CL_DEVICE_MAX_WORK_ITEM_SIZES 0x1005
#define CL_DEVICE_LOCAL_MEM_SIZE 0x1023
#define CL_QUEUE_DEVICE 0x1091
#define CL_MEM_ASSOCIATED_MEMOBJECT 0x1107
#define CL_MEM_OFFSET 0x1108
#define CL_KERNEL_WORK_GROUP_SIZE 0x11B0
#define CL_KERNEL_LOCAL_MEM_SIZE 0x11B2
#define CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE 0x11B3

static inline cl_int clSetKernelArg(cl_kernel k, cl_uint i, size_t size, const void *value) {
    (void)k, (void)i, (void)size, (void)value;
    return CL_INVALID_OPERATION;
}

static inline cl_int clGetKernelWorkGroupInfo(cl_kernel k, cl_device_id d, cl_kernel_work_group_info what, size_t size,
                                              void *value, size_t *size_ret) {
    (void)k, (void)d, (void)what, (void)size, (void)value, (void)size_ret;
    return CL_INVALID_OPERATION;
}

static inline cl_int clGetDeviceInfo(cl_device_id d, cl_device_info what, size_t size, void *value, size_t *size_ret) {
    (void)d, (void)what, (void)size, (void)value, (void)size_ret;
    return CL_INVALID_OPERATION;
}

static inline cl_int clGetCommandQueueInfo(cl_command_queue q, cl_command_queue_info what, size_t size, void *value,
                                           size_t *size_ret) {
    (void)q, (void)what, (void)size, (void)value, (void)size_ret;
    return CL_INVALID_OPERATION;
}

static inline cl_int clGetMemObjectInfo(cl_mem m, cl_mem_info what, size_t size, void *value, size_t *size_ret) {
    (void)m, (void)what, (void)size, (void)value, (void)size_ret;
    return CL_INVALID_OPERATION;
}

static inline cl_int clEnqueueCopyBuffer(cl_command_queue q, cl_mem src, cl_mem dst, size_t src_off, size_t dst_off,
                                         size_t bytes, cl_uint n_wait, const cl_event *wait, cl_event *ev) {
    (void)q, (void)src, (void)dst, (void)src_off, (void)dst_off, (void)bytes, (void)n_wait, (void)wait, (void)ev;
    return CL_INVALID_OPERATION;
}

static inline cl_mem clCreateBuffer(cl_context c, cl_mem_flags flags, size_t size, void *host, cl_int *err) {
    (void)c, (void)flags, (void)size, (void)host;
    if (err) *err = CL_INVALID_OPERATION;
    return NULL;
}

static inline cl_int clReleaseMemObject(cl_mem m) {
    (void)m;
    return CL_INVALID_OPERATION;
}

static inline cl_int clFinish(cl_command_queue q) {
    (void)q;
    return CL_INVALID_OPERATION;
}

#endif
